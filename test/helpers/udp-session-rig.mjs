// A simulated link between two udp Sessions whose hosts watch the session
// contract at every datagram (test/unit/udp-session-contract.test.mjs and
// udp-session-recovery.test.mjs): pacing, the flight's weight, ACK fields,
// receive-side counters, the hold buffer, releases. Violations are collected
// and run() fails on the first ones.

import assert from 'node:assert/strict';
import { Session, expireToSession, TWO_COPIES_FROM } from '../../dist/rail/udp/session.js';
import { Segment, Frag, SEG_OVERHEAD } from '../../dist/rail/udp/segment.js';
import { Hotel, GuestList } from '../../dist/core/hotel.js';
import { UdpCounters } from '../../dist/rail/udp/counters.js';
import { TrafficCounters } from '../../dist/core/counters.js';
import { datagramSum } from '../../dist/rail/udp/checksum.js';
import {
  ACK_BYTES, Bad, CHUNK_BYTES, SUM_CRC32C, SUM_HEADER_ONLY, T_ACK, T_CHUNK, T_FRAG, T_PROBE,
  checkDatagram, encodeAck, encodeCommon, encodeFrag, getAck, getCredit, getFragId, getHole, getSeq, getType, setSum,
} from '../../dist/rail/udp/wire.js';
import { SEQ_MASK, seqAdd, seqDiff } from '../../dist/core/seq.js';

export const AM = 1;
export const BASE = { hdrMax: 64, fragMax: 1 << 20, tinyMax: 200, dataMax: 600, window: 16, rtoMs: 20, rtoFloorMs: 5, highWater: 1 << 24 };
export const isData = (t) => t === T_FRAG || t === T_CHUNK;

export function mulberry(seed) {
  let a = seed >>> 0;
  return () => { a = (a + 0x6d2b79f5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
}

export const payload = (i, n) => { const b = Buffer.alloc(n); for (let k = 0; k < n; k++) b[k] = (i * 131 + k * 7) & 0xff; return b; };
export const hdrOf = (i) => { const h = Buffer.alloc(8); h.writeUInt32LE(i, 0); return h; };

/** One side, its host instrumented: what it lent and got back, what it put on the wire, and the checks at each transmit. */
export function side(name, clock, link, opts, violations) {
  const limits = { ...BASE, ...opts.limits };
  const got = [];
  const handlers = [];
  handlers[AM] = { recv: (_ep, rx) => got.push({ id: rx.view.getUint32(rx.hdrOff, true), bytes: Buffer.from(rx.placed ?? rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen)) }) };
  const lent = new Map(); // segment -> times released
  const frags = new Map();
  const posted = new Map(); // seq -> weight, for the flight model
  const tx = { data: 0, first: 0, copies: 0, log: [] };
  let last = null;
  const host = {
    name, hotel: new Hotel(clock.t, 1, 64), retx: new GuestList('retx'), counters: new UdpCounters(), handlers, limits,
    now: () => clock.t,
    segment: (tiny) => { const s = new Segment(tiny ? limits.tinyMax : limits.dataMax, tiny); lent.set(s, 0); return s; },
    frag: () => { const f = new Frag(limits.hdrMax); frags.set(f, 0); return f; },
    release: (s) => { if (!lent.has(s)) violations.push(`${name}: released a segment it never lent`); lent.set(s, (lent.get(s) ?? 0) + 1); },
    releaseFrag: (f) => frags.set(f, (frags.get(f) ?? 0) + 1),
    transmit: (s, buf, len, prio) => {
      const bytes = Buffer.from(buf.subarray(0, len));
      const v = new DataView(bytes.buffer, bytes.byteOffset, len);
      const type = getType(v);
      if (isData(type)) {
        tx.data++;
        const seq = getSeq(v);
        // The second copy of a segment's third send goes out in the same transmit(), in the same step.
        const copy = last !== null && last.step === host.step && last.bytes.equals(bytes);
        last = { bytes, step: host.step };
        const first = !copy && !posted.has(seq) && seqDiff(seq, s.txBase) >= 0;
        if (copy) tx.copies++;
        else if (first) {
          // A first transmission: the window and the pacing rule hold.
          tx.first++;
          const w = len + SEG_OVERHEAD;
          posted.set(seq, w);
          if (s.inflight > limits.window) violations.push(`${name}: ${s.inflight} segments in flight, window ${limits.window}`);
          const before = s.flight - w;
          if (before !== 0 && s.flight > Math.min(s.credit, s.cwnd)) violations.push(`${name}: posted ${w} onto ${before} in flight past credit ${s.credit} / cwnd ${s.cwnd}`);
          if (s.busySince > clock.t) violations.push(`${name}: busy since the future`);
        } else if (prio) violations.push(`${name}: a retransmission of ${seq} on the priority channel`);
        tx.log.push({ seq, type, len, prio, first, byte3: bytes[3], fragId: type === T_CHUNK ? getFragId(v) : 0 });
        // The ACK, hole bit and credit it carries are the session's at this moment.
        if (getAck(v) !== seqAdd(s.rx.next, -1) || getHole(v) !== s.rx.held > 0 || getCredit(v) !== host.grant(s)) violations.push(`${name}: stale ACK fields on ${seq}`);
      }
      link.push({ to: name === 'a' ? 'b' : 'a', bytes, prio });
    },
    prioIdle: () => opts.prioIdle?.() ?? true,
    wantPass: () => { host.scheduled = true; },
    wantAck: (s, urgent) => { s.ackOwed = true; if (urgent) s.ackUrgent = true; host.scheduled = true; host.lastUrgent = urgent; },
    timer: false, armTimer: () => { host.timer = true; }, scheduled: false, step: 0,
    grant: () => opts.grant ?? 1 << 16,
    bad: 0,
  };
  const owner = {
    endpoint: { name }, counters: new TrafficCounters(), drains: 0, rooms: 0, errors: [],
    bye() {}, protocolError(why) { owner.errors.push(why); }, drained() { owner.drains++; }, roomAgain() { owner.rooms++; },
  };
  if (opts.cork) {
    // The rail's microtask, run by hand: endRun() is the end of the synchronous run that corked.
    host.corked = [];
    host.cork = (sess) => host.corked.push(sess);
    host.endRun = () => { const l = host.corked; host.corked = []; for (const x of l) x.uncork(); };
  }
  const s = new Session(host, owner);
  Object.assign(host, { session: s, owner, got, lent, frags, posted, tx });
  host.sendAck = (type = T_ACK) => {
    const b = Buffer.alloc(ACK_BYTES); const v = new DataView(b.buffer);
    encodeAck(v, s.token, seqAdd(s.rx.next, -1), host.grant(s), s.rx.held > 0, s.rx.highest, type);
    setSum(v, datagramSum(v, b, ACK_BYTES));
    link.push({ to: name === 'a' ? 'b' : 'a', bytes: b, prio: true });
    s.ackSent();
  };
  host.pass = () => {
    host.hotel.advance(clock.t, expireToSession);
    for (let g = host.retx.shift(); g !== null; g = host.retx.shift()) s.resend(g);
    s.pump();
    if (s.ackOwed) host.sendAck();
  };
  /** A datagram arrives: the receive-side counters move as a model of the receive window says. */
  host.deliver = (bytes) => {
    const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    if (checkDatagram(v, bytes.length, datagramSum(v, bytes, bytes.length), limits.hdrMax, limits.fragMax) !== Bad.OK) { host.bad++; return; }
    const c = host.counters;
    const before = { dup: c.dupSegs, ooo: c.outOfOrder, win: c.dropWindow, recv: c.segsRecv, held: s.rx.held };
    const type = getType(v);
    let want = null;
    if (isData(type) && !s.dead) {
      const d = seqDiff(getSeq(v), s.rx.next);
      want = d < 0 ? 'dup' : d >= limits.window ? 'win' : d === 0 ? 'next' : s.rx.held > 0 && host.held.has(getSeq(v)) ? 'dup' : 'ooo';
      if (want === 'ooo') host.held.set(getSeq(v), bytes.length);
    }
    host.lastUrgent = undefined;
    s.receive(bytes, v, bytes.length);
    if (want !== null) {
      const moved = { dup: c.dupSegs - before.dup, ooo: c.outOfOrder - before.ooo, win: c.dropWindow - before.win, recv: c.segsRecv - before.recv };
      const exp = { dup: want === 'dup' ? 1 : 0, ooo: want === 'ooo' ? 1 : 0, win: want === 'win' ? 1 : 0, recv: 1 };
      if (JSON.stringify(moved) !== JSON.stringify(exp)) violations.push(`${name}: receive of ${getSeq(v)} (${want}) moved the counters ${JSON.stringify(moved)}`);
      // An ACK is owed at once for a duplicate or an early segment (the sender may be missing one), in due course for the next one.
      const urgent = want === 'dup' || want === 'ooo' ? true : want === 'next' ? false : undefined;
      if (!s.dead && host.lastUrgent !== urgent) violations.push(`${name}: receive of ${getSeq(v)} (${want}) asked for an ACK with urgent ${host.lastUrgent}`);
    }
    // The hold buffer: exactly the early segments not yet delivered, and the latest of them named.
    for (const q of [...host.held.keys()]) if (seqDiff(q, s.rx.next) < 0) host.held.delete(q);
    const heldBytes = [...host.held.values()].reduce((x, y) => x + y, 0);
    if (!s.dead && s.rx.held !== heldBytes) violations.push(`${name}: ${s.rx.held} bytes held, the early segments weigh ${heldBytes}`);
    if (!s.dead && host.held.size > 0) {
      const latest = [...host.held.keys()].reduce((x, y) => (seqDiff(y, x) > 0 ? y : x));
      if (s.rx.highest !== latest) violations.push(`${name}: rxHighest ${s.rx.highest}, the latest held is ${latest}`);
    }
    host.scheduled = true;
  };
  host.held = new Map(); // early segments held: seq -> datagram length
  /** The flight model: posted minus acknowledged, by weight. */
  host.checkFlight = () => {
    for (const q of [...posted.keys()]) if (seqDiff(q, s.txBase) < 0) posted.delete(q);
    const want = [...posted.values()].reduce((x, y) => x + y, 0);
    if (s.flight !== want) violations.push(`${name}: flight ${s.flight}, the posted and unacknowledged segments weigh ${want}`);
  };
  return host;
}

/** Two sessions a -> b; `opts` per side. */
export function rig(start = 0, optsA = {}, optsB = {}) {
  const clock = { t: 1000 };
  const link = [];
  const violations = [];
  const a = side('a', clock, link, optsA, violations);
  const b = side('b', clock, link, optsB, violations);
  a.session.start(1, start, 7, b.grant(b.session));
  b.session.start(2, 7, start, a.grant(a.session));
  return { clock, link, a, b, violations };
}

/**
 * The rail's event loop, simulated: passes when asked, datagrams delivered one
 * at a time (`fault` may drop, duplicate or reorder them), the hotel advanced by
 * the backstop timer while time passes. Stops when done() or after ms.
 */
export function run(r, done, ms, fault = () => 'deliver') {
  const { clock, link, a, b, violations } = r;
  const end = clock.t + ms;
  const by = { a, b };
  while (clock.t < end) {
    for (const h of [a, b]) {
      if (!h.scheduled) continue;
      h.scheduled = false;
      h.step++;
      h.pass();
      if (h.hotel.guests > 0) h.timer = true;
      h.checkFlight();
    }
    if (link.length > 0) {
      const act = fault(link);
      const k = act === 'reorder' && link.length > 1 ? 1 : 0;
      const [p] = link.splice(k, 1);
      if (act !== 'drop') { by[p.to].step++; by[p.to].deliver(p.bytes); if (act === 'dup') by[p.to].deliver(Buffer.from(p.bytes)); }
      for (const h of [a, b]) h.checkFlight();
      continue;
    }
    if (done()) break;
    clock.t += 1;
    for (const h of [a, b]) {
      if (!h.timer) continue;
      h.timer = false;
      h.step++;
      h.hotel.advance(clock.t, expireToSession);
      if (h.retx.size > 0) h.scheduled = true;
      if (h.hotel.guests > 0) h.timer = true;
    }
  }
  assert.deepEqual(violations.slice(0, 5), [], 'the contract held at every step');
  return done();
}

/** Everything lent was given back exactly once, and the counters add up. */
export function settled(h) {
  const s = h.session;
  assert.equal(s.flight, 0);
  assert.equal(s.inflight, 0);
  assert.equal(s.queuedBytes, 0);
  assert.equal(s.retxPending, 0);
  assert.equal(h.hotel.guests, 0);
  assert.equal(h.retx.size, 0);
  for (const [, n] of h.lent) assert.equal(n, 1, 'each segment released once');
  for (const [, n] of h.frags) assert.equal(n, 1, 'each fragment released once');
  const c = h.counters;
  assert.equal(c.segsSent, h.tx.data, 'segsSent counts every data datagram put on the wire');
  assert.equal(c.retransmits, h.tx.data - h.tx.first - h.tx.copies, 'retransmits counts each resend once');
  assert.equal(h.owner.counters.retransmits, c.retransmits, 'and the endpoint counts the same');
  assert.equal(c.timeouts + c.fastRetransmits >= c.retransmits - 0, true);
}

