// CUDA IPC negotiation and the receiver's handle cache (proto/cuda-ipc.ts, the
// smcuda design on device memory): pure logic, the driver replaced by a
// LocalCuda that says what the responder's process sees and a HandleOpener
// that counts opens and closes. Unit cases for each answer, and properties
// over random sequences of sends, answers, losses and late answers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  CudaIpcNegotiation, CudaIpcPeer, DeviceHandleCache,
  IPC_INIT, IPC_SENT, IPC_ACKING, IPC_ACKED, IPC_OK, IPC_BAD, IPC_MAX_TRIES, placeText,
} from '../../dist/proto/cuda-ipc.js';
import { IPC_YES, IPC_NO, IPC_LATER } from '../../dist/proto/ipc-wire.js';

const HOST = 0x1234n;
const PLACE = { domain: 0, bus: 0x3b, slot: 0 };

/** What the responder's process sees; every field may be changed by a test. */
function local(over = {}) {
  return {
    never: () => '', ready: () => true, hostId: () => HOST, pid: () => 2000,
    deviceAt: (p) => (p.bus === PLACE.bus ? 0 : p.bus === 0x5e ? 1 : -1),
    current: () => 0, canAccessPeer: () => false,
    ...over,
  };
}

/** Requester a and responder b with their links; messages wait in `wire` until flushed. */
function pair(over = {}, maxTries = IPC_MAX_TRIES) {
  const reqNeg = new CudaIpcNegotiation(local(), maxTries);
  const resNeg = new CudaIpcNegotiation(local(over), maxTries);
  const a = new CudaIpcPeer(), b = new CudaIpcPeer();
  const wire = [];
  const req = (attempt, o = {}) => ({ attempt, pid: 1000, place: PLACE, hostId: HOST, ...o });
  const linkA = { sendRequest: (attempt) => wire.push({ kind: 'req', attempt }), sendAck: () => assert.fail('a only asks') };
  const linkB = { sendRequest: () => assert.fail('b only answers'), sendAck: (status) => wire.push({ kind: 'ack', status }) };
  const deliver = (m, reqOver) => (m.kind === 'req' ? resNeg.onRequest(b, linkB, req(m.attempt, reqOver)) : reqNeg.onAck(a, m.status));
  const flush = (reqOver) => { while (wire.length > 0) deliver(wire.shift(), reqOver); };
  return { reqNeg, resNeg, a, b, linkA, linkB, wire, flush, deliver };
}

test('same host, same GPU: the first large send asks (and is staged), the answer is yes, later sends use IPC', () => {
  const t = pair();
  assert.equal(t.reqNeg.want(t.a, t.linkA), false, 'the first send is staged: the peer has not answered');
  assert.equal(t.a.tx, IPC_SENT);
  assert.equal(t.reqNeg.want(t.a, t.linkA), false, 'no second question while one is out');
  assert.equal(t.wire.length, 1);
  t.flush();
  assert.equal(t.b.rx, IPC_ACKED);
  assert.equal(t.a.tx, IPC_OK);
  assert.equal(t.reqNeg.want(t.a, t.linkA), true);
  assert.equal(t.a.tries, 1);
});

test('another GPU of the responder: yes only where cuDeviceCanAccessPeer says so', () => {
  const other = { ...PLACE, bus: 0x5e };
  const no = pair();
  no.reqNeg.want(no.a, no.linkA);
  no.flush({ place: other });
  assert.equal(no.a.tx, IPC_BAD);
  assert.match(no.b.why, /cannot access/);
  const yes = pair({ canAccessPeer: (mine, theirs) => mine === 0 && theirs === 1 });
  yes.reqNeg.want(yes.a, yes.linkA);
  yes.flush({ place: other });
  assert.equal(yes.a.tx, IPC_OK);
});

test('refusals for good: another host, a GPU the responder does not see, this very process, IPC off or no driver there', () => {
  const cases = [
    [{}, { hostId: 99n }, /another host/],
    [{}, { place: { domain: 1, bus: 2, slot: 3 } }, /not visible/],
    [{}, { pid: 2000 }, /this process/],
    [{ never: () => 'RAILCOMM_CUDA_IPC=0 at the receiver' }, {}, /RAILCOMM_CUDA_IPC=0/],
  ];
  for (const [over, reqOver, why] of cases) {
    const t = pair(over);
    t.reqNeg.want(t.a, t.linkA);
    t.flush(reqOver);
    assert.equal(t.a.tx, IPC_BAD, String(why));
    assert.equal(t.b.rx, IPC_BAD);
    assert.match(t.b.why, why);
    for (let i = 0; i < 10; i++) assert.equal(t.reqNeg.want(t.a, t.linkA), false);
    assert.equal(t.wire.length, 0, 'never asks again');
  }
});

test('"later" (CUDA not initialised at the responder yet) resets to INIT; the next large send asks again, 5 tries at most', () => {
  let ready = false;
  const t = pair({ ready: () => ready });
  for (let i = 1; i <= IPC_MAX_TRIES; i++) {
    assert.equal(t.reqNeg.want(t.a, t.linkA), false);
    assert.equal(t.a.tries, i);
    t.flush();
    assert.equal(t.b.rx, IPC_INIT, 'the responder keeps no state');
  }
  assert.equal(t.a.tx, IPC_BAD, `after ${IPC_MAX_TRIES} "later" answers it gives up`);
  ready = true;
  assert.equal(t.reqNeg.want(t.a, t.linkA), false);
  assert.equal(t.wire.length, 0);
  // Ready on the third try: OK.
  let r2 = false;
  const u = pair({ ready: () => r2 });
  u.reqNeg.want(u.a, u.linkA); u.flush();
  u.reqNeg.want(u.a, u.linkA); u.flush();
  r2 = true;
  u.reqNeg.want(u.a, u.linkA); u.flush();
  assert.equal(u.a.tx, IPC_OK);
  assert.equal(u.a.tries, 3);
});

test('a handle that does not open after all: the responder says NO and the sender stops offering IPC', () => {
  const t = pair();
  t.reqNeg.want(t.a, t.linkA);
  t.flush();
  assert.equal(t.a.tx, IPC_OK);
  t.resNeg.onOpenFailed(t.b, t.linkB, 'cuIpcOpenMemHandle failed');
  t.flush();
  assert.equal(t.b.rx, IPC_BAD);
  assert.equal(t.a.tx, IPC_BAD);
  assert.equal(t.reqNeg.want(t.a, t.linkA), false);
});

test('answers that arrive late or twice change nothing after the outcome', () => {
  const t = pair();
  t.reqNeg.want(t.a, t.linkA);
  t.flush();
  t.reqNeg.onAck(t.a, IPC_LATER);
  t.reqNeg.onAck(t.a, IPC_YES);
  assert.equal(t.a.tx, IPC_OK);
  assert.equal(t.b.rx, IPC_ACKED);
  assert.ok([IPC_ACKING, IPC_ACKED].includes(t.b.rx));
});

test('property: whatever the order of sends, answers, losses and duplicates, the state machine keeps its promises', () => {
  const step = fc.oneof(
    fc.constant({ t: 'send' }),
    fc.constant({ t: 'deliver' }),
    fc.constant({ t: 'lose' }),
    fc.constant({ t: 'dup' }),
    fc.constant({ t: 'ready' }),
    fc.constant({ t: 'openFailed' }),
  );
  fc.assert(fc.property(fc.array(step, { maxLength: 60 }), fc.boolean(), fc.boolean(), fc.integer({ min: 1, max: 6 }), (steps, sameHost, visible, maxTries) => {
    let ready = false;
    const t = pair({ ready: () => ready }, maxTries);
    const reqOver = { hostId: sameHost ? HOST : 7n, place: visible ? PLACE : { domain: 9, bus: 9, slot: 9 } };
    let asked = 0, okSeen = false, badSeen = false, yesSent = 0;
    for (const s of steps) {
      if (s.t === 'send') {
        const before = t.wire.filter((m) => m.kind === 'req').length;
        const use = t.reqNeg.want(t.a, t.linkA);
        if (t.wire.filter((m) => m.kind === 'req').length > before) asked++;
        // IPC is used exactly when the peer said yes and nothing took it back.
        assert.equal(use, t.a.tx === IPC_OK);
      } else if (s.t === 'deliver' && t.wire.length > 0) {
        const m = t.wire.shift();
        if (m.kind === 'ack' && m.status === IPC_YES) yesSent++;
        t.deliver(m, reqOver);
      } else if (s.t === 'lose' && t.wire.length > 0) {
        t.wire.shift();
      } else if (s.t === 'dup' && t.wire.length > 0) {
        t.wire.push({ ...t.wire[0] });
      } else if (s.t === 'ready') {
        ready = true;
      } else if (s.t === 'openFailed' && t.b.rx === IPC_ACKED) {
        t.resNeg.onOpenFailed(t.b, t.linkB, 'failed');
      }
      assert.ok(t.a.tries <= maxTries, 'at most maxTries questions');
      assert.ok(asked <= maxTries);
      assert.ok([IPC_INIT, IPC_SENT, IPC_OK, IPC_BAD].includes(t.a.tx), `requester state ${t.a.tx}`);
      assert.ok([IPC_INIT, IPC_ACKING, IPC_ACKED, IPC_BAD].includes(t.b.rx), `responder state ${t.b.rx}`);
      if (t.a.tx === IPC_OK) { okSeen = true; assert.ok(yesSent > 0, 'OK only after a yes arrived'); }
      if (t.a.tx === IPC_BAD) badSeen = true;
      if (badSeen) assert.equal(t.a.tx, IPC_BAD, 'BAD is final');
      // A yes can only come from a responder on this host that sees our GPU.
      if (okSeen && !badSeen) assert.ok(sameHost && visible);
    }
  }), { numRuns: 500 });
});

test('placeText: PCI domain:bus:slot in hex', () => {
  assert.equal(placeText({ domain: 0, bus: 0x3b, slot: 1 }), '0000:3b:01');
});

/** A HandleOpener over fake addresses, counting what is open. */
function opener() {
  const open = new Map();
  let next = 0x7000_0000n;
  return {
    open: (h) => { const base = next; next += 0x1000_0000n; open.set(base, h[0]); return base; },
    close: (base) => { if (!open.delete(base)) throw new Error(`closing ${base} twice`); },
    open_: open,
  };
}

test('handle cache: opened once per (peer, buffer), hits after, the owner\'s free closes it, a failed peer closes all of its', () => {
  const o = opener();
  const c = new DeviceHandleCache(4, o);
  const h = new Uint8Array(64).fill(1);
  const b1 = c.base(1, 10n, h);
  assert.equal(c.base(1, 10n, h), b1);
  assert.equal(c.base(1, 10n, h), b1);
  assert.equal(c.misses, 1);
  assert.equal(c.hits, 2);
  const b2 = c.base(2, 10n, h);
  assert.notEqual(b2, b1, 'the same buffer id from another peer is another allocation');
  assert.equal(c.invalidate(1, 10n), true);
  assert.equal(c.invalidate(1, 10n), false);
  assert.equal(o.open_.size, 1);
  c.base(1, 10n, h);
  assert.equal(c.misses, 3, 'reopened after the owner freed it');
  c.base(2, 11n, h);
  assert.equal(c.invalidatePeer(2), 2);
  assert.equal(o.open_.size, 1);
  c.clear();
  assert.equal(o.open_.size, 0);
  assert.equal(c.closed, 4);
});

test('handle cache: a failing close is counted, and the entry is gone anyway', () => {
  const c = new DeviceHandleCache(2, { open: () => 1n, close: () => { throw new Error('CUDA_ERROR_INVALID_VALUE'); } });
  c.base(0, 1n, new Uint8Array(64));
  c.clear();
  assert.equal(c.closeFailures, 1);
  assert.equal(c.size, 0);
});

test('property: the cache never holds more than its capacity open, evicts the least recently used, and closes each opened handle once', () => {
  const op = fc.oneof(
    fc.record({ t: fc.constant('get'), peer: fc.integer({ min: 0, max: 3 }), id: fc.integer({ min: 0, max: 5 }) }),
    fc.record({ t: fc.constant('free'), peer: fc.integer({ min: 0, max: 3 }), id: fc.integer({ min: 0, max: 5 }) }),
    fc.record({ t: fc.constant('fail'), peer: fc.integer({ min: 0, max: 3 }) }),
  );
  fc.assert(fc.property(fc.integer({ min: 1, max: 6 }), fc.array(op, { maxLength: 80 }), (cap, ops) => {
    const o = opener();
    const c = new DeviceHandleCache(cap, o);
    const model = []; // keys, least recently used first
    let opens = 0;
    for (const x of ops) {
      const key = `${x.peer}/${x.id}`;
      if (x.t === 'get') {
        const hit = model.includes(key);
        const before = c.misses;
        c.base(x.peer, BigInt(x.id), new Uint8Array(64));
        assert.equal(c.misses - before, hit ? 0 : 1);
        if (hit) model.splice(model.indexOf(key), 1); else opens++;
        model.push(key);
        if (model.length > cap) model.shift();
      } else if (x.t === 'free') {
        assert.equal(c.invalidate(x.peer, BigInt(x.id)), model.includes(key));
        if (model.includes(key)) model.splice(model.indexOf(key), 1);
      } else {
        const mine = model.filter((k) => k.startsWith(`${x.peer}/`));
        assert.equal(c.invalidatePeer(x.peer), mine.length);
        for (const k of mine) model.splice(model.indexOf(k), 1);
      }
      assert.equal(c.size, model.length);
      assert.ok(c.size <= cap);
      assert.equal(o.open_.size, model.length, 'exactly the cached handles are open');
      assert.equal(c.closed, opens - model.length, 'every other opened handle was closed, once');
    }
  }), { numRuns: 300 });
});
