// The udp rail's own behaviours beyond the conformance suite: what a datagram
// rail must survive that a stream rail never sees (packing, loss, duplicates,
// reordering, corruption, silent peers, simultaneous connects).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { resolveParams } from '../../dist/core/params.js';
import { DONE, NO_RESOURCE } from '../../dist/rail/api.js';
import { MARGIN_MS, within } from '../helpers/promises.mjs';
import { AM_MSG, AM_BULK, first, RAILS, hdrOf, fill, connected } from './harness.mjs';

// udp-specific behaviours: the datagram rail must survive what a stream rail never sees.
const udpRail = RAILS.find((r) => r.name === 'udp');

test('udp: sends of one run after one that went out go packed in one datagram, at the run\'s end or at flush(); all arrive in order', async () => {
  const pair = await udpRail.open(resolveParams());
  try {
    const ab = await connected(pair);
    const c = pair.a.rail.counters;
    for (const flush of [false, true]) {
      const sent = c.segsSent + 0, packed = c.bundled + 0, had = pair.b.got.length;
      for (let i = 0; i < 20; i++) ab.sendCopy(AM_MSG, hdrOf(had + i), 8, Buffer.alloc(i * 10, i));
      assert.equal(c.segsSent - sent, 1, 'only the first is on the wire while the run lasts');
      // What a synchronous wait does first (it runs no microtasks); else the run's end sends it.
      if (flush) { pair.a.rail.flush(); assert.equal(c.segsSent - sent, 2, 'flush() sent the other 19 at once'); }
      await pair.b.until(() => pair.b.got.length === had + 20, 'all 20');
      assert.equal(c.segsSent - sent, 2, 'the other 19 in one datagram');
      assert.equal(c.bundled - packed, 18);
      for (let i = 0; i < 20; i++) {
        const g = pair.b.got[had + i];
        assert.equal(g.hdr.readUInt32LE(0), had + i, 'in the order sent');
        assert.deepEqual(g.payload, Buffer.alloc(i * 10, i));
      }
    }
  } finally {
    await pair.a.rail.close();
    await pair.b.rail.close();
  }
});

test('udp: flush() also runs a pass that waits for the event loop (an urgent ACK leaves before any turn of it)', async () => {
  const pair = await udpRail.open(resolveParams());
  try {
    pair.epAB().sendCopy(AM_MSG, hdrOf(0), 8, null);
    await pair.b.until(() => pair.b.got.length === 1, 'connected');
    const rail = pair.b.rail, c = rail.counters;
    const acks = c.acksSent + 0;
    // A pass scheduled with setImmediate: a rank blocked in a synchronous call would never run it.
    rail.wantAck(pair.epBA().session, true);
    assert.equal(c.acksSent - acks, 0, 'the pass waits for the event loop');
    rail.flush();
    assert.equal(c.acksSent - acks, 1, 'flush() ran it at once');
  } finally {
    await pair.a.rail.close();
    await pair.b.rail.close();
  }
});

// (A graceful close is reported as graceful: the shared conformance case.)

test('udp: a dropped peer that missed the RESET gets another when it next sends; a RESET without the session\'s other token ends nothing', async () => {
  const pair = await udpRail.open(resolveParams());
  let closed = false;
  try {
    const ab = pair.epAB();
    const ba = pair.epBA();
    ab.sendCopy(AM_MSG, hdrOf(0), 8, null);
    await pair.b.until(() => pair.b.got.length === 1, 'connected a -> b');
    ba.sendCopy(AM_MSG, hdrOf(0), 8, null);
    await pair.a.until(() => pair.a.got.length === 1, 'connected b -> a');
    const { T_RESET, VERSION, SUM_MAC } = await import('../../dist/rail/udp/wire.js');
    const { datagramSum } = await import('../../dist/rail/udp/checksum.js');
    const { datagramMac } = await import('../../dist/rail/udp/mac.js');
    // A forged RESET with b's token for a but the wrong second token (with the session's
    // MAC, as a would seal it): counted, nothing ends.
    const reset = (second, key) => {
      const b = Buffer.alloc(24); b.writeUInt16LE(0x5552, 0); b[2] = VERSION; b[3] = T_RESET | (key ? SUM_MAC : 0);
      b.writeUInt32LE(ba.myToken, 8); b.writeUInt32LE(second >>> 0, 12);
      b.writeUInt32LE(key ? datagramMac(b, 24, key) : datagramSum(new DataView(b.buffer), b, 24), 4);
      return b;
    };
    const s = dgram.createSocket('udp4');
    const [, , prioPort] = pair.b.rail.address().split(':');
    await new Promise((r) => s.send(reset(ba.session.token ^ 1, ba.session.macKey), Number(prioPort), '127.0.0.1', r));
    await pair.b.until(() => pair.b.rail.counters.dropProtocol > 0, 'the forged RESET counted');
    // Both tokens right but a checksum where the session requires its MAC (RAILCOMM_UDP_AUTH=1): dropped.
    if (ba.session.macKey !== null) {
      await new Promise((r) => s.send(reset(ba.session.token, null), Number(prioPort), '127.0.0.1', r));
      await pair.b.until(() => pair.b.rail.counters.dropNoMac > 0, 'the RESET without a MAC counted');
    }
    s.close();
    assert.deepEqual(pair.b.failed, [], 'a RESET without both tokens ends nothing');
    assert.equal(pair.b.rail.counters.resetsRecv, 0);
    // b loses a's first RESET.
    const receive = pair.b.rail.receive;
    let lost = 0;
    pair.b.rail.receive = function (msg, rinfo) {
      if (lost === 0 && msg.length === 24 && (msg[3] & 0x3f) === T_RESET) { lost++; return; }
      return receive.call(this, msg, rinfo);
    };
    ab.abort('a conformance test says so');
    await pair.b.until(() => lost === 1, 'the first RESET to be lost');
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(pair.b.failed, [], 'b has not heard yet');
    // b's next datagram on the dropped session draws a RESET at once.
    ba.sendCopy(AM_MSG, hdrOf(1), 8, null);
    await pair.b.until(() => pair.b.failed.length === 1, 'b to learn of the drop from the second RESET', 1000);
    assert.deepEqual(pair.b.failed[0], { peer: pair.a.id, code: 'ERR_PEER_FAILED', graceful: false });
    assert.match(pair.b.messages[0], /dropped this rank/);
    assert.equal(pair.a.rail.counters.resetsSent, 2);
    assert.equal(pair.b.rail.counters.resetsRecv, 1);
    assert.equal(pair.a.got.length, 1, 'nothing from the dropped peer was delivered');
    const t0 = performance.now();
    closed = true;
    await pair.close();
    assert.ok(performance.now() - t0 < 1500, 'both close at once');
  } finally { if (!closed) await pair.close(); }
});

// Multirail gives up on a udp lane that went silent while another lane answers (proto/lanes/multi-lane.ts).
test('udp: giveUp on a silent peer stops retransmitting at once, fails what is in flight, sends neither BYE nor RESET, answers the old session\'s late datagrams with a RESET, and a later endpoint is a fresh session', async () => {
  const pair = await udpRail.open(resolveParams());
  try {
    const ab = await connected(pair);
    const ba = pair.epBA();
    // The path from a to b goes silent (an nftables drop rule, as in test/integration/multirail.test.mjs).
    const receive = pair.b.rail.receive;
    let cut = true;
    pair.b.rail.receive = function (msg, rinfo) { return cut ? undefined : receive.call(this, msg, rinfo); };
    // Larger than what the peer's credit lets out unacknowledged: the send stays queued (udp completes a zero-copy send once copied out).
    let done = 'pending';
    ab.sendZcopy(AM_BULK, hdrOf(1), 8, fill(16 << 20, 1), { railComplete: (err) => { done = err; } });
    ab.sendCopy(AM_MSG, hdrOf(2), 8, fill(100, 2));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(done, 'pending', 'still in flight');
    ab.giveUp('no heartbeat answer (a test)');
    assert.equal(done?.code, 'ERR_PEER_FAILED', 'the zero-copy send failed at once');
    assert.deepEqual(pair.a.failed, [{ peer: pair.b.id, code: 'ERR_PEER_FAILED', graceful: false }]);
    assert.match(pair.a.messages[0], /given up on: no heartbeat answer/);
    const c = pair.a.rail.counters;
    assert.equal(c.badFrames, 0);
    assert.equal(c.resetsSent, 0, 'no RESET: multirail tells the peer on a lane that lives');
    const segs = c.segsSent + 0;
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(c.segsSent, segs, 'nothing retransmitted (nor a BYE) after giving up');
    assert.equal(ab.sendCopy(AM_MSG, hdrOf(3), 8, null), DONE, 'a send after it neither throws nor queues');
    // The path heals. b, which did not give up, sends on the old session: a's answer is a RESET.
    cut = false;
    ba.sendCopy(AM_MSG, hdrOf(4), 8, null);
    await pair.b.until(() => pair.b.failed.length === 1, 'b to learn of the drop from a RESET', 2000);
    assert.match(pair.b.messages[0], /dropped this rank/);
    assert.equal(c.resetsSent, 1);
    // A rejoin: fresh endpoints, a fresh session, both ways.
    const ab2 = pair.epAB(), ba2 = pair.epBA();
    assert.notEqual(ab2, ab);
    assert.notEqual(ba2, ba);
    const got = (side, n) => side.got.filter((g) => g.hdr.readUInt32LE(0) === n).length;
    ab2.sendCopy(AM_MSG, hdrOf(5), 8, fill(10, 5));
    await pair.b.until(() => got(pair.b, 5) === 1, 'a message on the fresh session a -> b', 5000);
    ba2.sendCopy(AM_MSG, hdrOf(6), 8, null);
    await pair.a.until(() => got(pair.a, 6) === 1, 'a message on the fresh session b -> a', 5000);
    assert.equal(got(pair.b, 1) + got(pair.b, 2) + got(pair.b, 3), 0, 'nothing of the given-up session arrived');
    assert.ok(ab2.session.token !== ab.session.token || ab2.myToken !== ab.myToken, 'a fresh session');
    const t0 = performance.now();
    await pair.close();
    assert.ok(performance.now() - t0 < 1500, 'both close at once');
  } finally { await pair.close(); }
});

test('udp: a peer that goes silent fails its endpoint with ERR_PEER_FAILED after RAILCOMM_UDP_PEER_TIMEOUT', async () => {
  const pair = await udpRail.open(resolveParams({ udpPeerTimeout: 1 }));
  try {
    const ab = await connected(pair);
    // b vanishes without a BYE, as a crashed process would (its sockets close).
    const bRail = pair.b.rail;
    await new Promise((r) => bRail.data.close(r));
    await new Promise((r) => bRail.prio.close(r));
    bRail.closed = true;
    const t0 = Date.now();
    ab.sendCopy(AM_MSG, hdrOf(1), 8, fill(100, 1));
    await pair.a.until(() => pair.a.failed.length === 1, 'peer timeout', 10_000);
    assert.equal(pair.a.failed[0].code, 'ERR_PEER_FAILED');
    assert.equal(pair.a.failed[0].graceful, false);
    assert.match(pair.a.messages[0], /no sign of life for 1 s/);
    const ms = Date.now() - t0;
    assert.ok(ms >= 900, 'not before the timeout');
    // b's silence began before t0: RAILCOMM_UDP_PEER_TIMEOUT (1 s) after it at the latest, plus the margin.
    assert.ok(ms < within(1000), `failed after ${ms} ms, RAILCOMM_UDP_PEER_TIMEOUT is 1 s (+${MARGIN_MS} ms margin)`);
  } finally { await pair.a.rail.close(); }
});

test('udp keepalive: a peer this rank waits on is probed while silent, answers while alive, and fails once it vanishes with nothing in flight', async () => {
  const pair = await udpRail.open(resolveParams({ udpPeerTimeout: 1 }));
  try {
    const ab = await connected(pair);
    await pair.a.until(() => ab.session.idle, 'acknowledged');
    // The layer above now waits on b (a receive, say) and sends nothing.
    pair.a.upcalls.waitingOn = () => true;
    await new Promise((r) => setTimeout(r, 1500));
    assert.deepEqual(pair.a.failed, [], 'a live peer answers the probes');
    assert.equal(pair.a.rail.openPeers, 1, 'b shares a\'s receive budget');
    assert.ok(pair.a.rail.counters.probesSent > 0 && pair.b.rail.counters.probesAnswered > 0, 'probed and answered');
    const bRail = pair.b.rail;
    await new Promise((r) => bRail.data.close(r));
    await new Promise((r) => bRail.prio.close(r));
    bRail.closed = true;
    const t0 = Date.now();
    await pair.a.until(() => pair.a.failed.length === 1, 'keepalive timeout', 10_000);
    assert.equal(pair.a.failed[0].code, 'ERR_PEER_FAILED');
    assert.match(pair.a.messages[0], /keepalive probes went unanswered/);
    assert.equal(pair.a.rail.openPeers, 0, 'a failed peer no longer shares the receive budget (its credit went back to the others)');
    const ms = Date.now() - t0;
    assert.ok(ms >= 600, 'not long before the timeout');
    assert.ok(ms < within(1000), `failed after ${ms} ms, RAILCOMM_UDP_PEER_TIMEOUT is 1 s (+${MARGIN_MS} ms margin)`);
  } finally { await pair.a.rail.close(); }
});

test('udp: malformed, foreign, corrupt and unknown-peer datagrams are counted and dropped; traffic goes on', async () => {
  const pair = await udpRail.open(resolveParams());
  try {
    const ab = await connected(pair);
    const [ip, dataPort, prioPort] = pair.b.rail.address().split(':');
    const s = dgram.createSocket('udp4');
    const send = (buf, port) => new Promise((r) => s.send(buf, Number(port), ip, r));
    const c0 = { ...pair.b.rail.counters.snapshot() };
    const { VERSION } = await import('../../dist/rail/udp/wire.js');
    await send(Buffer.alloc(3), dataPort); // short
    await send(Buffer.from('GET / HTTP/1.1 and some more bytes to pass the size'), prioPort); // foreign
    // A well-formed-looking header with a wrong checksum, and random bytes with the right magic.
    const fake = Buffer.alloc(64); fake.writeUInt16LE(0x5552, 0); fake[2] = VERSION; fake[3] = 1;
    await send(fake, dataPort);
    for (let i = 0; i < 200; i++) { const r = Buffer.from(fill(24 + (i * 37) % 1000, i)); r.writeUInt16LE(0x5552, 0); r[2] = VERSION; await send(r, i % 2 ? dataPort : prioPort); }
    // A valid ACK datagram (right checksum) with a token nobody holds.
    const { datagramSum } = await import('../../dist/rail/udp/checksum.js');
    const ack = Buffer.alloc(24); ack.writeUInt16LE(0x5552, 0); ack[2] = VERSION; ack[3] = 3; ack.writeUInt32LE(12345, 8);
    ack.writeUInt32LE(datagramSum(new DataView(ack.buffer), ack, 24), 4);
    await send(ack, prioPort);
    s.close();
    await new Promise((r) => setTimeout(r, 100));
    const c = pair.b.rail.counters.snapshot();
    assert.ok(c.dropShort > c0.dropShort, 'short counted');
    assert.ok(c.dropForeign > c0.dropForeign, 'foreign counted');
    assert.ok(c.dropCorrupt > c0.dropCorrupt, 'corrupt counted');
    assert.ok(c.dropUnknownPeer > c0.dropUnknownPeer, 'unknown peer counted');
    const dropped = ['dropShort', 'dropForeign', 'dropCorrupt', 'dropType', 'dropLength', 'dropUnknownPeer'].reduce((n, k) => n + c[k] - c0[k], 0);
    assert.equal(dropped, 204, 'every bad datagram is counted once (1 short, 1 foreign, 1 corrupt, 200 random, 1 unknown peer)');
    for (let i = 1; i <= 100; i++) ab.sendCopy(AM_MSG, hdrOf(i), 8, fill(i * 10, i));
    await pair.b.until(() => pair.b.got.length === 101, 'traffic after the garbage');
    pair.b.got.forEach((m, i) => assert.equal(m.hdr.readUInt32LE(0), i));
    assert.deepEqual(pair.b.failed, []);
  } finally { await pair.close(); }
});

test('udp: under injected faults (drop, dup, reorder, corrupt) every message arrives once, in order, intact', async () => {
  // corrupt=0.02: some 700 datagrams make about 14 corrupt ones (none at all: e^-14).
  const pair = await udpRail.open(resolveParams({ udpFaults: 'drop=0.05,dup=0.05,reorder=0.1,corrupt=0.02' }));
  try {
    const ab = pair.epAB();
    const sizes = [0, 8, 700, 1400, 9000, 70000, 200000];
    const N = 300;
    let i = 0;
    while (i < N) {
      // Keep a few messages outstanding: both rails share this thread.
      if (i - pair.b.got.length >= 16) { await pair.b.until(() => i - pair.b.got.length < 16, 'progress', 20_000); continue; }
      assert.equal(ab.sendCopy(AM_MSG, hdrOf(i), 8, fill(sizes[i % sizes.length], i)), DONE);
      i++;
    }
    await pair.b.until(() => pair.b.got.length === N, 'everything', 30_000);
    pair.b.got.forEach((m, k) => {
      assert.equal(m.hdr.readUInt32LE(0), k, 'order');
      assert.deepEqual(new Uint8Array(m.payload), fill(sizes[k % sizes.length], k));
    });
    // A datagram (a reordered one held 2 ms, an ACK) may still be on its way: let it land before counting.
    await new Promise((r) => setTimeout(r, 50));
    const ca = pair.a.rail.counters.snapshot();
    const cb = pair.b.rail.counters.snapshot();
    assert.ok(ca.faultDrops > 0 && ca.retransmits > 0, 'faults were injected and repaired');
    // Corrupted datagrams (one flipped bit each) were injected and the checksum (with RAILCOMM_UDP_AUTH=1,
    // the MAC) caught them. (That every flip is caught is udp-wire.test.mjs's and udp-mac.test.mjs's, bit by bit.)
    const corrupted = ca.faultCorrupts + cb.faultCorrupts;
    assert.ok(corrupted > 0, 'corrupt datagrams were injected');
    assert.ok(ca.dropCorrupt + cb.dropCorrupt > 0, `the checksum caught corrupt datagrams: ${JSON.stringify({ corrupted, a: ca.dropCorrupt, b: cb.dropCorrupt })}`);
    assert.deepEqual(pair.b.failed, []);
  } finally { await pair.close(); }
});

test('udp: back-pressure answers NO_RESOURCE past the queue limit, then ready()', async () => {
  const pair = await udpRail.open(resolveParams());
  try {
    const ep = await connected(pair);
    const big = fill(1 << 20, 3);
    let sent = 1, st;
    for (let i = 0; i < 200; i++) { st = ep.sendCopy(AM_MSG, hdrOf(sent), 8, big); if (st === NO_RESOURCE) break; sent++; }
    assert.equal(st, NO_RESOURCE, 'a long queue says no resource');
    await pair.a.until(() => pair.a.ready > 0, 'ready upcall', 20_000);
    assert.equal(ep.sendCopy(AM_MSG, hdrOf(sent), 8, big), DONE);
    sent++;
    await pair.b.until(() => pair.b.got.length === sent, 'everything accepted arrives', 30_000);
    pair.b.got.forEach((m, i) => assert.equal(m.hdr.readUInt32LE(0), i));
  } finally { await pair.close(); }
});

test('udp: simultaneous connects (and a lossy handshake) leave one session each way and lose nothing', async () => {
  for (const faults of ['', 'drop=0.3']) {
    const pair = await udpRail.open(resolveParams({ udpFaults: faults }));
    try {
      const ab = pair.epAB(), ba = pair.epBA();
      for (let i = 0; i < 50; i++) { ab.sendCopy(AM_MSG, hdrOf(i), 8, fill(10, i)); ba.sendCopy(AM_MSG, hdrOf(i), 8, fill(10, i)); }
      // With drop=0.3 on each side a round trip fails half the time, and a
      // retransmission backs off to 2 s: the last segments of a run can wait
      // 7+ timeouts in a row (0.5^7, about 1 run in 10-20 took over 20 s
      // here, each try logged, none lost). So the budget is 60 s; on a
      // timeout the message says where each side's session stands.
      const budget = faults === '' ? 20_000 : 60_000;
      const seqs = (ep) => {
        const ss = ep.session, seg = ss.txRing[ss.txBase & ss.mask], h = ep.rail.hotel;
        return { txBase: ss.txBase, txNext: ss.txNext, rxNext: ss.rx.next, queue: ss.queue.length - ss.qHead, retxPending: ss.retxPending,
          base: seg && { seq: seg.seq, sends: seg.sends, sentAgo: ep.rail.now() - seg.sentAt, due: seg.gDue, inHotel: seg.gList?.tag === h, inRetx: seg.gList === ep.rail.retx, list: seg.gList === null ? null : typeof seg.gList },
          hotelTick: h.tick, guests: h.guests, timer: ep.rail.timer !== null, rto: ss.rtt.rto, holeArmed: ss.holeArmed };
      };
      const state = () => JSON.stringify({ faults, sa: seqs(ab), sb: seqs(ba), a: { got: pair.a.got.length, ep: ab.state, rail: pair.a.rail.counters.snapshot(), peer: ab.counters.snapshot() },
        b: { got: pair.b.got.length, ep: ba.state, rail: pair.b.rail.counters.snapshot(), peer: ba.counters.snapshot() } });
      await pair.a.until(() => pair.a.got.length === 50, 'b -> a', budget).catch((e) => { throw new Error(`${e.message}: ${state()}`); });
      await pair.b.until(() => pair.b.got.length === 50, 'a -> b', budget).catch((e) => { throw new Error(`${e.message}: ${state()}`); });
      pair.a.got.forEach((m, i) => assert.equal(m.hdr.readUInt32LE(0), i));
      pair.b.got.forEach((m, i) => assert.equal(m.hdr.readUInt32LE(0), i));
      assert.ok(ab.open && ba.open);
      assert.deepEqual(pair.a.failed, []);
      assert.deepEqual(pair.b.failed, []);
    } finally { await pair.close(); }
  }
});
