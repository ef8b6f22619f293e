// The udp session's contract, watched from outside at every datagram: the
// send window and the peer's credit (and the congestion window) pace every
// first transmission; the bytes in flight are exactly the posted and not yet
// acknowledged segments' weights; retransmissions take the data channel;
// every datagram carries the current cumulative ACK, hole bit and credit; the
// counters count what happened; every segment and fragment the host lent is
// given back once. Then the edges one at a time: back-pressure, kill,
// impossible ACKs, segments past the window, probes, checksum marks, fragment
// ids at the wrap, the congestion window's cut and regrowth, Karn's rule.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TWO_COPIES_FROM, expireToSession } from '../../dist/rail/udp/session.js';
import { SEG_OVERHEAD } from '../../dist/rail/udp/segment.js';
import { datagramSum } from '../../dist/rail/udp/checksum.js';
import { ACK_BYTES, CHUNK_BYTES, SUM_CRC32C, SUM_HEADER_ONLY, T_CHUNK, T_FRAG, T_PROBE, encodeAck, encodeCommon, encodeFrag, setSum } from '../../dist/rail/udp/wire.js';
import { SEQ_MASK, seqAdd } from '../../dist/core/seq.js';
import { AM, BASE, mulberry, payload, hdrOf, rig, run, settled } from '../helpers/udp-session-rig.mjs';

test('udp session contract: pacing, flight, ACK fields, counters and releases hold over any link (property)', () => {
  const scenario = fc.record({
    sizes: fc.array(fc.oneof(fc.integer({ min: 0, max: 150 }), fc.integer({ min: 0, max: 4000 })), { minLength: 1, maxLength: 30, size: 'max' }),
    zc: fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
    seed: fc.integer(),
    drop: fc.double({ min: 0, max: 0.25, noNaN: true }),
    dup: fc.double({ min: 0, max: 0.15, noNaN: true }),
    reorder: fc.double({ min: 0, max: 0.4, noNaN: true }),
    window: fc.constantFrom(4, 8, 16),
    grant: fc.constantFrom(1400, 3000, 8000, 1 << 16),
    prio: fc.boolean(),
    start: fc.oneof(fc.integer({ min: 0, max: SEQ_MASK }), fc.integer({ min: SEQ_MASK - 20, max: SEQ_MASK })),
  });
  fc.assert(fc.property(scenario, (sc) => {
    const o = { limits: { window: sc.window }, grant: sc.grant, prioIdle: () => sc.prio };
    const r = rig(sc.start, o, o);
    const { a, b } = r;
    const done = [];
    sc.sizes.forEach((n, i) => {
      const z = sc.zc[i] ? { calls: 0, err: undefined, railComplete(e) { this.calls++; this.err = e; } } : null;
      if (z) done.push(z);
      assert.equal(a.session.send(AM, 0, hdrOf(i), 8, payload(i, n), z), true);
    });
    // Traffic the other way too: b's data carries its ACKs, holes and credit.
    const back = sc.sizes.slice(0, Math.ceil(sc.sizes.length / 3));
    back.forEach((n, i) => assert.equal(b.session.send(AM, 0, hdrOf(i), 8, payload(100 + i, n), null), true));
    const rand = mulberry(sc.seed);
    const fault = () => { const x = rand(); return x < sc.drop ? 'drop' : x < sc.drop + sc.dup ? 'dup' : rand() < sc.reorder ? 'reorder' : 'deliver'; };
    assert.ok(run(r, () => b.got.length === sc.sizes.length && a.got.length === back.length && a.session.idle && b.session.idle, 60_000, fault), `delivered ${b.got.length} of ${sc.sizes.length}, ${a.got.length} of ${back.length} back`);
    b.got.forEach((m, i) => { assert.equal(m.id, i); assert.ok(m.bytes.equals(payload(i, sc.sizes[i]))); });
    a.got.forEach((m, i) => { assert.equal(m.id, i); assert.ok(m.bytes.equals(payload(100 + i, back[i]))); });
    settled(b);
    for (const z of done) assert.deepEqual([z.calls, z.err], [1, null], 'a zero-copy send completes once, without error');
    settled(a);
    assert.ok(a.owner.drains >= 1, 'the owner heard that the session drained');
    assert.deepEqual(a.owner.errors, []);
    // With a small credit or window the sender had to wait, and says why.
    const c = a.counters;
    if (sc.grant === 1400 && sc.sizes.filter((n) => n > 0).length > 3) assert.ok(c.stallsCredit > 0 || c.stallsWindow > 0, JSON.stringify(c.snapshot()));
  }), { numRuns: 120 });
});

test('udp session: stalls are counted by the limit that stopped the sender (window, credit)', () => {
  // Window of 4 and a large credit: the window stops it.
  let r = rig(0, { limits: { window: 4 } });
  for (let i = 0; i < 12; i++) r.a.session.send(AM, 0, hdrOf(i), 8, payload(i, 100), null);
  r.a.session.pump();
  assert.equal(r.a.session.inflight, 4);
  assert.ok(r.a.counters.stallsWindow > 0 && r.a.counters.stallsCredit === 0 && r.a.counters.stallsCwnd === 0, JSON.stringify(r.a.counters.snapshot()));
  // A credit of one segment's weight: the credit stops it (the first segment goes out on an empty flight).
  r = rig(0, {}, { grant: 900 });
  for (let i = 0; i < 6; i++) r.a.session.send(AM, 0, hdrOf(i), 8, payload(i, 100), null);
  r.a.session.pump();
  assert.equal(r.a.session.inflight, 1, 'one segment on an empty flight, whatever the credit');
  assert.ok(r.a.counters.stallsCredit > 0 && r.a.counters.stallsWindow === 0 && r.a.counters.stallsCwnd === 0, JSON.stringify(r.a.counters.snapshot()));
  assert.ok(run(r, () => r.b.got.length === 6 && r.a.session.idle, 5000));
  settled(r.a);
});

test('udp session: back-pressure: copy sends past the high-water mark are refused and counted, zero-copy ones never; room again once half drained', () => {
  const r = rig(0, { limits: { highWater: 3000, window: 4 } });
  const s = r.a.session;
  // Not open yet (the handshake goes on): everything queues.
  s.open = false;
  let i = 0;
  while (s.send(AM, 0, hdrOf(i), 8, payload(i, 500), null)) i++;
  assert.ok(s.queuedBytes > 3000 && s.queuedBytes <= 3000 + 540, `refused once past the mark (${s.queuedBytes} queued)`);
  assert.equal(r.a.owner.counters.pending, 1, 'the refusal is counted');
  assert.equal(s.send(AM, 0, hdrOf(i), 8, payload(i, 500), null), false);
  assert.equal(r.a.owner.counters.pending, 2);
  const z = { calls: 0, railComplete(e) { this.calls++; this.err = e; } };
  assert.equal(s.send(AM, 0, hdrOf(i), 8, payload(i, 5000), z), true, 'a zero-copy send is always taken');
  const sent = i + 1;
  s.start(1, 0, 7, 1 << 16); // the handshake ends
  assert.equal(r.a.scheduled, true, 'opening asks for a pass to post the queue');
  assert.equal(r.a.owner.rooms, 0);
  assert.ok(run(r, () => r.b.got.length === sent && s.idle, 5000));
  assert.equal(r.a.owner.rooms, 1, 'roomAgain once');
  assert.deepEqual([z.calls, z.err], [1, null]);
  settled(r.a);
});

test('udp session: kill fails queued zero-copy sends with its error, frees every segment, and sends nothing more', () => {
  const r = rig(0, { limits: { window: 2 } });
  const s = r.a.session;
  const zs = [];
  for (let i = 0; i < 6; i++) {
    const z = { calls: 0, err: undefined, railComplete(e) { this.calls++; this.err = e; } };
    zs.push(z);
    s.send(AM, 0, hdrOf(i), 8, payload(i, i % 2 ? 3000 : 50), z);
    s.send(AM, 0, hdrOf(i), 8, payload(i, 300), null);
  }
  s.pump();
  const err = new Error('gone');
  s.kill(err);
  s.kill(new Error('again')); // idempotent
  assert.equal(s.dead, true);
  assert.equal(s.open, false);
  for (const z of zs) assert.equal(z.calls, 1, 'each completion once');
  assert.ok(zs.some((z) => z.err === err), 'a queued zero-copy send fails with the kill\'s error');
  for (const z of zs) assert.ok(z.err === null || z.err === err);
  for (const [, n] of r.a.lent) assert.equal(n, 1, 'every segment released once');
  for (const [, n] of r.a.frags) assert.equal(n, 1, 'every fragment released once');
  assert.deepEqual([s.flight, s.retxPending, s.queuedBytes, r.a.hotel.guests, r.a.retx.size], [0, 0, 0, 0, 0]);
  const wire = r.link.length;
  s.pump();
  r.a.hotel.advance(r.clock.t + 10_000, expireToSession);
  assert.equal(r.link.length, wire, 'nothing sent after the kill');
});

test('udp session: an ACK of something never sent is counted and changes nothing; a duplicate ACK with segments in flight is counted', () => {
  const r = rig(100);
  const s = r.a.session;
  for (let i = 0; i < 3; i++) s.send(AM, 0, hdrOf(i), 8, payload(i, 100), null);
  const state = () => [s.txBase, s.txNext, s.flight, s.inflight];
  const was = state();
  s.onAck(seqAdd(100, 3), 5000, false, true); // acknowledges 4 segments, 3 sent
  assert.equal(r.a.counters.dropProtocol, 1);
  assert.deepEqual(state(), was);
  s.onAck(seqAdd(100, -1), 5000, false, true); // acknowledges nothing new
  assert.equal(r.a.counters.dupAcks, 1);
  s.onAck(seqAdd(100, -1), 5000, false, false); // the same on a data segment: not a duplicate ACK
  assert.equal(r.a.counters.dupAcks, 1);
  s.onAck(seqAdd(100, 2), 5000, false, true);
  assert.equal(s.inflight, 0);
  assert.equal(r.a.owner.drains, 1, 'drained once everything is acknowledged and nothing queued');
  s.onAck(seqAdd(100, 2), 5000, false, true);
  assert.equal(r.a.counters.dupAcks, 1, 'nothing in flight: not counted');
  assert.equal(s.credit, 5000, 'every ACK carries the peer\'s credit');
});

test('udp session: a segment past the receive window is dropped and counted; a probe is answered at once', () => {
  const r = rig(0);
  const s = r.b.session; // receives from a; rxNext 0
  const seg = (seq) => {
    const buf = Buffer.alloc(48); const v = new DataView(buf.buffer);
    encodeCommon(v, T_FRAG, 2, seq); encodeFrag(v, AM, 0, 8, 8); setSum(v, datagramSum(v, buf, 48));
    return { buf, v };
  };
  for (const [seq, want] of [[BASE.window, 'window'], [BASE.window - 1, 'held'], [SEQ_MASK, 'old']]) {
    const { buf, v } = seg(seq);
    const c = { ...r.b.counters.snapshot() };
    s.receive(buf, v, 48);
    const d = r.b.counters.snapshot();
    assert.deepEqual([d.dropWindow - c.dropWindow, d.outOfOrder - c.outOfOrder, d.dupSegs - c.dupSegs], want === 'window' ? [1, 0, 0] : want === 'held' ? [0, 1, 0] : [0, 0, 1], `seq ${seq}`);
  }
  assert.equal(s.rx.held, 48);
  assert.equal(s.rx.highest, BASE.window - 1);
  s.ackOwed = false; s.ackUrgent = false;
  const p = Buffer.alloc(ACK_BYTES); const pv = new DataView(p.buffer);
  encodeAck(pv, 2, SEQ_MASK, 5000, false, 0, T_PROBE);
  s.receive(p, pv, ACK_BYTES);
  assert.equal(r.b.counters.probesAnswered, 1);
  assert.deepEqual([s.ackOwed, s.ackUrgent], [true, true], 'an ACK goes back at once');
  s.kill(new Error('gone'));
  s.receive(p, pv, ACK_BYTES);
  assert.equal(r.b.counters.probesAnswered, 1, 'a dead session answers nothing');
});

test('udp session: checksum marks: header-only when asked, CRC32C for datagrams from 512 bytes when the host has it', () => {
  for (const [limits, want] of [[{}, () => 0], [{ headerSumOnly: true }, () => SUM_HEADER_ONLY], [{ crc32c: true }, (len) => (len >= 512 ? SUM_CRC32C : 0)]]) {
    const r = rig(0, { limits: { dataMax: 1400, ...limits } }, { limits: { dataMax: 1400 } });
    [0, 471, 472, 473, 900].forEach((n, i) => r.a.session.send(AM, 0, hdrOf(i), 8, payload(i, n), null));
    assert.ok(run(r, () => r.b.got.length === 5 && r.a.session.idle, 5000));
    for (const t of r.a.tx.log) assert.equal(t.byte3 & (SUM_HEADER_ONLY | SUM_CRC32C), want(t.len), `${JSON.stringify(limits)}: ${t.len} bytes`);
    assert.ok(r.a.tx.log.some((t) => t.len === 512), 'one datagram of exactly 512 bytes');
  }
});

test('udp session: tiny fragments go out on the priority channel when it is idle, others and every retransmission on the data channel', () => {
  for (const idle of [true, false]) {
    const r = rig(0, { prioIdle: () => idle });
    [10, 150, 160, 500, 3000].forEach((n, i) => r.a.session.send(AM, 0, hdrOf(i), 8, payload(i, n), null));
    let dropped = 0;
    assert.ok(run(r, () => r.b.got.length === 5 && r.a.session.idle, 5000, (l) => (l[0].to === 'b' && dropped++ < 2 ? 'drop' : 'deliver')));
    const firsts = r.a.tx.log.filter((t) => t.first);
    for (const t of firsts) assert.equal(t.prio, idle && t.len <= BASE.tinyMax, `first send of ${t.len} bytes`);
    assert.ok(firsts.some((t) => t.len === BASE.tinyMax), 'one of exactly tinyMax');
  }
});

test('udp session: fragment ids run to 2^30 - 1 and wrap to 1, never 0', () => {
  const r = rig(0);
  r.a.session.nextFragId = SEQ_MASK - 1;
  for (let i = 0; i < 3; i++) r.a.session.send(AM, 0, hdrOf(i), 8, payload(i, 1000), null);
  assert.ok(run(r, () => r.b.got.length === 3 && r.a.session.idle, 5000));
  const ids = [...new Set(r.a.tx.log.filter((t) => t.type === T_CHUNK).map((t) => t.fragId))];
  assert.deepEqual(ids, [SEQ_MASK - 1, SEQ_MASK, 1]);
  r.b.got.forEach((m, i) => assert.ok(m.bytes.equals(payload(i, 1000))));
});

test('udp session: busySince marks when an idle session began to send, not later sends', () => {
  const r = rig(0);
  const s = r.a.session;
  r.clock.t = 5000;
  s.send(AM, 0, hdrOf(0), 8, payload(0, 10), null);
  assert.equal(s.busySince, 5000);
  r.clock.t = 5003;
  s.send(AM, 0, hdrOf(1), 8, payload(1, 10), null);
  assert.equal(s.busySince, 5000, 'still busy: unchanged');
  assert.ok(run(r, () => s.idle, 1000));
  r.clock.t += 100;
  const t = r.clock.t;
  s.send(AM, 0, hdrOf(2), 8, payload(2, 10), null);
  assert.equal(s.busySince, t);
});

test('udp session: a cut sets the window to half the flight (never under four segments), acknowledgements regrow it, and past four credits it is off again', () => {
  const r = rig(0, { limits: { window: 64, dataMax: 600 } }, { grant: 12000 });
  const s = r.a.session;
  const seg = 600 + SEG_OVERHEAD;
  for (let i = 0; i < 40; i++) s.send(AM, 0, hdrOf(i), 8, payload(i, 560), null);
  s.pump();
  const flight = s.flight;
  // Two losses in one flight: the peer reports the hole twice, each proved by a later segment on the same channel.
  const lostTwice = () => {
    s.onAck(seqAdd(s.txBase, -1), 12000, true, true, seqAdd(s.txBase, 5));
  };
  lostTwice();
  assert.equal(r.a.counters.windowCuts, 0, 'one loss: repaired, no cut');
  s.onAck(s.txBase, 12000, true, true, seqAdd(s.txBase, 6)); // the first repaired, the next one lost too
  assert.equal(r.a.counters.windowCuts, 1);
  assert.equal(s.cwnd, Math.max(4 * seg, Math.min(flight - seg, 12000) / 2));
  const cut = s.cwnd;
  assert.ok(run(r, () => r.b.got.length === 40 && s.idle, 10_000));
  assert.ok(s.cwnd > cut, 'regrown by the acknowledgements');
  // Much more clean traffic: once the window passes four credits it is switched off (1 << 30).
  for (let k = 0; k < 60 && s.cwnd < 1 << 30; k++) {
    for (let i = 0; i < 40; i++) s.send(AM, 0, hdrOf(40 + i), 8, payload(i, 560), null);
    assert.ok(run(r, () => s.idle, 10_000));
  }
  assert.equal(s.cwnd, 1 << 30);
  assert.ok(s.cwnd > 4 * s.credit);
});

test('udp session: a round trip is sampled only from segments sent once (Karn): a timeout does not teach the estimator its own length', () => {
  const r = rig(0);
  const s = r.a.session;
  // Clean exchanges first: every datagram takes 2 ms.
  const slow = (l) => { r.clock.t += 1; return 'deliver'; };
  for (let i = 0; i < 5; i++) { s.send(AM, 0, hdrOf(i), 8, payload(i, 100), null); assert.ok(run(r, () => s.idle && r.b.got.length === i + 1, 1000, slow)); }
  const srtt = s.rtt.srtt;
  assert.ok(srtt > 0 && srtt <= 4, `clean round trips ${srtt} ms`);
  // A segment lost once: its ACK comes a timeout later; the estimate must not take that in.
  let lost = false;
  s.send(AM, 0, hdrOf(5), 8, payload(5, 100), null);
  assert.ok(run(r, () => s.idle && r.b.got.length === 6, 2000, (l) => (!lost && l[0].to === 'b' ? ((lost = true), 'drop') : slow(l))));
  assert.ok(r.a.counters.timeouts >= 1);
  assert.ok(s.rtt.srtt <= srtt * 1.2 + 1, `srtt ${s.rtt.srtt} after a retransmission (was ${srtt})`);
});

test('udp session: TWO_COPIES_FROM is the third send', () => {
  assert.equal(TWO_COPIES_FROM, 3);
  assert.equal(CHUNK_BYTES, 40);
});
