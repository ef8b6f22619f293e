// An element-wise model of the reduction ops, written from their definition
// and nothing of the library's (tests compare railcomm's kernels and
// collectives against it): sum prod min max band bor bxor land lor on every
// element type railcomm reduces.
//
// - Integers: exact arithmetic in BigInt, then wrapped to the element's width
//   and signedness (two's complement; 64-bit types are bigint elements).
// - Floats: IEEE arithmetic, rounded to the element (Float32: once, from the
//   exact double result); min and max return NaN when either operand is NaN,
//   else the smaller (larger); on a tie, +0 against -0 included, the first
//   operand (the accumulator, in rank order) stays. Bitwise ops are not
//   defined on floats (the library refuses them).
// - land / lor: 1 when both (either) operands are non-zero, else 0; NaN is
//   non-zero, -0 is zero.

export const TYPES = [Int8Array, Uint8Array, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];
export const OPS = ['sum', 'prod', 'min', 'max', 'band', 'bor', 'bxor', 'land', 'lor'];
const BITWISE = new Set(['band', 'bor', 'bxor']);
const SIGNED = new Set([Int8Array, Int16Array, Int32Array, BigInt64Array]);

export const isFloat = (T) => T === Float32Array || T === Float64Array;
export const isBig = (T) => T === BigInt64Array || T === BigUint64Array;
/** Whether op is defined on elements of T. */
export const defined = (T, op) => !(isFloat(T) && BITWISE.has(op));

/** The op on two elements of T (numbers, or bigints for the 64-bit types). */
export function elementOp(T, op) {
  if (!defined(T, op)) throw new Error(`${op} is not defined on ${T.name}`);
  return isFloat(T) ? floatOp(T, op) : intOp(T, op);
}

function intOp(T, op) {
  const bits = T.BYTES_PER_ELEMENT * 8;
  const wrap = SIGNED.has(T) ? (x) => BigInt.asIntN(bits, x) : (x) => BigInt.asUintN(bits, x);
  const out = isBig(T) ? (x) => x : (x) => Number(x);
  const f = {
    sum: (u, v) => wrap(u + v),
    prod: (u, v) => wrap(u * v),
    min: (u, v) => (v < u ? v : u),
    max: (u, v) => (v > u ? v : u),
    band: (u, v) => wrap(u & v),
    bor: (u, v) => wrap(u | v),
    bxor: (u, v) => wrap(u ^ v),
    land: (u, v) => (u !== 0n && v !== 0n ? 1n : 0n),
    lor: (u, v) => (u !== 0n || v !== 0n ? 1n : 0n),
  }[op];
  return (u, v) => out(f(BigInt(u), BigInt(v)));
}

function floatOp(T, op) {
  const round = T === Float32Array ? Math.fround : (x) => x;
  const nonZero = (x) => x !== 0; // NaN !== 0
  return {
    sum: (u, v) => round(u + v),
    prod: (u, v) => round(u * v),
    min: (u, v) => (Number.isNaN(u) || Number.isNaN(v) ? NaN : v < u ? v : u),
    max: (u, v) => (Number.isNaN(u) || Number.isNaN(v) ? NaN : v > u ? v : u),
    land: (u, v) => (nonZero(u) && nonZero(v) ? 1 : 0),
    lor: (u, v) => (nonZero(u) || nonZero(v) ? 1 : 0),
  }[op];
}

/** A new T of a.length: a[i] op b[i]. */
export function combine(T, op, a, b) {
  const f = elementOp(T, op);
  const out = new T(a.length);
  for (let i = 0; i < a.length; i++) out[i] = f(a[i], b[i]);
  return out;
}

/** Operands folded left to right (rank order): ((x0 op x1) op x2) ... */
export function fold(T, op, operands) {
  let acc = T.from(operands[0]);
  for (const x of operands.slice(1)) acc = combine(T, op, acc, x);
  return acc;
}

/** Same elements? Floats by Object.is (NaN equals NaN whatever its payload; -0 differs from +0). */
export function sameElement(x, y) {
  return typeof x === 'bigint' ? x === y : Object.is(x, y);
}

/** The first index where got and want differ, or -1. */
export function firstDifference(got, want) {
  if (got.length !== want.length) return Math.min(got.length, want.length);
  for (let i = 0; i < got.length; i++) if (!sameElement(got[i], want[i])) return i;
  return -1;
}

/**
 * Values at the edges of T: zero (both signs for floats), one, minus one,
 * the extremes and their neighbours, powers of two around the width's halves,
 * and for floats the infinities, NaN, the smallest subnormal and numbers
 * whose products round. Every value is one T can hold (stored through a T).
 */
export function edges(T) {
  let xs;
  if (isFloat(T)) {
    xs = [0, -0, 1, -1, 0.5, -2.5, 3, 1e-3, 1 / 3, Math.PI, -Math.E, 2 ** 24 + 1, 2 ** 53 + 2, 1e308, -1e308, 3.4e38, -3.4e38, 1e-45, 5e-324, 2 ** -126,
      Infinity, -Infinity, NaN, Number.MAX_VALUE, Number.MIN_VALUE, 65504, 0.1, -0.7];
  } else {
    const bits = BigInt(T.BYTES_PER_ELEMENT * 8);
    const lo = SIGNED.has(T) ? -(1n << (bits - 1n)) : 0n;
    const hi = SIGNED.has(T) ? (1n << (bits - 1n)) - 1n : (1n << bits) - 1n;
    const set = new Set([0n, 1n, -1n, 2n, -2n, 3n, 7n, 255n, 256n, 65535n, 65536n, lo, lo + 1n, hi, hi - 1n, hi / 2n, lo / 2n,
      1n << (bits / 2n), (1n << (bits / 2n)) + 1n, (1n << (bits / 2n)) - 1n, 0x5an, 0xa5n, 12345n, -12345n]);
    xs = [...set].filter((x) => x >= lo && x <= hi);
    if (!isBig(T)) xs = xs.map(Number);
  }
  return [...T.from(xs)];
}
