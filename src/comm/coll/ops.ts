// Reduction operations on typed arrays: sum prod min max band bor bxor land lor.
// Each op is a plain loop over two arrays of one element type (no callback per
// element), so V8 compiles it to a tight loop. Every rank combines the same
// operands in the same order, so floating-point results agree bit for bit.

import { RailcommError, ErrorCode } from '../../core/errors.js';

export type NumericArray =
  | Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array
  | Float32Array | Float64Array;
export type BigArray = BigInt64Array | BigUint64Array;
export type ReduceArray = NumericArray | BigArray;

export const OPS = ['sum', 'prod', 'min', 'max', 'band', 'bor', 'bxor', 'land', 'lor'] as const;
export type Op = (typeof OPS)[number];

const BITWISE: ReadonlySet<string> = new Set(['band', 'bor', 'bxor']);

export function isReduceArray(v: unknown): v is ReduceArray {
  return ArrayBuffer.isView(v) && !(v instanceof DataView);
}

export function isFloat(a: ReduceArray): boolean {
  return a instanceof Float32Array || a instanceof Float64Array;
}

export function isBig(a: ReduceArray): a is BigArray {
  return a instanceof BigInt64Array || a instanceof BigUint64Array;
}

/** Checks an op against an element type: throws ERR_INVALID_ARG at the call. */
export function checkOp(op: unknown, sample: ReduceArray, what: string): Op {
  if (typeof op !== 'string' || !(OPS as readonly string[]).includes(op)) {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: op must be one of ${OPS.join(', ')}, got ${String(op)}`);
  }
  if (BITWISE.has(op) && isFloat(sample)) {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: bitwise op '${op}' is not defined on ${sample.constructor.name}; use an integer array`);
  }
  return op as Op;
}

/** acc[i] = acc[i] (op) x[i] for i < n. Both arrays have the same element type. */
export function reduceInto(op: Op, acc: ReduceArray, x: ReduceArray, n = acc.length): void {
  if (isBig(acc)) { reduceBig(op, acc, x as BigArray, n); return; }
  const a = acc as NumericArray;
  const b = x as NumericArray;
  switch (op) {
    case 'sum': for (let i = 0; i < n; i++) a[i] = a[i]! + b[i]!; return;
    case 'prod': for (let i = 0; i < n; i++) a[i] = a[i]! * b[i]!; return;
    // NaN propagates, as in C MPI's (a < b ? a : b) it would not; keep IEEE min/max semantics explicit.
    case 'min': for (let i = 0; i < n; i++) { const u = a[i]!, v = b[i]!; a[i] = v < u || v !== v ? v : u; } return;
    case 'max': for (let i = 0; i < n; i++) { const u = a[i]!, v = b[i]!; a[i] = v > u || v !== v ? v : u; } return;
    case 'band': for (let i = 0; i < n; i++) a[i] = a[i]! & b[i]!; return;
    case 'bor': for (let i = 0; i < n; i++) a[i] = a[i]! | b[i]!; return;
    case 'bxor': for (let i = 0; i < n; i++) a[i] = a[i]! ^ b[i]!; return;
    case 'land': for (let i = 0; i < n; i++) a[i] = a[i]! !== 0 && b[i]! !== 0 ? 1 : 0; return;
    case 'lor': for (let i = 0; i < n; i++) a[i] = a[i]! !== 0 || b[i]! !== 0 ? 1 : 0; return;
  }
}

function reduceBig(op: Op, a: BigArray, b: BigArray, n: number): void {
  switch (op) {
    case 'sum': for (let i = 0; i < n; i++) a[i] = a[i]! + b[i]!; return;
    case 'prod': for (let i = 0; i < n; i++) a[i] = a[i]! * b[i]!; return;
    case 'min': for (let i = 0; i < n; i++) { const u = a[i]!, v = b[i]!; a[i] = v < u ? v : u; } return;
    case 'max': for (let i = 0; i < n; i++) { const u = a[i]!, v = b[i]!; a[i] = v > u ? v : u; } return;
    case 'band': for (let i = 0; i < n; i++) a[i] = a[i]! & b[i]!; return;
    case 'bor': for (let i = 0; i < n; i++) a[i] = a[i]! | b[i]!; return;
    case 'bxor': for (let i = 0; i < n; i++) a[i] = a[i]! ^ b[i]!; return;
    case 'land': for (let i = 0; i < n; i++) a[i] = a[i]! !== 0n && b[i]! !== 0n ? 1n : 0n; return;
    case 'lor': for (let i = 0; i < n; i++) a[i] = a[i]! !== 0n || b[i]! !== 0n ? 1n : 0n; return;
  }
}
