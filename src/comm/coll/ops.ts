// Reduction operations on typed arrays: sum prod min max band bor bxor land lor,
// their argument checks, and in-place reduction through the per-type kernels
// (native/kernels.ts). Every rank combines the same operands in the same order, so
// floating-point results agree bit for bit.

import { RailcommError, ErrorCode } from '../../core/errors.js';
import { kernel, type Op, type ReduceArray } from '../../native/kernels.js';

export type NumericArray =
  | Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array
  | Float32Array | Float64Array;
export type BigArray = BigInt64Array | BigUint64Array;
// The element-wise ops and the arrays they combine are the kernels' (native/kernels.ts).
export type { Op, ReduceArray };

/** A built-in typed-array constructor (view form). */
export type ViewCtor = new (b: ArrayBufferLike, o: number, n: number) => ReduceArray;
const BUILT_IN: Record<string, ViewCtor> = {
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
  Float32Array, Float64Array, BigInt64Array, BigUint64Array,
};

/**
 * The built-in kind of a typed array: a subclass (or a Buffer) may have a
 * constructor that does not take (buffer, offset, length), so views over
 * shared slots are made with the built-in one.
 */
export function builtInOf(a: ReduceArray): ViewCtor {
  return BUILT_IN[a[Symbol.toStringTag]]!;
}

export const OPS = ['sum', 'prod', 'min', 'max', 'band', 'bor', 'bxor', 'land', 'lor'] as const satisfies readonly Op[];

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
  kernel(op, acc)(acc, 0, acc, 0, x, 0, n);
}
