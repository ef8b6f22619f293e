// The reduction kernels (JavaScript, and the native addon's vector loops)
// against an independent element-wise model (test/helpers/reduce-model.mjs):
// every op x every element type, all pairs of 8-bit values, every pair of
// edge values for the wider types, and random vectors past the native
// threshold as a property. The model is checked first against values worked
// out by hand.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { kernel } from '../../dist/native/kernels.js';
import { reduceInto } from '../../dist/comm/coll/ops.js';
import { loadNative, TYPE_CODES, OP_CODES } from '../../dist/native/addon.js';
import { TYPES, OPS, defined, elementOp, combine, edges, firstDifference, isBig, isFloat } from '../helpers/reduce-model.mjs';
import { needAddon } from '../helpers/requires.mjs';

/** Below this many elements kernel() stays in JavaScript (native/kernels.ts NATIVE_MIN is 1024; slices of 1000 stay under it). */
const JS_SLICE = 1000;

const PAIRS = TYPES.flatMap((T) => OPS.filter((op) => defined(T, op)).map((op) => [T, op]));

function expectSame(got, want, what, a, b) {
  const i = firstDifference(got, want);
  if (i >= 0) assert.fail(`${what}: element ${i}: ${a?.[i]} op ${b?.[i]} gave ${got[i]}, the model says ${want[i]}`);
}

/** All pairs of the values in xs, as two arrays of T. */
function allPairs(T, xs) {
  const a = new T(xs.length * xs.length), b = new T(xs.length * xs.length);
  for (let i = 0; i < xs.length; i++) for (let j = 0; j < xs.length; j++) { a[i * xs.length + j] = xs[i]; b[i * xs.length + j] = xs[j]; }
  return [a, b];
}

/** Operand pairs for T: every pair of 8-bit values, else every pair of edge values. */
function operands(T) {
  if (T.BYTES_PER_ELEMENT === 1) return allPairs(T, [...new T(256).keys()].map((i) => new T([i])[0]));
  return allPairs(T, edges(T));
}

/** kernel() in slices short enough to stay in JavaScript, each at its own offsets. */
function jsKernel(op, out, a, b) {
  const k = kernel(op, a);
  for (let s = 0; s < a.length; s += JS_SLICE) k(out, s, a, s, b, s, Math.min(JS_SLICE, a.length - s));
}

test('the model agrees with values worked out by hand', () => {
  const f = (T, op, u, v) => elementOp(T, op)(u, v);
  assert.equal(f(Int8Array, 'sum', 127, 1), -128);
  assert.equal(f(Int8Array, 'prod', -128, -1), -128);
  assert.equal(f(Uint8Array, 'prod', 16, 16), 0);
  assert.equal(f(Uint8Array, 'sum', 200, 100), 44);
  assert.equal(f(Int16Array, 'bxor', -1, 0x7fff), -32768);
  assert.equal(f(Uint16Array, 'band', 0xffff, 0x1234), 0x1234);
  assert.equal(f(Int32Array, 'prod', 123456789, 987654321), -67153019); // 121932631112635269 mod 2^32, as int32
  assert.equal(f(Uint32Array, 'prod', 0xffffffff, 0xffffffff), 1);
  assert.equal(f(Uint32Array, 'sum', 0xffffffff, 2), 1);
  assert.equal(f(Int32Array, 'min', -2147483648, 2147483647), -2147483648);
  assert.equal(f(BigInt64Array, 'sum', 2n ** 63n - 1n, 1n), -(2n ** 63n));
  assert.equal(f(BigInt64Array, 'prod', 2n ** 32n, 2n ** 32n), 0n);
  assert.equal(f(BigUint64Array, 'sum', 2n ** 64n - 1n, 2n), 1n);
  assert.equal(f(BigUint64Array, 'bor', 1n, 2n ** 63n), 2n ** 63n + 1n);
  assert.equal(f(BigInt64Array, 'land', 4n, 2n), 1n);
  assert.equal(f(BigInt64Array, 'land', 4n, 0n), 0n);
  assert.equal(f(BigUint64Array, 'lor', 0n, 0n), 0n);
  assert.equal(f(Float32Array, 'sum', 16777216, 1), 16777216);
  assert.equal(f(Float32Array, 'prod', 3.4e38, 10), Infinity);
  assert.equal(f(Float64Array, 'sum', 0.1, 0.2), 0.30000000000000004);
  assert.ok(Number.isNaN(f(Float64Array, 'min', NaN, 1)) && Number.isNaN(f(Float64Array, 'max', 1, NaN)));
  assert.ok(Object.is(f(Float64Array, 'min', 0, -0), 0) && Object.is(f(Float64Array, 'min', -0, 0), -0), 'a tie keeps the first operand');
  assert.ok(Object.is(f(Float64Array, 'sum', -0, -0), -0) && Object.is(f(Float64Array, 'sum', -0, 0), 0));
  assert.equal(f(Float64Array, 'land', NaN, 2), 1, 'NaN is non-zero');
  assert.equal(f(Float32Array, 'lor', -0, 0), 0, '-0 is zero');
  assert.throws(() => elementOp(Float64Array, 'band'));
});

test('JavaScript kernels equal the model: every op x type, all 8-bit pairs, every pair of edge values', () => {
  for (const [T, op] of PAIRS) {
    const [a, b] = operands(T);
    const out = new T(a.length);
    jsKernel(op, out, a, b);
    expectSame(out, combine(T, op, a, b), `${T.name} ${op}`, a, b);
  }
});

test('in place, as the collectives accumulate (reduceInto), and at offsets', () => {
  for (const [T, op] of PAIRS) {
    const [a, b] = operands(T);
    const n = Math.min(a.length, 900);
    const acc = a.slice(0, n);
    reduceInto(op, acc, b.subarray(0, n), n);
    expectSame(acc, combine(T, op, a.subarray(0, n), b.subarray(0, n)), `${T.name} ${op} reduceInto`, a, b);
    // out, a and b at three different offsets into longer arrays; nothing written outside [oo, oo + n).
    const m = Math.min(n - 29, 333);
    const out = new T(m + 7).fill(isBig(T) ? 5n : 5);
    kernel(op, a)(out, 3, a, 11, b, 29, m);
    const want = combine(T, op, a.subarray(11, 11 + m), b.subarray(29, 29 + m));
    expectSame(out.subarray(3, 3 + m), want, `${T.name} ${op} at offsets`);
    for (const i of [0, 1, 2, m + 3, m + 4, m + 5, m + 6]) assert.equal(out[i], isBig(T) ? 5n : 5, `${T.name} ${op}: element ${i} outside the range was written`);
  }
});

const native = loadNative();

test('native kernels equal the model for every pair the addon computes, and kernel() hands long vectors to them', needAddon(), () => {
  const have = [];
  for (const [T, op] of PAIRS) {
    const t = TYPE_CODES.indexOf(T.name), o = OP_CODES.indexOf(op);
    const [a0, b0] = operands(T);
    // At least a few thousand elements, so kernel() dispatches to the addon too.
    const reps = Math.ceil(4096 / a0.length);
    const a = new T(a0.length * reps), b = new T(a0.length * reps);
    for (let r = 0; r < reps; r++) { a.set(a0, r * a0.length); b.set(b0, r * a0.length); }
    const want = combine(T, op, a, b);
    if (t >= 0 && o >= 0 && native.reduce(t, o, a, 0, a, 0, b, 0, 0)) {
      have.push(`${T.name} ${op}`);
      const out = new T(a.length);
      assert.equal(native.reduce(t, o, out, 0, a, 0, b, 0, a.length), true);
      expectSame(out, want, `native ${T.name} ${op}`, a, b);
    }
    const viaKernel = new T(a.length);
    kernel(op, a)(viaKernel, 0, a, 0, b, 0, a.length);
    expectSame(viaKernel, want, `kernel() ${T.name} ${op} on ${a.length} elements`, a, b);
  }
  // The addon computes the integer ops but the 32-bit products, and float sums and products (addon.ts, reduce.cc).
  for (const pair of ['Int8Array sum', 'Uint16Array bxor', 'Int32Array min', 'BigInt64Array prod', 'BigUint64Array band', 'Float32Array sum', 'Float64Array prod']) {
    assert.ok(have.includes(pair), `the addon has ${pair}`);
  }
});

/** Random elements of T, edges mixed in. */
function element(T) {
  const edge = fc.constantFrom(...edges(T));
  let any;
  if (T === Float64Array) any = fc.double();
  else if (T === Float32Array) any = fc.float();
  else if (isBig(T)) {
    const bits = 64n;
    any = T === BigInt64Array ? fc.bigInt({ min: -(1n << (bits - 1n)), max: (1n << (bits - 1n)) - 1n }) : fc.bigInt({ min: 0n, max: (1n << bits) - 1n });
  } else {
    const probe = new T([-1])[0];
    const bits = T.BYTES_PER_ELEMENT * 8;
    any = probe < 0 ? fc.integer({ min: -(2 ** (bits - 1)), max: 2 ** (bits - 1) - 1 }) : fc.integer({ min: 0, max: 2 ** bits - 1 });
  }
  return fc.oneof({ arbitrary: any, weight: 4 }, { arbitrary: edge, weight: 1 });
}

test('property: random vectors up to 3000 elements (past the native threshold), every op x type each run', () => {
  for (const [T, op] of PAIRS) {
    fc.assert(fc.property(fc.array(fc.tuple(element(T), element(T)), { maxLength: 3000, size: 'max' }), fc.nat({ max: 5 }), (pairs, off) => {
      const n = pairs.length;
      const a = new T(n + off), b = new T(n + off);
      pairs.forEach(([u, v], i) => { a[off + i] = u; b[off + i] = v; });
      const out = new T(n);
      kernel(op, a)(out, 0, a, off, b, off, n);
      expectSame(out, combine(T, op, a.subarray(off), b.subarray(off)), `${T.name} ${op} n=${n}`, a.subarray(off), b.subarray(off));
    }), { numRuns: 4 });
  }
});

test('every type and op is covered: 9 ops on integers, 6 on floats', () => {
  assert.equal(PAIRS.length, 8 * 9 + 2 * 6);
  for (const T of TYPES) assert.equal(PAIRS.filter(([U]) => U === T).length, isFloat(T) ? 6 : 9, T.name);
});
