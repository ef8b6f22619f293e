// Applying one-sided updates to memory: accumulate (element-wise op) and the
// single-element atomics (fetch-and-op, compare-and-swap). On shared memory
// (a SharedArrayBuffer that other threads or processes map) every element is
// updated with Atomics, so native and emulated access to one window stay atomic
// with respect to each other; on private memory plain loads and stores suffice.

import { kernel, type Op } from '../../native/kernels.js';

export const T_I8 = 0, T_U8 = 1, T_I16 = 2, T_U16 = 3, T_I32 = 4, T_U32 = 5, T_F32 = 6, T_F64 = 7, T_I64 = 8, T_U64 = 9;
export const TYPE_SIZE = [1, 1, 2, 2, 4, 4, 4, 8, 8, 8] as const;

export const OP_SUM = 0, OP_PROD = 1, OP_MIN = 2, OP_MAX = 3, OP_BAND = 4, OP_BOR = 5, OP_BXOR = 6, OP_LAND = 7, OP_LOR = 8, OP_REPLACE = 9, OP_NO_OP = 10;
export const OP_NAMES = ['sum', 'prod', 'min', 'max', 'band', 'bor', 'bxor', 'land', 'lor', 'replace', 'no_op'] as const;
export const OP_CSWAP = 11;

export const isFloatType = (t: number): boolean => t === T_F32 || t === T_F64;
export const isBigType = (t: number): boolean => t === T_I64 || t === T_U64;
export const isBitwiseOp = (op: number): boolean => op === OP_BAND || op === OP_BOR || op === OP_BXOR;

type IntArray = Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array;
/** The typed arrays one-sided arithmetic takes (not Uint8ClampedArray). */
export type AnyArray = IntArray | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

/**
 * The element type code of a typed array (-1: not usable for one-sided
 * arithmetic). By its built-in tag (a Buffer's is Uint8Array): a chain of
 * instanceof tests took 19-29 ns per call here.
 */
export function typeOfArray(a: ArrayBufferView): number {
  if (!ArrayBuffer.isView(a)) return -1;
  switch ((a as { [Symbol.toStringTag]?: string })[Symbol.toStringTag]) {
    case 'Float64Array': return T_F64;
    case 'Int32Array': return T_I32;
    case 'BigInt64Array': return T_I64;
    case 'Uint32Array': return T_U32;
    case 'BigUint64Array': return T_U64;
    case 'Float32Array': return T_F32;
    case 'Uint8Array': return T_U8;
    case 'Int8Array': return T_I8;
    case 'Int16Array': return T_I16;
    case 'Uint16Array': return T_U16;
    default: return -1; // Uint8ClampedArray, DataView
  }
}

/** An accumulate op's code, from its name (-1: not an accumulate op). */
export function accumulateOpCode(op: unknown): number {
  switch (op) {
    case 'sum': return OP_SUM;
    case 'prod': return OP_PROD;
    case 'min': return OP_MIN;
    case 'max': return OP_MAX;
    case 'band': return OP_BAND;
    case 'bor': return OP_BOR;
    case 'bxor': return OP_BXOR;
    case 'land': return OP_LAND;
    case 'lor': return OP_LOR;
    case 'replace': return OP_REPLACE;
    default: return -1;
  }
}

function view(type: number, buf: ArrayBufferLike, off: number, n: number): AnyArray {
  switch (type) {
    case T_I8: return new Int8Array(buf, off, n);
    case T_U8: return new Uint8Array(buf, off, n);
    case T_I16: return new Int16Array(buf, off, n);
    case T_U16: return new Uint16Array(buf, off, n);
    case T_I32: return new Int32Array(buf, off, n);
    case T_U32: return new Uint32Array(buf, off, n);
    case T_F32: return new Float32Array(buf, off, n);
    case T_F64: return new Float64Array(buf, off, n);
    case T_I64: return new BigInt64Array(buf, off, n);
    default: return new BigUint64Array(buf, off, n);
  }
}

/**
 * Whole-buffer views of the last buffer a single-element atomic or an
 * accumulate into mapped memory touched, one
 * per element type: an atomic is one element, and making a typed array for it
 * on every call cost more than the atomic itself (an allocation per call, and
 * the young-generation scavenges behind it). Callers index by byte position /
 * element size (the window checks alignment).
 */
let cachedBuffer: ArrayBufferLike | null = null;
const cachedViews: Array<AnyArray | undefined> = [];
/** Drop the cached views (a window was freed: its memory must not stay reachable from here). */
export function forgetElementViews(): void {
  cachedBuffer = null;
  cachedViews.length = 0;
  lastRegion = null;
  lastBuffer = new ArrayBuffer(0);
}

function elementView(type: number, buf: ArrayBufferLike): AnyArray {
  if (buf !== cachedBuffer) { cachedBuffer = buf; cachedViews.length = 0; }
  let v = cachedViews[type];
  if (v === undefined) {
    v = view(type, buf, 0, Math.floor(buf.byteLength / TYPE_SIZE[type]!));
    cachedViews[type] = v;
  }
  return v;
}

/**
 * The buffer, byte offset and sharing of the last region touched: reading a
 * typed array's buffer or byteOffset is a call of 10-20 ns on Node 20, and
 * programs update one window again and again.
 */
let lastRegion: Uint8Array | null = null;
let lastBuffer: ArrayBufferLike = new ArrayBuffer(0);
let lastOffset = 0;
let lastShared = false;
function useRegion(region: Uint8Array): void {
  if (region === lastRegion) return;
  lastRegion = region;
  lastBuffer = region.buffer;
  lastOffset = region.byteOffset;
  lastShared = lastBuffer instanceof SharedArrayBuffer;
}

function combineNum(op: number, a: number, b: number): number {
  switch (op) {
    case OP_SUM: return a + b;
    case OP_PROD: return a * b;
    // NaN propagates from either side, as in the collectives' kernels (native/kernels.ts).
    case OP_MIN: return b < a || b !== b ? b : a;
    case OP_MAX: return b > a || b !== b ? b : a;
    case OP_BAND: return a & b;
    case OP_BOR: return a | b;
    case OP_BXOR: return a ^ b;
    case OP_LAND: return a !== 0 && b !== 0 ? 1 : 0;
    case OP_LOR: return a !== 0 || b !== 0 ? 1 : 0;
    case OP_REPLACE: return b;
    default: return a;
  }
}

/** Integer elements: a product must wrap like the element, not lose bits in a double. */
function combineInt(op: number, a: number, b: number): number {
  return op === OP_PROD ? Math.imul(a, b) : combineNum(op, a, b);
}

function combineBig(op: number, a: bigint, b: bigint): bigint {
  switch (op) {
    case OP_SUM: return a + b;
    case OP_PROD: return a * b;
    case OP_MIN: return b < a ? b : a;
    case OP_MAX: return b > a ? b : a;
    case OP_BAND: return a & b;
    case OP_BOR: return a | b;
    case OP_BXOR: return a ^ b;
    case OP_LAND: return a !== 0n && b !== 0n ? 1n : 0n;
    case OP_LOR: return a !== 0n || b !== 0n ? 1n : 0n;
    case OP_REPLACE: return b;
    default: return a;
  }
}

// Bit conversion for float compare-and-swap loops.
const f64 = new Float64Array(1);
const f64bits = new BigInt64Array(f64.buffer);
const f32 = new Float32Array(1);
const f32bits = new Int32Array(f32.buffer);

/**
 * region[offset..] (op)= src, element by element (src a typed array of
 * `type`: the caller's own, or a view of an arrived operand), atomically per
 * element on shared memory. The caller checked bounds, alignment and op/type.
 * The region is reached through the cached whole-buffer view of its type: no
 * view is made per call.
 */
export function accumulateElements(region: Uint8Array, offset: number, src: AnyArray, type: number, op: number): void {
  if (op === OP_NO_OP) return;
  useRegion(region);
  const size = TYPE_SIZE[type]!;
  const base = (lastOffset + offset) / size;
  const n = src.length;
  const dst = elementView(type, lastBuffer);
  if (!lastShared) {
    // The collectives' kernels, one per element type and op: a loop here that
    // every type went through was megamorphic (several ms for 1 MiB).
    if (op === OP_REPLACE) dst.set(src as never, base);
    else kernel(OP_NAMES[op] as Op, dst)(dst, base, dst, base, src, 0, n);
    return;
  }
  if (type === T_F64) { floatCas(elementView(T_I64, lastBuffer) as BigInt64Array, base, f64, f64bits, src as Float64Array, op, n); return; }
  if (type === T_F32) { floatCas(elementView(T_I32, lastBuffer) as Int32Array, base, f32, f32bits, src as Float32Array, op, n); return; }
  // Integer elements, 8 to 64 bits: Atomics takes number or bigint arrays alike
  // (the casts only quiet the type checker), so one loop serves both.
  const big = isBigType(type);
  const d = dst as Int32Array, s = src as Int32Array;
  for (let i = 0; i < n; i++) {
    const b = s[i]!;
    const at = base + i;
    switch (op) {
      case OP_SUM: Atomics.add(d, at, b); break;
      case OP_BAND: Atomics.and(d, at, b); break;
      case OP_BOR: Atomics.or(d, at, b); break;
      case OP_BXOR: Atomics.xor(d, at, b); break;
      case OP_REPLACE: Atomics.store(d, at, b); break;
      default:
        for (;;) {
          const old = Atomics.load(d, at);
          // Typed-array stores wrap to the element width, so compare after storing.
          const next = big ? combineBig(op, old as unknown as bigint, b as unknown as bigint) as unknown as number : combineInt(op, old, b);
          if (Atomics.compareExchange(d, at, old, next) === old) break;
        }
    }
  }
}

/**
 * Float elements on shared memory: Atomics has no float operations, so each
 * element is replaced by compare-and-swap on its bit pattern (val/valBits: one
 * scratch element seen as float and as bits).
 */
function floatCas(bits: BigInt64Array | Int32Array, base: number, val: Float64Array | Float32Array, valBits: BigInt64Array | Int32Array, src: Float64Array | Float32Array, op: number, n: number): void {
  const b = bits as Int32Array, vb = valBits as Int32Array;
  for (let i = 0; i < n; i++) {
    for (;;) {
      const old = Atomics.load(b, base + i);
      vb[0] = old;
      val[0] = combineNum(op, val[0]!, src[i]!);
      if (Atomics.compareExchange(b, base + i, old, vb[0]!) === old) break;
    }
  }
}

let aligned = new ArrayBuffer(4096);

/**
 * Accumulate `operand` (elements of `type` as arrived bytes, any byte
 * alignment) into region[offset..]. The caller has checked bounds, alignment and op/type.
 */
export function applyAccumulate(region: Uint8Array, offset: number, operand: Uint8Array, type: number, op: number): void {
  const size = TYPE_SIZE[type]!;
  const n = operand.length / size;
  let src: AnyArray;
  if ((operand.byteOffset & 7) === 0) {
    src = view(type, operand.buffer, operand.byteOffset, n);
  } else {
    if (aligned.byteLength < operand.length) aligned = new ArrayBuffer(operand.length);
    new Uint8Array(aligned, 0, operand.length).set(operand);
    src = view(type, aligned, 0, n);
  }
  accumulateElements(region, offset, src, type, op);
}

/** Where the operand and result of a single-element atomic live (8 bytes each, little endian). */
function readValue(v: DataView, o: number, type: number): number | bigint {
  switch (type) {
    case T_I32: return v.getInt32(o, true);
    case T_U32: return v.getUint32(o, true);
    case T_F64: return v.getFloat64(o, true);
    case T_I64: return v.getBigInt64(o, true);
    default: return v.getBigUint64(o, true);
  }
}

export function writeValue(v: DataView, o: number, type: number, x: number | bigint): void {
  switch (type) {
    case T_I32: v.setInt32(o, x as number, true); v.setInt32(o + 4, 0, true); break;
    case T_U32: v.setUint32(o, x as number, true); v.setUint32(o + 4, 0, true); break;
    case T_F64: v.setFloat64(o, x as number, true); break;
    case T_I64: v.setBigInt64(o, x as bigint, true); break;
    default: v.setBigUint64(o, x as bigint, true); break;
  }
}

export { readValue };

/**
 * One atomic on a single element of region[offset]: fetch-and-op (op) or
 * compare-and-swap (OP_CSWAP: compare is the expected value). Returns the old value.
 */
export function applyAtomic(region: Uint8Array, offset: number, type: number, op: number, operand: number | bigint, compare: number | bigint): number | bigint {
  useRegion(region);
  const shared = lastShared;
  const base = lastOffset + offset;
  if (type === T_F64) {
    // Floats: compare-and-swap on the bit pattern.
    if ((base & 7) !== 0) throw new RangeError(`atomic on a misaligned 8-byte element at byte ${base}`);
    const bits = elementView(T_I64, lastBuffer) as BigInt64Array;
    const i = base / 8;
    for (;;) {
      const old = shared ? Atomics.load(bits, i) : bits[i]!;
      f64bits[0] = old;
      const oldF = f64[0]!;
      let next: number;
      if (op === OP_CSWAP) {
        f64[0] = compare as number;
        if (f64bits[0] !== old) return oldF;
        next = operand as number;
      } else {
        next = combineNum(op, oldF, operand as number);
      }
      f64[0] = next;
      if (op === OP_NO_OP) return oldF;
      if (!shared) { bits[i] = f64bits[0]!; return oldF; }
      if (Atomics.compareExchange(bits, i, old, f64bits[0]!) === old) return oldF;
    }
  }
  const size = TYPE_SIZE[type]!;
  if (base % size !== 0) throw new RangeError(`atomic on a misaligned ${size}-byte element at byte ${base}`);
  const a = elementView(type, lastBuffer) as Int32Array | Uint32Array | BigInt64Array | BigUint64Array;
  const i = base / size;
  if (op === OP_CSWAP) {
    if (shared) return Atomics.compareExchange(a as Int32Array, i, compare as number, operand as number);
    const old = a[i]!;
    if (old === compare) a[i] = operand as never;
    return old;
  }
  if (op === OP_NO_OP) return shared ? Atomics.load(a as Int32Array, i) : a[i]!;
  if (shared) {
    switch (op) {
      case OP_SUM: return Atomics.add(a as Int32Array, i, operand as number);
      case OP_BAND: return Atomics.and(a as Int32Array, i, operand as number);
      case OP_BOR: return Atomics.or(a as Int32Array, i, operand as number);
      case OP_BXOR: return Atomics.xor(a as Int32Array, i, operand as number);
      case OP_REPLACE: return Atomics.exchange(a as Int32Array, i, operand as number);
      default:
        for (;;) {
          const old = Atomics.load(a as Int32Array, i);
          const next = typeof old === 'bigint' ? combineBig(op, old, operand as bigint) : combineInt(op, old, operand as number);
          if (Atomics.compareExchange(a as Int32Array, i, old, next as number) === old) return old;
        }
    }
  }
  const old = a[i]!;
  a[i] = (typeof old === 'bigint' ? combineBig(op, old, operand as bigint) : combineInt(op, old, operand as number)) as never;
  return old;
}
