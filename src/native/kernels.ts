// The element loops of the collectives and of one-sided accumulate on private
// memory: reduction kernels, out[i] = a[i] (op) b[i] for i < n, and copies.
// V8's inline caches belong to a call site, so one loop fed several
// typed-array kinds goes megamorphic: 1 MiB of doubles then
// took 5.3 ms instead of 0.09 (measured). Each kernel is therefore its own
// function, generated once from one template and unrolled by 8 (1.8x faster
// than the plain loop on 1 MiB: more independent loads in flight). Long
// vectors go to the native addon where it is built (vector instructions, and
// full-speed copies into shared memory), for the pairs it computes bit for
// bit as these loops do.

import { loadNative, OP_CODES, TYPE_CODES } from './addon.js';
import { copyElements } from './copy.js';

/** The element-wise operations (the collectives' reduction ops, and one-sided accumulate's). */
export type Op = 'sum' | 'prod' | 'min' | 'max' | 'band' | 'bor' | 'bxor' | 'land' | 'lor';
/** The typed arrays they combine. */
export type ReduceArray = Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array
  | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

/** From this many elements a reduction goes to the addon (a call costs about 0.25 us; the loop about 0.5 ns an element). */
const NATIVE_MIN = 1024;

/**
 * out[oo + i] = a[ao + i] (op) b[bo + i] for i < n. Offsets instead of
 * subarray() views: a view per operand was most of what a shared allreduce
 * allocated, and the young-generation collections it caused cost 1-2 ms each
 * (both ranks wait). out may be a itself (in-place accumulation).
 */
export type Kernel = (out: ReduceArray, oo: number, a: ReduceArray, ao: number, b: ReduceArray, bo: number, n: number) => void;

type Pair<T> = (u: T, v: T) => T;

/**
 * Each op on one element pair, u from a and v from b. The generated kernels
 * embed these functions' source (V8 inlines them); the fallback calls them.
 */
const NUM: Record<Op, Pair<number>> = {
  sum: (u, v) => u + v,
  prod: (u, v) => u * v,
  // NaN propagates whichever side it is on (IEEE min/max, unlike C's a < b ? a : b).
  min: (u, v) => (v < u || v !== v ? v : u),
  max: (u, v) => (v > u || v !== v ? v : u),
  band: (u, v) => u & v,
  bor: (u, v) => u | v,
  bxor: (u, v) => u ^ v,
  land: (u, v) => (u !== 0 && v !== 0 ? 1 : 0),
  lor: (u, v) => (u !== 0 || v !== 0 ? 1 : 0),
};
const BIG: Record<Op, Pair<bigint>> = {
  sum: (u, v) => u + v,
  prod: (u, v) => u * v,
  min: (u, v) => (v < u ? v : u),
  max: (u, v) => (v > u ? v : u),
  band: (u, v) => u & v,
  bor: (u, v) => u | v,
  bxor: (u, v) => u ^ v,
  land: (u, v) => (u !== 0n && v !== 0n ? 1n : 0n),
  lor: (u, v) => (u !== 0n || v !== 0n ? 1n : 0n),
};

/**
 * 32-bit integer product: u * v in doubles loses low bits once the product
 * passes 2^53, and the element would then keep the wrong ones; Math.imul
 * wraps as the C type does (8- and 16-bit products are exact in a double).
 */
const IMUL: Pair<number> = (u, v) => Math.imul(u, v);

function source(f: Pair<number> | Pair<bigint>): string {
  const loop = (o: string, a: string, b: string): string => {
    const one = (k: string): string => `{ const u = a[${a}${k}], v = b[${b}${k}]; o[${o}${k}] = f(u, v); }`;
    const eight = [0, 1, 2, 3, 4, 5, 6, 7].map((k) => one(`i + ${k}`)).join('\n');
    return `let i = 0;\nfor (; i + 8 <= n; i += 8) {\n${eight}\n}\nfor (; i < n; i++) ${one('i')}`;
  };
  // Without offsets V8 drops more bounds checks: 92 against 127 us for 1 MiB of doubles.
  return `const f = ${String(f)};\nif (oo === 0 && ao === 0 && bo === 0) {\n${loop('', '', '')}\n} else {\n${loop('oo + ', 'ao + ', 'bo + ')}\n}`;
}

const made = new Map<unknown, Map<Op, Kernel>>();
let generate = true;
/** The last answer: programs reduce one type with one op again and again (two Map lookups were 1/10 of an 8-byte allreduce). */
let lastCtor: unknown = null;
let lastOp: Op | null = null;
let lastKernel: Kernel | null = null;

/** The kernel for op on arrays like `like` (made on first use, then cached). */
export function kernel(op: Op, like: ReduceArray): Kernel {
  if (like.constructor === lastCtor && op === lastOp) return lastKernel!;
  const k = lookup(op, like);
  lastCtor = like.constructor;
  lastOp = op;
  lastKernel = k;
  return k;
}

function lookup(op: Op, like: ReduceArray): Kernel {
  let byOp = made.get(like.constructor);
  if (byOp === undefined) made.set(like.constructor, (byOp = new Map()));
  let k = byOp.get(op);
  if (k === undefined) {
    const f = like instanceof BigInt64Array || like instanceof BigUint64Array ? BIG[op]
      : op === 'prod' && (like instanceof Int32Array || like instanceof Uint32Array) ? IMUL : NUM[op];
    k = withNative(compiled(f) ?? shared(f as Pair<number>), op, like);
    byOp.set(op, k);
  }
  return k;
}

/** A fresh function, so its inline caches see one element type; null where code generation is off. */
function compiled(f: Pair<number> | Pair<bigint>): Kernel | null {
  if (!generate) return null;
  try {
    return new Function('o', 'oo', 'a', 'ao', 'b', 'bo', 'n', source(f)) as Kernel;
  } catch {
    // node --disallow-code-generation-from-strings: fall back to the shared (slower) loop.
    generate = false;
    return null;
  }
}

/**
 * One loop for every type (megamorphic, so slow): only without code generation.
 * The casts only quiet the checker: elements are whatever the arrays hold, and f matches them.
 */
function shared(f: Pair<number>): Kernel {
  return (o, oo, a, ao, b, bo, n) => {
    const out = o as Float64Array, x = a as Float64Array, y = b as Float64Array;
    for (let i = 0; i < n; i++) out[oo + i] = f(x[ao + i]!, y[bo + i]!);
  };
}


/** js, but long vectors through the addon when it has this (type, op) pair. */
function withNative(js: Kernel, op: Op, like: ReduceArray): Kernel {
  const nat = loadNative();
  const t = TYPE_CODES.indexOf(like[Symbol.toStringTag]), o = OP_CODES.indexOf(op);
  // A zero-length call answers whether the addon has the pair.
  if (nat === null || t < 0 || o < 0 || !nat.reduce(t, o, like, 0, like, 0, like, 0, 0)) return js;
  return (out, oo, a, ao, b, bo, n) => {
    if (n < NATIVE_MIN) js(out, oo, a, ao, b, bo, n);
    else nat.reduce(t, o, out, oo, a, ao, b, bo, n);
  };
}

/** dst[d .. d+n) = src[s .. s+n): a loop for a few elements, else native/copy.ts (the addon's memmove for long ones). */
export function copyInto(dst: ReduceArray, d: number, src: ReduceArray, s: number, n: number): void {
  if (n <= 32) {
    const a = dst as Float64Array, b = src as Float64Array;
    for (let i = 0; i < n; i++) a[d + i] = b[s + i]!;
    return;
  }
  copyElements(dst as Float64Array, d, src as Float64Array, s, n);
}
