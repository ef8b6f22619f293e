// Pure logic of one-sided communication: the target's lock queue, applying
// accumulates and atomics (shared memory with Atomics and private memory give
// the same results as a plain model), remote keys and the wire codec.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LockTable } from '../../dist/proto/rma/locks.js';
import { LOCK_EXCLUSIVE as X, LOCK_SHARED as S, encodeAtomic, atomicOp, atomicType, atomicOpId, tgtOffset, tgtRegion, encodeGet, getLength } from '../../dist/proto/rma/wire.js';
import { applyAccumulate, applyAtomic, OP_CSWAP, T_I8, T_U8, T_I16, T_U16, T_I32, T_U32, T_F32, T_F64, T_I64, T_U64, TYPE_SIZE } from '../../dist/proto/rma/apply.js';
import { Region, RegionTable, packRkey, unpackRkey, SHARE_HOST } from '../../dist/proto/rma/region.js';
import { elementOp, defined, firstDifference, isBig, isFloat } from '../helpers/reduce-model.mjs';

const ranks = (gs) => gs.map((g) => g.rank);

test('locks: exclusive excludes, shared share, grants are first come first served', () => {
  const t = new LockTable();
  assert.deepEqual(ranks(t.request(1, { rank: 0, mode: S, opId: 1 })), [0]);
  assert.deepEqual(ranks(t.request(1, { rank: 1, mode: S, opId: 2 })), [1]);
  assert.deepEqual(ranks(t.request(1, { rank: 2, mode: X, opId: 3 })), []);
  // A shared request behind a queued exclusive one waits (writers do not starve).
  assert.deepEqual(ranks(t.request(1, { rank: 3, mode: S, opId: 4 })), []);
  assert.deepEqual(t.release(1, 0), []);
  assert.deepEqual(ranks(t.release(1, 1)), [2]);
  assert.deepEqual(ranks(t.release(1, 2)), [3]);
  assert.equal(t.release(1, 2), null, 'releasing what one does not hold');
  assert.deepEqual(t.holders(1), { exclusive: -1, shared: [3], queued: 0 });
  // Other regions are independent.
  assert.deepEqual(ranks(t.request(2, { rank: 0, mode: X, opId: 5 })), [0]);
});

test('locks: a dead holder releases, its queued requests vanish', () => {
  const t = new LockTable();
  t.request(7, { rank: 1, mode: X, opId: 1 });
  t.request(7, { rank: 1, mode: S, opId: 2 });
  t.request(7, { rank: 2, mode: X, opId: 3 });
  const out = t.dropRank(1);
  assert.deepEqual(out.map((o) => [o.region, ranks(o.granted)]), [[7, [2]]]);
  assert.deepEqual(t.holders(7), { exclusive: 2, shared: [], queued: 0 });
});

test('locks: a freed region hands back its queued requests (the engine answers each with an error)', () => {
  const t = new LockTable();
  t.request(4, { rank: 1, mode: X, opId: 1 });
  t.request(4, { rank: 2, mode: S, opId: 2 });
  t.request(4, { rank: 3, mode: X, opId: 3 });
  assert.deepEqual(ranks(t.dropRegion(4)), [2, 3]);
  assert.deepEqual(t.holders(4), { exclusive: -1, shared: [], queued: 0 });
  assert.deepEqual(t.dropRegion(4), []);
});

test('locks: property: never an exclusive holder together with another holder, and every request is granted once', () => {
  fc.assert(fc.property(fc.array(fc.record({ rank: fc.integer({ min: 0, max: 5 }), mode: fc.constantFrom(X, S) }), { maxLength: 40, size: 'max' }), fc.array(fc.nat(), { maxLength: 80, size: 'max' }), (reqs, picks) => {
    const t = new LockTable();
    const holding = new Set();
    const waiting = new Set();
    let granted = 0;
    const grant = (gs) => { for (const g of gs) { assert.ok(!holding.has(g.rank)); holding.add(g.rank); waiting.delete(g.rank); granted++; } };
    let i = 0;
    for (const r of reqs) {
      if (holding.has(r.rank) || waiting.has(r.rank)) continue; // one lock per rank and target, as the window enforces
      waiting.add(r.rank);
      grant(t.request(0, { ...r, opId: i++ }));
      const h = t.holders(0);
      assert.ok(h.exclusive < 0 || h.shared.length === 0);
      if (picks.length > 0 && holding.size > 0) {
        const who = [...holding][picks.shift() % holding.size];
        holding.delete(who);
        grant(t.release(0, who));
      }
    }
    while (holding.size > 0) { const who = [...holding][0]; holding.delete(who); grant(t.release(0, who)); }
    assert.equal(waiting.size, 0, 'everyone queued was granted in the end');
    assert.equal(granted, i);
  }));
});

// README: locks are granted first come first served, a shared request never
// overtakes a queued exclusive one. As a model: one FIFO queue per region whose
// head is granted as soon as it is compatible with the holders (exclusive: no
// holder; shared: no exclusive holder), the next ones after it in turn.
test('locks: property: grants come in request order, each as soon as the requests before it and the holders allow (FIFO model), dead ranks included', () => {
  const step = fc.oneof(
    { arbitrary: fc.record({ kind: fc.constant('request'), region: fc.nat(1), rank: fc.nat(5), mode: fc.constantFrom(X, S) }), weight: 3 },
    { arbitrary: fc.record({ kind: fc.constant('release'), region: fc.nat(1), pick: fc.nat() }), weight: 2 },
    { arbitrary: fc.record({ kind: fc.constant('die'), rank: fc.nat(5) }), weight: 1 },
  );
  fc.assert(fc.property(fc.array(step, { maxLength: 60, size: 'max' }), (steps) => {
    const t = new LockTable();
    const m = [0, 1].map(() => ({ x: -1, s: new Set(), queue: [] }));
    const drain = (r) => {
      const out = [];
      while (r.queue.length > 0 && r.x < 0) {
        const head = r.queue[0];
        if (head.mode === X) { if (r.s.size > 0) break; r.x = head.rank; } else r.s.add(head.rank);
        out.push(r.queue.shift());
      }
      return out;
    };
    const busy = (rank, region) => m[region].x === rank || m[region].s.has(rank) || m[region].queue.some((q) => q.rank === rank);
    const ids = (gs) => gs.map((g) => g.opId);
    const order = [[], []];
    let opId = 0;
    for (const st of steps) {
      if (st.kind === 'request') {
        if (busy(st.rank, st.region)) continue; // one lock per rank and target, as the window enforces
        const req = { rank: st.rank, mode: st.mode, opId: opId++ };
        m[st.region].queue.push(req);
        const got = t.request(st.region, req);
        assert.deepEqual(ids(got), ids(drain(m[st.region])), `request ${req.opId}`);
        order[st.region].push(...ids(got));
      } else if (st.kind === 'release') {
        const r = m[st.region];
        const held = r.x >= 0 ? [r.x] : [...r.s];
        if (held.length === 0) { assert.equal(t.release(st.region, 0), null); continue; }
        const who = held[st.pick % held.length];
        if (r.x === who) r.x = -1; else r.s.delete(who);
        const got = t.release(st.region, who);
        assert.deepEqual(ids(got), ids(drain(r)), `release by ${who}`);
        order[st.region].push(...ids(got));
      } else {
        const want = [];
        for (const [region, r] of m.entries()) {
          r.queue = r.queue.filter((q) => q.rank !== st.rank);
          if (r.x === st.rank) r.x = -1;
          r.s.delete(st.rank);
          const g = drain(r);
          if (g.length > 0) want.push([region, ids(g)]);
          order[region].push(...ids(g));
        }
        // (Regions in any order: each is its own queue.)
        const got = t.dropRank(st.rank).map((o) => [o.region, ids(o.granted)]).sort((x, y) => x[0] - y[0]);
        assert.deepEqual(got, want, `rank ${st.rank} dies`);
      }
      for (const [region, r] of m.entries()) assert.deepEqual(t.holders(region), { exclusive: r.x, shared: [...r.s], queued: r.queue.length });
    }
    // First come, first served: within a region, grants follow request order.
    for (const o of order) assert.deepEqual(o, [...o].sort((a, b) => a - b));
  }), { numRuns: 300 });
});

const CTORS = { [T_I8]: Int8Array, [T_U8]: Uint8Array, [T_I16]: Int16Array, [T_U16]: Uint16Array, [T_I32]: Int32Array, [T_U32]: Uint32Array, [T_F32]: Float32Array, [T_F64]: Float64Array, [T_I64]: BigInt64Array, [T_U64]: BigUint64Array };
// Accumulate's ops in their wire order (apply.ts OP_NAMES): the nine reduction ops, then replace.
const OPS = ['sum', 'prod', 'min', 'max', 'band', 'bor', 'bxor', 'land', 'lor', 'replace'];

/** The element-wise model (test/helpers/reduce-model.mjs), plus replace. */
const model = (T, op) => (op === 'replace' ? (_a, b) => b : elementOp(T, op));

test('accumulate: shared (Atomics) and private memory both equal the element-wise model, every type x op each run, any alignment of the operand', () => {
  const types = Object.keys(CTORS).map(Number);
  const int = fc.oneof(fc.integer({ min: -300, max: 300 }), fc.constantFrom(0, -1, 127, -128, 255, 32767, -32768, 65535, 2 ** 31 - 1, -(2 ** 31), 2 ** 32 - 1, 2 ** 53 - 1));
  const dbl = fc.oneof(fc.integer({ min: -300, max: 300 }), fc.double(), fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 0.5));
  fc.assert(fc.property(fc.integer({ min: 1, max: 9 }), fc.array(int, { minLength: 18, maxLength: 18 }), fc.array(dbl, { minLength: 18, maxLength: 18 }), fc.integer({ min: 0, max: 7 }), (n, ints, dbls, skew) => {
    for (const type of types) {
      const T = CTORS[type];
      const size = TYPE_SIZE[type];
      const vals = isFloat(T) ? dbls : isBig(T) ? ints.map(BigInt) : ints;
      // Stored through T: wrapped to the element as any value a program holds.
      const operand = T.from(vals.slice(0, n));
      const init = T.from(vals.slice(9, 18));
      // The operand arrives at any byte alignment (inside a received frame).
      const carrier = new Uint8Array(operand.byteLength + 8);
      carrier.set(new Uint8Array(operand.buffer), skew);
      const bytes = carrier.subarray(skew, skew + operand.byteLength);
      for (const [code, op] of OPS.entries()) {
        if (!defined(T, op) && op !== 'replace') continue;
        const f = model(T, op);
        for (const Buf of [ArrayBuffer, SharedArrayBuffer]) {
          const region = new Uint8Array(new Buf(8 + 9 * size));
          const target = new T(region.buffer, 8, 9);
          target.set(init);
          applyAccumulate(region, 8, bytes, type, code);
          const want = T.from(init, (x, i) => (i < n ? f(x, operand[i]) : x));
          const i = firstDifference(target, want);
          if (i >= 0) assert.fail(`${T.name} ${op} ${Buf.name} [${i}]: ${init[i]} ${op} ${operand[i]} gave ${target[i]}, the model says ${want[i]}`);
        }
      }
    }
  }), { numRuns: 60 });
});

test('atomics: fetch-and-op and compare-and-swap return the old value and store the model\'s', () => {
  const region = new Uint8Array(new SharedArrayBuffer(16));
  const v = new DataView(region.buffer);
  v.setInt32(0, -5, true);
  assert.equal(applyAtomic(region, 0, T_I32, 0, 7, 0), -5);
  assert.equal(v.getInt32(0, true), 2);
  assert.equal(applyAtomic(region, 0, T_I32, OP_CSWAP, 9, 3), 2, 'miss');
  assert.equal(v.getInt32(0, true), 2);
  assert.equal(applyAtomic(region, 0, T_I32, OP_CSWAP, 9, 2), 2, 'hit');
  assert.equal(v.getInt32(0, true), 9);
  v.setFloat64(8, 1.5, true);
  assert.equal(applyAtomic(region, 8, T_F64, 0, 0.25, 0), 1.5);
  assert.equal(v.getFloat64(8, true), 1.75);
  assert.equal(applyAtomic(region, 8, T_F64, OP_CSWAP, 3, 1.75), 1.75);
  assert.equal(v.getFloat64(8, true), 3);
  const priv = new Uint8Array(8);
  assert.equal(applyAtomic(priv, 0, T_U64, 0, 2n ** 64n - 1n, 0n), 0n);
  assert.equal(applyAtomic(priv, 0, T_U64, 0, 2n, 0n), 2n ** 64n - 1n);
  assert.equal(new DataView(priv.buffer).getBigUint64(0, true), 1n, 'wraps like the element');
});

test('rkeys: pack/unpack round trip; bad versions and lengths are refused', () => {
  const table = new RegionTable();
  const buf = new Uint8Array(new ArrayBuffer(100), 3, 50);
  const a = table.register(buf, 0, null);
  // Windows over the same bytes are separate windows (their own locks): separate regions.
  const twin = table.register(buf, 0, null);
  assert.notEqual(twin.id, a.id, 'same bytes, another region');
  table.deregister(a);
  assert.equal(table.get(a.id), undefined);
  assert.equal(table.get(twin.id), twin, 'freeing one leaves the other');
  const b = table.register(buf, 0, null);
  assert.notEqual(b.id, a.id, 'ids are never reused');
  const seg = new Region(9, new Uint8Array(2 ** 20), SHARE_HOST, 'railcomm-1-w0');
  const k = unpackRkey(packRkey(seg, 'host/boot'));
  assert.deepEqual({ ...k, pid: 0 }, { share: SHARE_HOST, align: 0, id: 9, length: 2 ** 20, pid: 0, hostKey: 'host/boot', segment: 'railcomm-1-w0', rails: [] });
  // Rails' keys (native one-sided operations) ride after the text, and a fixed-size slot's zero padding reads as none.
  seg.rails.push({ rail: 'ofi:tcp;ofi_rxm/lo', packed: new Uint8Array([1, 2, 3, 4]), release() {} }, { rail: 'x', packed: new Uint8Array(24).fill(7), release() {} });
  const packed = packRkey(seg, 'host/boot');
  const slot = new Uint8Array(256); slot.set(packed);
  for (const b of [packed, slot]) {
    assert.deepEqual(unpackRkey(b).rails.map((r) => [r.rail, [...r.packed]]), [['ofi:tcp;ofi_rxm/lo', [1, 2, 3, 4]], ['x', new Array(24).fill(7)]]);
  }
  assert.throws(() => unpackRkey(packed.subarray(0, packed.length - 3)), { code: 'ERR_PROTOCOL' }, 'rail keys cut short');
  assert.deepEqual(unpackRkey(new Uint8Array(256).fill(0).map((_, i) => (i === 0 ? 1 : 0))).rails, [], 'an all-zero slot has no rail keys');
  assert.equal(unpackRkey(packRkey(b, 'x')).align, 3);
  const bad = packRkey(b, 'x'); bad[0] = 99;
  assert.throws(() => unpackRkey(bad), { code: 'ERR_PROTOCOL' });
  assert.throws(() => unpackRkey(new Uint8Array(5)), { code: 'ERR_PROTOCOL' });
});

test('wire: headers round-trip, offsets above 4 GiB', () => {
  const v = new DataView(new ArrayBuffer(64));
  encodeAtomic(v, 5, 2 ** 33 + 8, 77, 3, T_U64);
  assert.deepEqual([tgtRegion(v, 0), tgtOffset(v, 0), atomicOpId(v, 0), atomicOp(v, 0), atomicType(v, 0)], [5, 2 ** 33 + 8, 77, 3, T_U64]);
  encodeGet(v, 1, 12, 2, 2 ** 40);
  assert.equal(getLength(v, 0), 2 ** 40);
});

test('atomics: regions at an offset in their buffer, several buffers in turn, and misalignment refused', () => {
  // applyAtomic keeps whole-buffer views of the last buffer; switching buffers
  // and regions that start inside a buffer must still hit the right element.
  const a = new SharedArrayBuffer(64);
  const b = new ArrayBuffer(64);
  const ra = new Uint8Array(a, 16, 32);
  const rb = new Uint8Array(b, 8, 24);
  for (let i = 0; i < 3; i++) {
    assert.equal(applyAtomic(ra, 8, T_I64, 0, 5n, 0n), BigInt(5 * i));
    assert.equal(applyAtomic(rb, 4, T_U32, 0, 2, 0), 2 * i);
  }
  assert.equal(new DataView(a).getBigInt64(24, true), 15n);
  assert.equal(new DataView(b).getUint32(12, true), 6);
  assert.equal(new DataView(a).getBigInt64(16, true), 0n, 'the neighbour is untouched');
  assert.throws(() => applyAtomic(new Uint8Array(a, 4, 16), 0, T_I64, 0, 1n, 0n), RangeError);
  assert.throws(() => applyAtomic(new Uint8Array(b, 2, 16), 0, T_I32, 0, 1, 0), RangeError);
  assert.throws(() => applyAtomic(new Uint8Array(b, 4, 16), 0, T_F64, 0, 1, 0), RangeError);
});

test('accumulate min and max on floats: NaN from either side propagates, as allreduce\'s does', () => {
  for (const op of [2, 3]) { // min, max
    const region = new Uint8Array(new ArrayBuffer(32));
    const target = new Float64Array(region.buffer, 0, 4);
    target.set([1, NaN, 5, NaN]);
    const src = new Float64Array([NaN, 2, 3, NaN]);
    applyAccumulate(region, 0, new Uint8Array(src.buffer), T_F64, op);
    assert.ok(Number.isNaN(target[0]) && Number.isNaN(target[1]) && Number.isNaN(target[3]), `${op}: ${[...target]}`);
    assert.equal(target[2], op === 2 ? 3 : 5);
  }
});

test('typeOfArray: each typed array kind by its built-in tag, a Buffer as bytes; clamped bytes, DataView and look-alikes refused; accumulate op names', async () => {
  const a = await import('../../dist/proto/rma/apply.js');
  const kinds = [[Int8Array, a.T_I8], [Uint8Array, a.T_U8], [Int16Array, a.T_I16], [Uint16Array, a.T_U16], [Int32Array, a.T_I32],
    [Uint32Array, a.T_U32], [Float32Array, a.T_F32], [Float64Array, a.T_F64], [BigInt64Array, a.T_I64], [BigUint64Array, a.T_U64]];
  for (const [C, t] of kinds) assert.equal(a.typeOfArray(new C(2)), t, C.name);
  assert.equal(a.typeOfArray(Buffer.alloc(4)), a.T_U8);
  assert.equal(a.typeOfArray(new Uint8ClampedArray(4)), -1);
  assert.equal(a.typeOfArray(new DataView(new ArrayBuffer(8))), -1);
  assert.equal(a.typeOfArray({ [Symbol.toStringTag]: 'Float64Array', length: 1 }), -1);
  for (let code = 0; code <= a.OP_REPLACE; code++) assert.equal(a.accumulateOpCode(a.OP_NAMES[code]), code);
  assert.equal(a.accumulateOpCode('no_op'), -1);
  assert.equal(a.accumulateOpCode('SUM'), -1);
  assert.equal(a.accumulateOpCode(0), -1);
});

// An operation's promise is made when first asked for (op.ts): a put that completes within its call
// never makes one, and one asked for late settles as it would have.
test('RmaOp: settled before its promise is asked for, it resolves (old value for atomics) or rejects with its failure; asked first, it settles later', async () => {
  const { RmaOp, K_PUT, K_ATOMIC } = await import('../../dist/proto/rma/op.js');
  const { RailcommError, ErrorCode } = await import('../../dist/core/errors.js');
  const quiet = [];
  const engine = { native: null, flushFinished() {}, settled() {}, failedQuietly: (target, p) => { quiet.push(p); p.catch(() => {}); } };
  const op = (kind) => new RmaOp(engine, kind, 1, 0, 0, new Uint8Array(8), 8, 0, 1n, 0n);

  const put = op(K_PUT);
  put.issued = true;
  put.check();
  assert.equal(put.settled, true);
  assert.equal(put.failed, false);
  assert.equal(await put.promise, 0);
  assert.equal(put.promise, put.promise, 'one promise, however often asked');

  const fadd = op(K_ATOMIC);
  fadd.railValue(41n);
  fadd.issued = true;
  fadd.check();
  assert.equal(await fadd.promise, 41n, 'the old value');

  const gone = new RailcommError(ErrorCode.PEER_FAILED, 'target gone');
  const failed = op(K_PUT);
  failed.fail(gone);
  assert.equal(failed.failed, true);
  assert.equal(quiet.length, 1, "a data operation whose target failed is marked handled (its flush reports it)");
  assert.equal(quiet[0], failed.promise, 'the promise marked is the one handed out');
  await assert.rejects(failed.promise, (e) => e === gone);

  const later = op(K_ATOMIC);
  const p = later.promise;
  later.railValue(7n);
  later.issued = true;
  later.check();
  assert.equal(await p, 7n, 'asked first, resolved when it completes');
  const bad = op(K_PUT);
  const q = bad.promise;
  bad.fail(new RailcommError(ErrorCode.INVALID_ARG, 'refused'));
  await assert.rejects(q, /refused/);
});
