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
  fc.assert(fc.property(fc.array(fc.record({ rank: fc.integer({ min: 0, max: 5 }), mode: fc.constantFrom(X, S) }), { maxLength: 40 }), fc.array(fc.nat(), { maxLength: 80 }), (reqs, picks) => {
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

const CTORS = { [T_I8]: Int8Array, [T_U8]: Uint8Array, [T_I16]: Int16Array, [T_U16]: Uint16Array, [T_I32]: Int32Array, [T_U32]: Uint32Array, [T_F32]: Float32Array, [T_F64]: Float64Array, [T_I64]: BigInt64Array, [T_U64]: BigUint64Array };
const OPS = ['sum', 'prod', 'min', 'max', 'band', 'bor', 'bxor', 'land', 'lor', 'replace'];

function model(T, op, a, b) {
  const big = typeof a === 'bigint';
  const r = (() => {
    switch (op) {
      case 'sum': return a + b;
      case 'prod': return big ? a * b : (T === Float32Array || T === Float64Array ? a * b : Number(BigInt.asIntN(64, BigInt(a) * BigInt(b))));
      case 'min': return b < a ? b : a;
      case 'max': return b > a ? b : a;
      case 'band': return a & b;
      case 'bor': return a | b;
      case 'bxor': return a ^ b;
      case 'land': return (big ? a !== 0n && b !== 0n : a !== 0 && b !== 0) ? 1 : 0;
      case 'lor': return (big ? a !== 0n || b !== 0n : a !== 0 || b !== 0) ? 1 : 0;
      default: return b;
    }
  })();
  const out = new T(1);
  out[0] = big && typeof r === 'number' ? BigInt(r) : r;
  return out[0];
}

test('accumulate: shared (Atomics) and private memory both equal the element-wise model, any alignment of the operand', () => {
  const types = Object.keys(CTORS).map(Number);
  fc.assert(fc.property(fc.constantFrom(...types), fc.integer({ min: 0, max: 9 }), fc.array(fc.integer({ min: -300, max: 300 }), { minLength: 1, maxLength: 9 }), fc.array(fc.integer({ min: -300, max: 300 }), { minLength: 9, maxLength: 9 }), fc.integer({ min: 0, max: 7 }), (type, opi, src, init, skew) => {
    const T = CTORS[type];
    const op = OPS[opi];
    const float = T === Float32Array || T === Float64Array;
    if (float && (op === 'band' || op === 'bor' || op === 'bxor')) return;
    const conv = (v) => (T === BigInt64Array || T === BigUint64Array ? BigInt(v) : v);
    const n = src.length;
    const size = TYPE_SIZE[type];
    const operand = new T(src.map(conv));
    // The operand arrives at any byte alignment (inside a received frame).
    const carrier = new Uint8Array(operand.byteLength + 8);
    carrier.set(new Uint8Array(operand.buffer), skew);
    const bytes = carrier.subarray(skew, skew + operand.byteLength);
    for (const Buf of [ArrayBuffer, SharedArrayBuffer]) {
      const region = new Uint8Array(new Buf(8 + 9 * size));
      const target = new T(region.buffer, 8, 9);
      for (let i = 0; i < 9; i++) target[i] = conv(init[i]);
      const before = target.slice();
      applyAccumulate(region, 8, bytes, type, opi === 9 ? 9 : opi);
      for (let i = 0; i < 9; i++) {
        const want = i < n ? model(T, op, before[i], operand[i]) : before[i];
        assert.ok(Object.is(target[i], want) || target[i] === want, `${T.name} ${op} ${Buf.name} [${i}]: ${target[i]} vs ${want}`);
      }
    }
  }));
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
  assert.deepEqual({ ...k, pid: 0 }, { share: SHARE_HOST, align: 0, id: 9, length: 2 ** 20, pid: 0, hostKey: 'host/boot', segment: 'railcomm-1-w0' });
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
