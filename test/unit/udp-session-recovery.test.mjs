// The udp session's loss recovery and its edges, each scenario played on the
// watched link of test/helpers/udp-session-rig.mjs: a timeout resends only the
// oldest segment and the ACK that answers it resends the next overdue one at
// once; a hole the peer reports with no proof waits about two round trips,
// then goes again without backing off; Karn's rule exactly; congestion
// episodes and the window's growth in numbers; retransmissions before new
// data; copy sends own their bytes; the limits at their exact edges.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { expireToSession } from '../../dist/rail/udp/session.js';
import { SEG_OVERHEAD } from '../../dist/rail/udp/segment.js';
import { CHUNK_BYTES, FRAG_BYTES, T_ACK, T_CHUNK, T_FRAG, getType, getSeq } from '../../dist/rail/udp/wire.js';
import { seqAdd } from '../../dist/core/seq.js';
import { AM, BASE, payload, hdrOf, rig, run, settled } from '../helpers/udp-session-rig.mjs';

const typeOf = (p) => getType(new DataView(p.bytes.buffer, p.bytes.byteOffset, p.bytes.length));
const seqOf = (p) => getSeq(new DataView(p.bytes.buffer, p.bytes.byteOffset, p.bytes.length));
const isDataTo = (p, to) => p.to === to && (typeOf(p) === T_FRAG || typeOf(p) === T_CHUNK);
/** A fault function that drops the first transmission of the data segments in `seqs` (to b), once each. */
const dropOnce = (seqs) => {
  const left = new Set(seqs);
  return (link) => (isDataTo(link[0], 'b') && left.delete(seqOf(link[0])) ? 'drop' : 'deliver');
};

test('a timeout resends only the oldest segment; the ACK that answers it resends the next overdue one at once', () => {
  const r = rig(0);
  const s = r.a.session;
  for (let i = 0; i < 3; i++) s.send(AM, 0, hdrOf(i), 8, payload(i, 300), null);
  // All three lost the first time.
  assert.ok(run(r, () => r.b.got.length === 3 && s.idle, 5000, dropOnce([0, 1, 2])));
  const c = r.a.counters;
  assert.equal(c.timeouts, 1, 'one timeout: the oldest');
  assert.equal(c.fastRetransmits, 2, 'the others go as soon as the ACK of the one before shows they are overdue');
  assert.equal(c.retransmits, 3);
  settled(r.a);
});

test('a hole reported without proof (the copy may still be in the data socket) waits about two round trips, then goes again without backing off', () => {
  const r = rig(0);
  const s = r.a.session;
  // A round trip first, so that srtt is known: every datagram takes 1 ms.
  const slow = () => { r.clock.t += 1; return 'deliver'; };
  s.send(AM, 0, hdrOf(0), 8, payload(0, 300), null);
  assert.ok(run(r, () => s.idle && r.b.got.length === 1, 1000, slow));
  const srtt = s.rtt.srtt, rto = s.rtt.rto;
  // A data-channel segment is lost; a tiny one sent after it on the priority channel arrives: the
  // peer reports the hole, but a priority segment overtaking a data one proves nothing.
  s.send(AM, 0, hdrOf(1), 8, payload(1, 300), null);
  s.send(AM, 0, hdrOf(2), 8, payload(2, 10), null);
  const sentAt = r.clock.t;
  let resentAt = -1;
  const fault = (link) => {
    const p = link[0];
    if (isDataTo(p, 'b') && seqOf(p) === 1) {
      if (resentAt < 0 && r.a.tx.log.filter((t) => t.seq === 1).length === 1) return 'drop';
      if (resentAt < 0) resentAt = r.clock.t;
    }
    return 'deliver';
  };
  assert.ok(run(r, () => s.idle && r.b.got.length === 3, 2000, fault));
  const wait = Math.max(1, Math.min(rto / 2, srtt * 2));
  assert.equal(r.a.counters.timeouts, 0, 'not a timeout');
  assert.equal(r.a.counters.fastRetransmits, 1);
  assert.equal(s.rtt.backoffs, 0, 'no back-off');
  assert.ok(resentAt - sentAt >= wait && resentAt - sentAt <= wait + 1, `resent ${resentAt - sentAt} ms after the first copy; the wait is ${wait} ms (rto ${rto})`);
});

test('a hole proved by a later segment on the same channel is resent at once, with no wait', () => {
  const r = rig(0);
  const s = r.a.session;
  for (let i = 0; i < 3; i++) s.send(AM, 0, hdrOf(i), 8, payload(i, 300), null);
  const t0 = r.clock.t;
  assert.ok(run(r, () => s.idle && r.b.got.length === 3, 1000, dropOnce([0])));
  assert.equal(r.clock.t, t0, 'repaired before the clock moved');
  assert.deepEqual([r.a.counters.fastRetransmits, r.a.counters.timeouts], [1, 0]);
});

test('Karn: an ACK that may answer either copy of a retransmitted segment teaches the estimator nothing', () => {
  const r = rig(0);
  const s = r.a.session;
  const slow = () => { r.clock.t += 1; return 'deliver'; };
  for (let i = 0; i < 3; i++) { s.send(AM, 0, hdrOf(i), 8, payload(i, 100), null); assert.ok(run(r, () => s.idle && r.b.got.length === i + 1, 1000, slow)); }
  const srtt = s.rtt.srtt, rttvar = s.rtt.rttvar;
  // The next segment's first copy is held back past the timeout and delivered right after the
  // retransmission: its ACK comes at once after the resend, a round trip far shorter than any real one.
  s.send(AM, 0, hdrOf(3), 8, payload(3, 100), null);
  const held = r.link.splice(r.link.findIndex((p) => isDataTo(p, 'b')), 1)[0];
  r.clock.t += s.rtt.rto + 1;
  r.a.hotel.advance(r.clock.t, expireToSession);
  assert.equal(r.a.counters.timeouts, 1);
  r.a.pass(); // the resend
  r.link.unshift(held);
  assert.ok(run(r, () => s.idle && r.b.got.length === 4, 1000));
  assert.deepEqual([s.rtt.srtt, s.rtt.rttvar], [srtt, rttvar], 'no sample from a retransmitted segment');
  assert.equal(r.b.counters.dupSegs, 1, 'the resend arrived as a duplicate');
});

test('congestion: several losses in one flight cut the window once, a second flight\'s losses once more; after a cut it grows by a segment per window and the sender stalls on it', () => {
  const credit = 16 * (600 + SEG_OVERHEAD);
  const r = rig(0, { limits: { window: 64 } }, { grant: credit });
  const s = r.a.session;
  const seg = 600 + SEG_OVERHEAD;
  const flight = (base, n) => { for (let i = 0; i < n; i++) s.send(AM, 0, hdrOf(base + i), 8, payload(base + i, 560), null); };
  flight(0, 12);
  assert.ok(run(r, () => s.idle && r.b.got.length === 12, 5000, dropOnce([2, 5, 8])));
  assert.equal(r.a.counters.windowCuts, 1, 'one cut for several losses in one flight');
  const cut = s.cwnd;
  assert.ok(cut >= 4 * seg && cut < credit, `cut to ${cut}`);
  // Congestion avoidance: each acknowledged segment adds seg * seg / cwnd.
  const before = s.cwnd;
  flight(12, 1);
  assert.ok(run(r, () => s.idle && r.b.got.length === 13, 1000));
  assert.ok(Math.abs(s.cwnd - (before + Math.max(1, (seg * seg) / before))) < 1e-6, `grew to ${s.cwnd} from ${before}`);
  // With the window below the credit, a long queue stalls on the window.
  flight(13, 30);
  s.pump();
  assert.ok(r.a.counters.stallsCwnd > 0, JSON.stringify(r.a.counters.snapshot()));
  assert.ok(run(r, () => s.idle && r.b.got.length === 43, 5000));
  // A second flight with two losses: a second episode, a second cut.
  const firstLost = seqAdd(s.txNext, 2), secondLost = seqAdd(s.txNext, 6);
  flight(43, 12);
  assert.ok(run(r, () => s.idle && r.b.got.length === 55, 5000, dropOnce([firstLost, secondLost])));
  assert.equal(r.a.counters.windowCuts, 2);
  r.b.got.forEach((m, i) => assert.equal(m.id, i));
  settled(r.a);
});

test('retransmissions go out before new data', () => {
  const r = rig(0);
  const s = r.a.session;
  s.send(AM, 0, hdrOf(0), 8, payload(0, 300), null);
  r.link.length = 0; // lost
  r.clock.t += 1000;
  r.a.hotel.advance(r.clock.t, expireToSession);
  assert.equal(r.a.retx.size, 1, 'the timeout moved it to the retransmit list');
  s.send(AM, 0, hdrOf(1), 8, payload(1, 300), null);
  assert.equal(r.link.length, 0, 'the new message waits while a retransmission is pending');
  r.a.pass();
  assert.deepEqual(r.link.map(seqOf), [0, 1], 'the retransmission first, then the new segment');
  assert.ok(run(r, () => s.idle && r.b.got.length === 2, 1000));
});

test('a copy send owns its bytes at once; the caller may reuse its buffer (fragment and chunks)', () => {
  const r = rig(0, { limits: { window: 2 } });
  const s = r.a.session;
  const bufs = [payload(0, 100), payload(1, 5000), payload(2, 5000)];
  bufs.forEach((b, i) => s.send(AM, 0, hdrOf(i), 8, b, null));
  for (const b of bufs) b.fill(0xee);
  assert.ok(run(r, () => s.idle && r.b.got.length === 3, 2000));
  r.b.got.forEach((m, i) => assert.ok(m.bytes.equals(payload(i, i === 0 ? 100 : 5000)), `message ${i}`));
});

test('limits at their exact edges: the high-water mark, a fragment of exactly the data MTU, a credit of exactly three segments', () => {
  {
    const r = rig(0, { limits: { highWater: 3 * 340 } });
    const s = r.a.session;
    s.open = false;
    for (let i = 0; i < 3; i++) assert.equal(s.send(AM, 0, hdrOf(i), 8, payload(i, 300), null), true);
    assert.equal(s.queuedBytes, 3 * 340);
    assert.equal(s.send(AM, 0, hdrOf(3), 8, payload(3, 300), null), true, 'at the mark, not past it: taken');
    assert.equal(s.send(AM, 0, hdrOf(4), 8, payload(4, 300), null), false, 'past it: refused');
  }
  {
    const r = rig(0);
    r.a.session.send(AM, 0, hdrOf(0), 8, payload(0, BASE.dataMax - FRAG_BYTES - 8), null);
    r.a.session.send(AM, 0, hdrOf(1), 8, payload(1, BASE.dataMax - FRAG_BYTES - 7), null);
    assert.ok(run(r, () => r.a.session.idle && r.b.got.length === 2, 1000));
    const firsts = r.a.tx.log.filter((t) => t.first);
    const rest = (BASE.dataMax - FRAG_BYTES - 7) - (BASE.dataMax - CHUNK_BYTES - 8);
    assert.deepEqual(firsts.map((t) => [t.type, t.len]), [[T_FRAG, BASE.dataMax], [T_CHUNK, BASE.dataMax], [T_CHUNK, CHUNK_BYTES + rest]], 'exactly the MTU: one fragment; one byte more: chunks');
  }
  {
    const w = FRAG_BYTES + 8 + 100 + SEG_OVERHEAD;
    const r = rig(0, {}, { grant: 3 * w });
    for (let i = 0; i < 5; i++) r.a.session.send(AM, 0, hdrOf(i), 8, payload(i, 100), null);
    r.a.session.pump();
    assert.equal(r.a.session.inflight, 3, 'three segments fill the credit exactly');
    assert.equal(r.a.session.flight, 3 * w);
  }
});

// A queue that drains ACK by ACK stalls at every pass: room must still come back at half the mark.
test('back-pressure: roomAgain comes when the queue falls to half the mark, not before', () => {
  const r = rig(0, { limits: { highWater: 4000, window: 2 } });
  const s = r.a.session;
  let i = 0;
  while (s.send(AM, 0, hdrOf(i), 8, payload(i, 300), null)) i++;
  const sent = i;
  // Let the window drain the queue one ACK at a time and watch when roomAgain fires.
  let queuedAtRoom = -1;
  r.a.owner.roomAgain = () => { r.a.owner.rooms++; if (queuedAtRoom < 0) queuedAtRoom = s.queuedBytes; };
  assert.ok(run(r, () => s.idle && r.b.got.length === sent, 5000));
  assert.equal(r.a.owner.rooms, 1);
  assert.ok(queuedAtRoom <= 2000 && queuedAtRoom > 2000 - 2 * 340, `room again with ${queuedAtRoom} bytes queued (mark 4000)`);
});

test('queued tiny fragments take the priority channel when it is idle, as direct ones do', () => {
  const r = rig(0, { limits: { window: 1 } });
  for (let i = 0; i < 4; i++) r.a.session.send(AM, 0, hdrOf(i), 8, payload(i, 20), null);
  assert.ok(run(r, () => r.a.session.idle && r.b.got.length === 4, 1000));
  const firsts = r.a.tx.log.filter((t) => t.first);
  // The first went at once; the three queued behind the window of one were packed into one tiny datagram.
  assert.equal(firsts.length, 2);
  assert.equal(r.a.session.host.counters.bundled, 2);
  assert.ok(firsts.every((t) => t.prio), 'every first send on the priority channel');
});

test('kill with a segment waiting on the retransmit list takes it off the list too', () => {
  const r = rig(0);
  const s = r.a.session;
  s.send(AM, 0, hdrOf(0), 8, payload(0, 300), null);
  s.send(AM, 0, hdrOf(1), 8, payload(1, 300), null);
  r.link.length = 0;
  r.clock.t += 1000;
  r.a.hotel.advance(r.clock.t, expireToSession);
  assert.equal(r.a.retx.size, 1);
  s.kill(new Error('gone'));
  assert.equal(r.a.retx.size, 0);
  assert.equal(r.a.hotel.guests, 0);
  for (const [, n] of r.a.lent) assert.equal(n, 1);
});

test('a probe is an ACK, never data: it moves no receive state', () => {
  const r = rig(0);
  const s = r.b.session;
  r.a.session.send(AM, 0, hdrOf(0), 8, payload(0, 10), null);
  assert.ok(run(r, () => r.b.got.length === 1 && r.a.session.idle, 1000));
  const before = [s.rx.next, r.b.counters.segsRecv, r.b.got.length];
  r.a.sendAck(7); // T_PROBE
  const p = r.link.pop();
  r.b.deliver(p.bytes);
  assert.deepEqual([s.rx.next, r.b.counters.segsRecv, r.b.got.length], before);
  assert.equal(r.b.counters.probesAnswered, 1);
  assert.notEqual(typeOf(p), T_ACK);
});
