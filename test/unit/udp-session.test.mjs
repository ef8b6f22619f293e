// The udp rail's reliability logic without sockets: two Sessions joined by a
// simulated link that drops, duplicates, reorders and corrupts datagrams as
// fast-check likes. Every message must arrive exactly once, in order, with the
// right bytes, and the sender's state must drain (window, hotel, retransmit list).
// Sessions run with checksums, or with the per-session MAC (RAILCOMM_UDP_AUTH).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Session, expireToSession, TWO_COPIES_FROM } from '../../dist/rail/udp/session.js';
import { Segment, Frag } from '../../dist/rail/udp/segment.js';
import { Hotel, GuestList } from '../../dist/core/hotel.js';
import { UdpCounters } from '../../dist/rail/udp/counters.js';
import { TrafficCounters } from '../../dist/core/counters.js';
import { datagramSum } from '../../dist/rail/udp/checksum.js';
import { datagramMac } from '../../dist/rail/udp/mac.js';
import { Bad, ACK_BYTES, FRAG_BYTES, T_ACK, checkDatagram, encodeAck, getSum, isMac, markMac, setSum } from '../../dist/rail/udp/wire.js';
import { SEQ_MASK, seqAdd, seqDiff, seqLt } from '../../dist/core/seq.js';

const AM = 1;
/** A session MAC key, for the scenarios that run with one. */
const KEY = Uint8Array.from({ length: 16 }, (_, i) => i * 17 + 3);
const LIMITS = { hdrMax: 64, fragMax: 1 << 20, tinyMax: 200, dataMax: 600, window: 16, rtoMs: 20, rtoFloorMs: 5, highWater: 1 << 24 };

function mulberry(seed) {
  let a = seed >>> 0;
  return () => { a = (a + 0x6d2b79f5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
}

/** One side: a Session with a host that puts datagrams on the simulated link. */
function makeSide(name, clock, link, got) {
  const handlers = [];
  handlers[AM] = {
    recv: (_ep, rx) => {
      const b = rx.placed ?? rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen);
      got.push({ id: rx.view.getUint32(rx.hdrOff, true), bytes: Buffer.from(b) });
    },
  };
  const host = {
    name, hotel: new Hotel(clock.t, 1, 64), retx: new GuestList('retx'), counters: new UdpCounters(), handlers, limits: LIMITS,
    now: () => clock.t,
    segment: (tiny) => new Segment(tiny ? LIMITS.tinyMax : LIMITS.dataMax, tiny),
    frag: () => new Frag(LIMITS.hdrMax),
    release: () => {}, releaseFrag: () => {},
    transmit: (_s, buf, len) => link.push({ to: name === 'a' ? 'b' : 'a', bytes: Buffer.from(buf.subarray(0, len)) }),
    prioIdle: () => true,
    wantPass: () => { host.scheduled = true; }, wantAck: (s, urgent) => { s.ackOwed = true; if (urgent) s.ackUrgent = true; host.scheduled = true; },
    // The rail's backstop timer: armed on request, it advances the hotel once it fires (quietRun below).
    timer: false, armTimer: () => { host.timer = true; },
    scheduled: false,
    grant: () => 1 << 16,
    bad: 0,
  };
  const owner = {
    endpoint: { name }, counters: new TrafficCounters(),
    bye() {}, protocolError(why) { throw new Error(`${name}: protocol error: ${why}`); }, drained() {}, roomAgain() {},
  };
  const s = new Session(host, owner);
  host.session = s;
  host.pass = () => {
    host.hotel.advance(clock.t, expireToSession);
    for (let g = host.retx.shift(); g !== null; g = host.retx.shift()) s.resend(g);
    s.pump();
    if (s.ackOwed) {
      const b = Buffer.alloc(ACK_BYTES); const v = new DataView(b.buffer);
      encodeAck(v, s.token, (s.rx.next - 1) >>> 0, 1 << 16, s.rx.held > 0, s.rx.highest);
      if (s.macKey !== null) { markMac(v); setSum(v, datagramMac(b, ACK_BYTES, s.macKey)); } else setSum(v, datagramSum(v, b, ACK_BYTES));
      host.transmit(s, b, ACK_BYTES); s.ackSent();
    }
  };
  host.deliver = (bytes) => {
    const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    // As the rail: a session with a MAC key takes only datagrams whose MAC verifies.
    const key = s.macKey;
    const bad = checkDatagram(v, bytes.length, key !== null ? -1 : datagramSum(v, bytes, bytes.length), LIMITS.hdrMax, LIMITS.fragMax);
    if (bad !== Bad.OK) { host.bad++; return; }
    if (key !== null && (!isMac(v) || datagramMac(bytes, bytes.length, key) !== getSum(v))) { host.bad++; return; }
    s.receive(bytes, v, bytes.length);
    host.scheduled = true; // the rail runs a pass after each receive burst
  };
  return host;
}

function payload(i, n) {
  const b = Buffer.alloc(n);
  for (let k = 0; k < n; k++) b[k] = (i * 131 + k * 7) & 0xff;
  return b;
}

/** Two sessions a -> b over one simulated link, started at sequence number `start` (with the MAC when `mac`); b's deliveries land in got. */
function connectedPair(start, mac = false) {
  const clock = { t: 1000 };
  const link = [];
  const got = [];
  const a = makeSide('a', clock, link, []);
  const b = makeSide('b', clock, link, got);
  a.session.start(1, start, 7, 1 << 16, mac ? KEY : null);
  b.session.start(2, 7, start, 1 << 16, mac ? KEY : null);
  return { clock, link, got, a, b };
}

/** Run one scenario; returns what b received and both hosts. */
function simulate({ sizes, seed, drop, dup, reorder, corrupt, start, mac }) {
  const { clock, link, got, a, b } = connectedPair(start, mac);
  const rand = mulberry(seed);
  const hdr = Buffer.alloc(8);
  sizes.forEach((n, i) => { hdr.writeUInt32LE(i, 0); assert.ok(a.session.send(AM, 0, hdr, 8, payload(i, n), null)); });
  let steps = 0;
  while (steps++ < 200000) {
    a.pass(); b.pass();
    if (link.length === 0) {
      if (got.length === sizes.length && a.session.idle) break;
      clock.t += 1 + Math.floor(rand() * 10); // nothing in flight: time passes until a timer fires
      continue;
    }
    const k = reorder > 0 && rand() < reorder ? Math.floor(rand() * link.length) : 0;
    const [p] = link.splice(k, 1);
    if (rand() < drop) continue;
    let bytes = p.bytes;
    if (rand() < corrupt) { bytes = Buffer.from(bytes); bytes[Math.floor(rand() * bytes.length)] ^= 1 << Math.floor(rand() * 8); }
    const side = p.to === 'a' ? a : b;
    side.deliver(bytes);
    if (rand() < dup) side.deliver(Buffer.from(p.bytes));
    if (rand() < 0.3) clock.t += 1;
  }
  return { got, a, b, steps };
}

const scenario = fc.record({
  sizes: fc.array(fc.oneof(fc.integer({ min: 0, max: 150 }), fc.integer({ min: 0, max: 3000 })), { minLength: 1, maxLength: 40, size: 'max' }),
  seed: fc.integer(),
  drop: fc.double({ min: 0, max: 0.3, noNaN: true }),
  dup: fc.double({ min: 0, max: 0.2, noNaN: true }),
  reorder: fc.double({ min: 0, max: 0.5, noNaN: true }),
  corrupt: fc.double({ min: 0, max: 0.05, noNaN: true }),
  // Sequence numbers start anywhere, often just before the wrap at 2^30.
  start: fc.oneof(fc.integer({ min: 0, max: SEQ_MASK }), fc.integer({ min: SEQ_MASK - 40, max: SEQ_MASK })),
  mac: fc.boolean(),
});

test('udp session: over a lossy, duplicating, reordering, corrupting link every message arrives once, in order, intact; the sender drains', () => {
  fc.assert(fc.property(scenario, (sc) => {
    const { got, a } = simulate(sc);
    assert.equal(got.length, sc.sizes.length, 'every message arrived, none twice');
    got.forEach((m, i) => {
      assert.equal(m.id, i, 'in order');
      assert.ok(m.bytes.equals(payload(i, sc.sizes[i])), `message ${i} has the right bytes`);
    });
    const s = a.session;
    assert.equal(s.inflight, 0, 'window empty');
    assert.equal(s.flight, 0, 'no bytes in flight');
    assert.equal(s.queuedBytes, 0, 'nothing queued');
    assert.equal(s.retxPending, 0);
    assert.equal(a.hotel.guests, 0, 'hotel empty');
    assert.equal(a.retx.size, 0, 'retransmit list empty');
  }), { numRuns: 150 });
});

test('udp session: a clean link needs no retransmission', () => {
  const { got, a } = simulate({ sizes: [0, 10, 100, 2000, 5000, 1, 599], seed: 1, drop: 0, dup: 0, reorder: 0, corrupt: 0, start: 0xfffffffe });
  assert.equal(got.length, 7);
  assert.equal(a.counters.retransmits, 0);
});

/**
 * Drive both sides as the rail does, event by event: a pass runs only when
 * something asked for one (a receive, wantPass, wantAck), and the hotel is
 * otherwise advanced only by an armed timer (the rail's backstop: re-armed
 * while guests wait). `drop(bytes)` decides which datagrams the link loses.
 * Returns whether `done()` became true within `ms` simulated milliseconds.
 */
function quietRun(clock, link, sides, drop, done, ms) {
  const end = clock.t + ms;
  const byName = { a: sides[0], b: sides[1] };
  while (clock.t < end) {
    for (const h of sides) {
      if (!h.scheduled) continue;
      h.scheduled = false;
      h.pass();
      if (h.hotel.guests > 0) h.timer = true;
    }
    if (link.length > 0) {
      const p = link.shift();
      if (!drop(p.bytes)) byName[p.to].deliver(p.bytes);
      continue;
    }
    if (done()) return true;
    clock.t += 1;
    for (const h of sides) {
      if (!h.timer) continue;
      h.timer = false;
      h.hotel.advance(clock.t, expireToSession);
      if (h.retx.size > 0) h.scheduled = true;
      if (h.hotel.guests > 0) h.timer = true;
    }
  }
  return done();
}

test('udp session: a last message with no follow-up traffic, lost once, is retransmitted by the timer and delivered', () => {
  const isFrag = (bytes) => bytes.length > ACK_BYTES && (bytes[3] & 0x3f) !== T_ACK;
  for (const size of [0, 40, 150, 3000]) { // tiny (priority channel), small, chunked
    const clock = { t: 1000 };
    const link = [];
    const got = [];
    const a = makeSide('a', clock, link, []);
    const b = makeSide('b', clock, link, got);
    a.session.start(1, SEQ_MASK - 15, 7, 1 << 16);
    b.session.start(2, 7, SEQ_MASK - 15, 1 << 16);
    const hdr = Buffer.alloc(8);
    // One exchange, then quiet: every timer has run down, nothing is owed.
    hdr.writeUInt32LE(0, 0);
    assert.ok(a.session.send(AM, 0, hdr, 8, payload(0, 10), null));
    assert.ok(quietRun(clock, link, [a, b], () => false, () => got.length === 1 && a.session.idle && !a.timer && !b.timer && !a.scheduled && !b.scheduled, 1000), 'first message, then quiet');
    clock.t += 5000;
    // The last message, sent from the rank's own code (outside any pass); its first datagram is lost.
    let lost = 0;
    hdr.writeUInt32LE(1, 0);
    assert.ok(a.session.send(AM, 0, hdr, 8, payload(1, size), null));
    const drop = (bytes) => { if (lost === 0 && isFrag(bytes)) { lost++; return true; } return false; };
    assert.ok(quietRun(clock, link, [a, b], drop, () => got.length === 2 && a.session.idle, 2000), `size ${size}: the lost message was delivered (got ${got.length}, hotel guests ${a.hotel.guests}, timer ${a.timer})`);
    assert.equal(lost, 1);
    assert.deepEqual(got.map((m) => m.id), [0, 1]);
    assert.ok(got[1].bytes.equals(payload(1, size)));
    assert.equal(a.hotel.guests, 0, 'hotel empty');
    assert.equal(a.retx.size, 0);
    // One segment: only the timer can repair it. Chunked: the next chunk draws an ACK with a hole, or the timer.
    if (FRAG_BYTES + 8 + size <= LIMITS.dataMax) assert.ok(a.counters.timeouts >= 1, 'recovered through a timeout');
    else assert.ok(a.counters.timeouts + a.counters.fastRetransmits >= 1, 'retransmitted');
  }
});

test('udp session: a segment lost twice goes out in two copies from its second retransmission on, and is delivered once', () => {
  const isData = (bytes) => bytes.length > ACK_BYTES && (bytes[3] & 0x3f) !== T_ACK;
  const { clock, link, got, a, b } = connectedPair(SEQ_MASK - 15);
  const hdr = Buffer.alloc(8);
  hdr.writeUInt32LE(0, 0);
  assert.ok(a.session.send(AM, 0, hdr, 8, payload(0, 500), null));
  // The link loses the first TWO_COPIES_FROM - 1 data datagrams; it counts every one put on it.
  let copies = 0;
  const drop = (bytes) => isData(bytes) && ++copies < TWO_COPIES_FROM;
  assert.ok(quietRun(clock, link, [a, b], drop, () => got.length === 1 && a.session.idle, 5000), 'delivered');
  assert.equal(TWO_COPIES_FROM, 3);
  assert.equal(copies, 4, 'one copy on the first send and the first retransmission, two on the next');
  assert.equal(a.counters.retransmits, 2);
  assert.deepEqual(got.map((m) => m.id), [0], 'the second copy is not delivered again');
});

/**
 * A stream of one-segment messages over a link that keeps order and loses the
 * first copy of the segments at the given offsets from the first sequence
 * number. Returns the received messages and both sides.
 */
function lossyStream(start, count, lostAt) {
  const { clock, link, got, a, b } = connectedPair(start);
  const hdr = Buffer.alloc(8);
  for (let i = 0; i < count; i++) {
    hdr.writeUInt32LE(i, 0);
    assert.ok(a.session.send(AM, 0, hdr, 8, payload(i, 500), null)); // 540-byte datagrams: the data channel
  }
  const pending = new Set(lostAt.map((k) => seqAdd(start, k)));
  const drop = (bytes) => {
    if ((bytes[3] & 0x3f) === T_ACK) return false;
    const seq = bytes.readUInt32LE(12);
    return pending.delete(seq);
  };
  const done = quietRun(clock, link, [a, b], drop, () => got.length === count && a.session.idle, 5000);
  return { done, got, a, b, elapsed: clock.t - 1000 };
}

test('udp session: one loss in a flight, with later segments behind it on its channel, is retransmitted at once (no timer, no waiting), once, and leaves the congestion window alone', () => {
  fc.assert(fc.property(
    fc.oneof(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0xffffffff - 20, max: 0xffffffff })),
    fc.integer({ min: 0, max: LIMITS.window - 2 }),
    (start, k) => {
      const { done, got, a, b, elapsed } = lossyStream(start, 3 * LIMITS.window, [k]);
      assert.ok(done, 'every message delivered');
      assert.equal(elapsed, 0, 'repaired before any timer could fire (the simulated clock never moved)');
      got.forEach((m, i) => assert.equal(m.id, i, 'in order'));
      assert.equal(a.counters.timeouts, 0, 'no timeout: the HOLE ACK proved the loss');
      assert.equal(a.counters.retransmits, 1, 'only the lost segment was sent again');
      assert.equal(b.counters.dupSegs, 0, 'nothing arrived twice');
      assert.equal(a.counters.windowCuts, 0, 'a single random loss is not congestion');
      assert.equal(a.session.cwnd, 1 << 30);
    }), { numRuns: 60 });
});

test('udp session: two losses in one flight halve the congestion window once, and every message still arrives in order', () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 0xffffffff }),
    fc.integer({ min: 0, max: LIMITS.window - 3 }), fc.integer({ min: 1, max: LIMITS.window - 2 }),
    (start, k1, gap) => {
      const k2 = Math.min(LIMITS.window - 2, k1 + gap);
      fc.pre(k2 > k1);
      const { done, got, a } = lossyStream(start, 3 * LIMITS.window, [k1, k2]);
      assert.ok(done, 'every message delivered');
      got.forEach((m, i) => assert.equal(m.id, i, 'in order'));
      assert.equal(a.counters.windowCuts, 1, 'one halving for the episode');
      assert.equal(a.counters.retransmits, 2);
      assert.equal(a.hotel.guests, 0);
    }), { numRuns: 60 });
});

test('udp seq: comparisons survive the wrap at 2^30, and numbers stay below it (small integers in V8)', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: SEQ_MASK }), fc.integer({ min: 1, max: 2 ** 29 - 1 }), (a, n) => {
    const b = seqAdd(a, n);
    assert.ok(b >= 0 && b <= SEQ_MASK);
    assert.ok(seqLt(a, b));
    assert.ok(!seqLt(b, a));
    assert.equal(seqDiff(b, a), n);
    assert.equal(seqDiff(a, b), -n);
  }));
  assert.equal(seqAdd(SEQ_MASK, 1), 0);
  assert.equal(seqAdd(0, -1), SEQ_MASK);
});
