// Multirail's pure logic (src/proto/lanes): which lanes a peer gets, how
// rendezvous data is shared by weight, and the acknowledge/resend logic over
// simulated lanes that fail at any point: every message arrives exactly once,
// in order, with its bytes, and the sender's kept state drains.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { planLanes, pickByWeight, sameSubnet } from '../../dist/proto/lanes/select.js';
import { Lane, MultiLane } from '../../dist/proto/lanes/multi-lane.js';
import { LaneReceiver } from '../../dist/proto/lanes/receiver.js';
import { Lanes } from '../../dist/proto/lanes/lanes.js';
import { AmRegistry } from '../../dist/proto/am.js';
import { Logger } from '../../dist/core/log.js';
import { AM_LANE_ENV, AM_LANE_ACK, AM_LANE_PING, AM_LANE_DOWN, decodeDown, encodeDown } from '../../dist/proto/lanes/wire.js';
import { TrafficCounters } from '../../dist/core/counters.js';
import { AM_DATA } from '../../dist/proto/wire.js';
import { OfiEndpoint } from '../../dist/rail/ofi/endpoint.js';
import { OpTable } from '../../dist/rail/ofi/ops.js';

const rail = (name, component, device, { network = true, lat = 50, bw = 1000, net = '10.1.0.0', bits = 24, reach = true } = {}) => ({
  name, component, device, network, latencyUs: lat, bandwidthMBps: bw,
  fit: (a) => (!reach ? 0 : sameSubnet(a.split(':')[0], net, bits) ? 2 : 1),
});

test('planLanes: one lane per NIC in the peer\'s subnets; shared memory alone; striping on distinct devices only', () => {
  const eth0 = rail('tcp:eth0', 'tcp', 'eth0', { net: '10.1.0.0' });
  const eth1 = rail('tcp:eth1', 'tcp', 'eth1', { net: '10.2.0.0' });
  const docker = rail('tcp:docker0', 'tcp', 'docker0', { net: '172.17.0.0', bits: 16 });
  const udp0 = rail('udp:eth0', 'udp', 'eth0', { net: '10.1.0.0', lat: 60 });
  const lanes = planLanes([eth0, eth1, docker, udp0], { tcp: ['10.1.0.2:7', '10.2.0.2:8'], udp: ['10.1.0.2:9:10'] }, 1, 2);
  assert.deepEqual(lanes.map((l) => [l.rail.name, l.address, l.eager, l.rndv]), [
    ['tcp:eth0', '10.1.0.2:7', true, true],
    ['tcp:eth1', '10.2.0.2:8', false, true],
    ['udp:eth0', '10.1.0.2:9:10', false, false], // a second port of eth0: failover, not striping
  ]);
  // docker0 reaches the peer only by routing: not a lane while a subnet is shared.
  const shm = rail('shm:devshm', 'shm', 'devshm', { network: false, lat: 1, bw: 10000 });
  assert.deepEqual(planLanes([shm, eth0], { shm: ['h;1;x'], tcp: ['10.1.0.2:7'] }, 1, 2).map((l) => l.rail.name), ['shm:devshm']);
  // No shared subnet: the first rail that reaches (the routed one), only.
  assert.deepEqual(planLanes([docker, eth1], { tcp: ['192.168.5.5:1'] }, 1, 2).map((l) => l.rail.name), ['tcp:docker0']);
  // A lane far slower than the best does not take part in striping.
  const slow = rail('tcp:slow', 'tcp', 'slow', { net: '10.2.0.0', bw: 100 });
  assert.deepEqual(planLanes([eth0, slow], { tcp: ['10.1.0.2:7', '10.2.0.2:8'] }, 1, 2).map((l) => l.rndv), [true, false]);
  // RAILCOMM_MAX_RNDV_RAILS=1 and MAX_EAGER_RAILS=2.
  assert.deepEqual(planLanes([eth0, eth1], { tcp: ['10.1.0.2:7', '10.2.0.2:8'] }, 2, 1).map((l) => [l.eager, l.rndv]), [[true, true], [true, false]]);
  assert.deepEqual(planLanes([eth0], { udp: ['x'] }, 1, 2), []);
});

test('pickByWeight: shares follow the weights, skipping lanes that take nothing (property)', () => {
  fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 1, maxLength: 5 }), fc.integer({ min: 50, max: 400 }), (w, n) => {
    const sent = w.map(() => 0);
    for (let k = 0; k < n; k++) {
      const i = pickByWeight(sent, w);
      if (w.every((x) => x === 0)) { assert.equal(i, -1); return; }
      assert.ok(w[i] > 0);
      sent[i] += 1;
    }
    const total = w.reduce((a, b) => a + b, 0);
    // Within a piece per lane of its exact share, however long the run.
    for (let i = 0; i < w.length; i++) assert.ok(Math.abs(sent[i] - (n * w[i]) / total) <= w.length, `lane ${i}: ${sent[i]} of ${n} at weight ${w[i]}/${total}`);
  }));
});

/** A simulated rail endpoint: frames queue in order until delivered, or vanish when the lane fails. */
function fakeLane(name) {
  const r = { name, component: 'tcp', device: name, caps: { amCopyMax: 1 << 20, amZcopyMax: 1 << 20, bandwidthMBps: 1000 }, endpoint: null, address: () => `${name}:here` };
  const rep = {
    rail: r, peer: 1n, owner: null, counters: new TrafficCounters(), queue: [], dead: false,
    sendCopy(am, hdr, hdrLen, payload) {
      if (!this.dead) this.queue.push({ am, hdr: Buffer.from(hdr.subarray(0, hdrLen)), payload: payload === null ? Buffer.alloc(0) : Buffer.from(payload) });
      return 0;
    },
    sendZcopy(am, hdr, hdrLen, payload, done) { this.sendCopy(am, hdr, hdrLen, payload); done.railComplete(null); return 1; },
    abort(why) { this.aborted = why; }, async close() {}, giveUp(why) { this.dead = true; this.gaveUp = why; },
  };
  r.endpoint = () => rep;
  return rep;
}

test('acknowledge and resend over lanes that fail at any point: each message once, in order, its bytes; kept state drains (property)', () => {
  fc.assert(fc.property(
    fc.integer({ min: 2, max: 3 }),
    fc.array(fc.tuple(fc.constantFrom('send', 'deliver', 'deliver', 'ack', 'fail'), fc.nat(), fc.integer({ min: 0, max: 40 })), { minLength: 20, maxLength: 300 }),
    (nLanes, script) => {
      const reps = Array.from({ length: nLanes }, (_, i) => fakeLane(`l${i}`));
      const host = { laneTimeoutMs: 1e9, now: () => 0, ackFor: () => rx.acknowledged, ackSent: () => {}, laneFailed: () => {}, laneJoined: () => {}, ready: () => {}, log: () => {} };
      const rx = new LaneReceiver();
      const m = new MultiLane(host, 1n, reps.map((r, i) => new Lane(r, i === 0, true, 'a')), 1);
      const got = [];
      const table = [];
      table[7] = { recv: (_rep, f) => got.push([f.view.getUint32(f.hdrOff, true), Buffer.from(f.buf.subarray(f.payOff, f.payOff + f.payLen))]) };
      let sent = 0;
      const deliver = (rep) => {
        const f = rep.queue.shift();
        if (f === undefined) return;
        if (f.am !== AM_LANE_ENV) return; // heartbeats and acks: not simulated here
        const buf = Buffer.concat([f.hdr, f.payload]);
        const frame = { buf, view: new DataView(buf.buffer, buf.byteOffset, buf.length), hdrOff: 0, hdrLen: f.hdr.length, payOff: f.hdr.length, payLen: f.payload.length, placed: null, words: null };
        assert.ok(rx.take(rep, frame, table));
        m.acked(frame.view.getUint32(4, true));
      };
      const send = (len) => {
        const hdr = new Uint8Array(4);
        new DataView(hdr.buffer).setUint32(0, sent, true);
        const payload = Buffer.alloc(len, sent & 0xff);
        if (m.sendCopy(7, hdr, 4, payload) !== 2) sent++;
      };
      for (const [what, k, len] of script) {
        const live = reps.filter((r) => !r.dead);
        if (what === 'send') send(len);
        else if (what === 'deliver') deliver(live[k % live.length]);
        else if (what === 'ack') m.acked(rx.acknowledged);
        else if (what === 'fail' && live.length > 1) {
          const r = live[k % live.length];
          r.dead = true;
          r.queue.length = 0; // what it carried is lost
          assert.ok(m.laneFailed(r, 'cut'));
        }
      }
      // Drain: everything still queued arrives, then the last acknowledgement.
      for (let guard = 0; guard < 10000 && reps.some((r) => r.queue.length > 0); guard++) for (const r of reps) deliver(r);
      m.acked(rx.acknowledged);
      assert.equal(got.length, sent, 'every message arrived');
      got.forEach(([n, payload], i) => {
        assert.equal(n, i, 'in order, once');
        assert.ok(payload.every((b) => b === (i & 0xff)), 'its own bytes');
      });
      assert.equal(m.unacknowledged, 0, 'nothing kept once acknowledged');
    },
  ), { numRuns: 300 });
});

test('striping: pieces a failed lane completes afterwards do not drive its share negative (it takes its part again once it rejoins)', () => {
  const reps = [fakeLane('a'), fakeLane('b')];
  const held = [];
  for (const r of reps) r.sendZcopy = function (am, hdr, hdrLen, payload, done) { held.push(done); return 1; };
  const host = { laneTimeoutMs: 1e9, now: () => 0, ackFor: () => 0, ackSent: () => {}, laneFailed: () => {}, laneJoined: () => {}, ready: () => {}, log: () => {} };
  const lanes = reps.map((r) => new Lane(r, true, true, 'a'));
  const m = new MultiLane(host, 1n, lanes, 1);
  const hdr = new Uint8Array(8), piece = new Uint8Array(1 << 16);
  const done = { railComplete() {} };
  for (let k = 0; k < 8; k++) m.sendZcopy(AM_DATA, hdr, 8, piece, done);
  assert.ok(lanes.every((l) => l.outstanding > 0), 'both lanes carry pieces');
  assert.ok(m.laneFailed(reps[1], 'cut'));
  assert.equal(lanes[1].outstanding, 0);
  for (const d of held.splice(0)) d.railComplete(null); // the failed lane's pieces complete late
  assert.deepEqual(lanes.map((l) => l.outstanding), [0, 0]);
});

/** Two lanes a and b with a lane timeout of 1000 ms on a clock the test sets (`rig.now`); the lanes given up on, by name, in `failed`. */
function heartbeatRig() {
  const rig = { now: 0, failed: [], reps: [fakeLane('a'), fakeLane('b')], m: null };
  const host = { laneTimeoutMs: 1000, now: () => rig.now, ackFor: () => 0, ackSent: () => {}, laneFailed: (_m, l) => rig.failed.push(l.rail.name), laneJoined: () => {}, ready: () => {}, log: () => {} };
  rig.m = new MultiLane(host, 1n, rig.reps.map((r) => new Lane(r, true, true, 'x')), 1);
  return rig;
}

test('heartbeat: a lane silent past the lane timeout while another answers is given up on; all silent is not a lane\'s fault', () => {
  const rig = heartbeatRig();
  const { failed, reps, m } = rig;
  // The timer's cadence: a quarter of the timeout. Nobody answers: the peer is busy or gone, not a lane.
  for (rig.now = 250; rig.now <= 2000; rig.now += 250) m.heartbeat();
  assert.deepEqual(failed, []);
  // ...which the hang report says, with how long (a cut network looks like a deadlock otherwise).
  assert.match(m.silence(rig.now), /^no heartbeat answer on any lane to it \(a, b\) for 2\.0 s: it is busy in its own code, or the network between us is cut$/);
  const pings = reps[0].queue.filter((f) => f.am === AM_LANE_PING);
  assert.equal(pings.length, 8);
  // From now on lane a answers every ping, b none: b goes once it has been silent a whole timeout while a answers.
  for (rig.now = 2250; rig.now <= 3000; rig.now += 250) { m.heartbeat(); m.pong(reps[0], 0); }
  assert.deepEqual(failed, ['b']);
  assert.equal(m.liveCount, 1);
  assert.equal(m.silence(rig.now), null, 'a answers');
  assert.ok(reps.every((r) => r.queue.every((f) => f.am !== AM_LANE_ACK)));
});

test('heartbeat after a pause (nothing outstanding, or the event loop held): each lane gets the whole timeout from the first ping', () => {
  const rig = heartbeatRig();
  const { failed, reps, m } = rig;
  for (rig.now = 250; rig.now <= 1000; rig.now += 250) { m.heartbeat(); m.pong(reps[0], 0); m.pong(reps[1], 1); }
  // Ten seconds without a heartbeat; then a answers at once and b's answer takes 600 ms (it queued behind data).
  rig.now = 11_000; m.heartbeat(); m.pong(reps[0], 0);
  rig.now = 11_250; m.heartbeat(); m.pong(reps[0], 0);
  rig.now = 11_500; m.heartbeat(); m.pong(reps[0], 0);
  rig.now = 11_600; m.pong(reps[1], 1);
  for (rig.now = 11_750; rig.now <= 13_000; rig.now += 250) { m.heartbeat(); m.pong(reps[0], 0); m.pong(reps[1], 1); }
  assert.deepEqual(failed, []);
  // Paused again; this time b stays silent: given up a whole timeout after the first ping, not before.
  rig.now = 20_000; m.heartbeat(); m.pong(reps[0], 0);
  for (rig.now = 20_250; rig.now < 21_000; rig.now += 250) { m.heartbeat(); m.pong(reps[0], 0); }
  assert.deepEqual(failed, []);
  rig.now = 21_000; m.heartbeat();
  assert.deepEqual(failed, ['b']);
});

test('a lane one side gives up on is failed on the other at once: the notice names it, the peer fails its own and answers nothing', () => {
  // Two ranks' views of the same two lanes: a lane from here (rail `a`, address a:here) to there (x), and one over b.
  const here = heartbeatRig();
  const there = { failed: [], reps: [fakeLane('x'), fakeLane('y')] };
  const host = { laneTimeoutMs: 1000, now: () => here.now, ackFor: () => 0, ackSent: () => {}, laneFailed: (_m, l) => there.failed.push(l.rail.name), laneJoined: () => {}, ready: () => {}, log: () => {} };
  // There, each lane goes to this side's rail address: x to a:here, y to b:here.
  there.m = new MultiLane(host, 1n, [new Lane(there.reps[0], true, true, 'a:here'), new Lane(there.reps[1], true, true, 'b:here')], 1);
  // Here, lanes a and b go to x:here and y:here (heartbeatRig made them to 'x': aim them right).
  here.m.lanes[0].address = 'x:here';
  here.m.lanes[1].address = 'y:here';
  // Lane b goes silent here; a answers: b is given up on, and the notice goes out on a.
  for (here.now = 250; here.now <= 1250; here.now += 250) { here.m.heartbeat(); here.m.pong(here.reps[0], 0); }
  assert.deepEqual(here.failed, ['b']);
  const notices = here.reps[0].queue.filter((f) => f.am === AM_LANE_DOWN);
  assert.equal(notices.length, 1);
  assert.equal(here.reps[1].queue.filter((f) => f.am === AM_LANE_DOWN).length, 0, 'not on the lane that failed');
  const n = decodeDown(notices[0].payload.toString('utf8'));
  assert.equal(n.component, 'tcp');
  assert.equal(n.from, 'b:here');
  assert.equal(n.to, 'y:here');
  assert.match(n.why, /no answer on it/);
  // A notice that names no live lane there (wrong addresses) changes nothing.
  assert.equal(there.m.peerGaveUp('tcp', 'b:here', 'x:here', n.why), false);
  assert.equal(there.m.peerGaveUp('udp', n.from, n.to, n.why), false);
  assert.deepEqual(there.failed, []);
  // The notice itself: there, lane y (to b:here) fails at once, its endpoint given up, and no notice comes back.
  assert.equal(there.m.peerGaveUp(n.component, n.from, n.to, n.why), true);
  assert.deepEqual(there.failed, ['y']);
  assert.equal(there.m.liveCount, 1);
  assert.match(there.reps[1].gaveUp, /closed by the peer, which gave up on it \(no answer on it/);
  assert.ok(there.reps.every((r) => r.queue.every((f) => f.am !== AM_LANE_DOWN)), 'a lane failed on the peer\'s word is not reported back');
  // Told twice (a repeat, or both sides at once): nothing more happens.
  assert.equal(there.m.peerGaveUp(n.component, n.from, n.to, n.why), false);
  assert.deepEqual(there.failed, ['y']);
});

test('lane-down notice: encoded and decoded; a malformed one is not one', () => {
  const text = (c, f, t, w) => Buffer.from(`${c}\n${f}\n${t}\n${w}`).toString('utf8');
  assert.deepEqual(decodeDown(text('tcp', '10.0.0.1:5', '10.0.0.2:6', 'why\nwith a line')), { component: 'tcp', from: '10.0.0.1:5', to: '10.0.0.2:6', why: 'why\nwith a line' });
  for (const bad of ['', 'tcp', 'tcp\na', 'tcp\na\nb', '\na\nb\nc', 'tcp\n\nb\nc']) assert.equal(decodeDown(bad), null, JSON.stringify(bad));
});

test('lane-down notices as they arrive: a malformed one is counted and its lane dropped, a good one fails the lane it names', () => {
  const am = new AmRegistry();
  const said = [];
  const lanes = new Lanes({ laneFailed: () => {}, drain: () => {}, busy: () => false }, am, { laneTimeout: 1000, maxEagerRails: 1, maxRndvRails: 2 }, new Logger('warn', 't', (l) => said.push(l)));
  try {
    const reps = [fakeLane('x'), fakeLane('y')];
    const ep = { id: 1n, rank: 1, lane: null, failure: null };
    ep.lane = lanes.multi(ep, reps.map((r, i) => ({ rail: { rail: r.rail }, address: `peer${i}:there`, eager: i === 0, rndv: true })), null);
    const frame = (payload) => {
      const buf = Buffer.concat([Buffer.alloc(4), payload]);
      return { buf, view: new DataView(buf.buffer, buf.byteOffset, buf.length), hdrOff: 0, hdrLen: 4, payOff: 4, payLen: payload.length, placed: null, words: null };
    };
    const down = am.table[AM_LANE_DOWN];
    down.recv(reps[0], frame(Buffer.from('no lines here')));
    assert.equal(lanes.protocolErrors, 1);
    assert.match(reps[0].aborted, /malformed lane-down notice/);
    assert.equal(ep.lane.liveCount, 2, 'nothing failed on a malformed notice');
    // The peer gave up on its lane from peer1:there to our y's address: lane y fails here, x carries on.
    down.recv(reps[0], frame(encodeDown('tcp', 'peer1:there', 'y:here', 'no answer on it for 1000 ms')));
    assert.equal(ep.lane.liveCount, 1);
    assert.equal(ep.lane.lanes[1].live, false);
    assert.match(reps[1].gaveUp, /closed by the peer, which gave up on it/);
    assert.ok(said.some((l) => /lane y to peer failed \(closed by the peer/.test(l)), said.join('\n'));
  } finally {
    lanes.close();
  }
});

test('an ofi lane given up on (silent drop) fails its endpoint at once: rendezvous pieces the provider still holds complete, nothing waits on a BYE', () => {
  // The ofi rail as its endpoint sees it, over a binding whose connection carries nothing: every
  // send is taken and never completes (a silently dropped link: the provider retransmits forever).
  const errors = [], failedUp = [];
  const sent = [];
  const b = {
    avInsert: () => 0,
    sendHead: () => 0, // DONE: copied (pings)
    send: (_h, _d, _head, _len, _payload, id) => { sent.push(id); return id === 0 ? 0 : 1; },
  };
  const ofi = {
    name: 'ofi:tcp;ofi_rxm/eth0', component: 'ofi', device: { name: 'eth0' }, provider: 'tcp;ofi_rxm',
    caps: { amCopyMax: 1 << 20, amZcopyMax: 1 << 20, bandwidthMBps: 2000 }, gathers: true, closing: false, finalizing: false,
    h: 1, b, ops: new OpTable(), blocked: new Set(), retrying: new Set(), rank: 0, job: 1, counters: new TrafficCounters(),
    head: new Uint8Array(4096), headView: null, address: () => 'ofi-here',
    env: { jobKey: 'k', self: 1n, params: { connectTimeout: 1000 }, log: { debug() {}, error: (m) => errors.push(m), warnEvery() {} }, upcalls: { failed: (ep, _e, graceful) => failedUp.push(graceful) } },
    nameOf: () => ({ name: Buffer.from('x'), ctx: -1 }), newPeer() {}, forget() {}, fiError: (r) => `error ${r}`,
    dropped: 0, peerDropped() { this.dropped++; },
  };
  ofi.headView = new DataView(ofi.head.buffer);
  const rep = new OfiEndpoint(ofi, 2n, 'ofi-there', 0);
  ofi.endpoint = () => rep;
  const tcp = fakeLane('tcp:l1');
  let now = 0;
  const host = { laneTimeoutMs: 1000, now: () => now, ackFor: () => 0, ackSent: () => {}, laneFailed: () => {}, laneJoined: () => {}, ready: () => {}, log: () => {} };
  const m = new MultiLane(host, 2n, [new Lane(rep, true, true, 'ofi-there'), new Lane(tcp, true, true, 'tcp-there')], 1);
  rep.owner = m;
  // A rendezvous send's pieces: striped by weight, most on ofi, where they stay in flight.
  let completed = 0;
  const done = { railComplete() { completed++; } };
  const hdr = new Uint8Array(16), piece = new Uint8Array(1 << 17);
  for (let k = 0; k < 6; k++) m.sendZcopy(AM_DATA, hdr, 16, piece, done);
  const onOfi = m.lanes[0].msgs;
  assert.ok(onOfi > 0, 'ofi carries pieces');
  assert.equal(completed, 6 - onOfi, 'only the tcp pieces completed');
  // The ofi lane answers no heartbeat, tcp does: ofi is given up on.
  for (now = 250; now <= 1250; now += 250) { m.heartbeat(); m.pong(tcp, 1); }
  assert.equal(m.lanes[0].live, false);
  assert.equal(rep.failed, true, 'the ofi endpoint given up on is failed, not closed (a close waits to say BYE on the dead connection)');
  assert.equal(completed, 6, 'the pieces the provider held complete (failed): the send waits for the receiver\'s FIN, not for them');
  assert.equal(ofi.ops.count, 0, 'nothing waits on the provider');
  assert.equal(ofi.ops.hasOwner(rep), false);
  assert.deepEqual(failedUp, [false]);
  assert.deepEqual(errors, [], 'given up on on purpose: no error logged (the lanes warn)');
  assert.equal(ofi.dropped, 1, 'the rail hears of the drop (its close may have to leave the endpoint open: rail/ofi/close-hazard.ts)');
});
