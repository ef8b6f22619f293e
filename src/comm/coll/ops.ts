// Reduction operations on typed arrays: sum prod min max band bor bxor land lor,
// user-defined ones (op(fn, { commutative })), their argument checks, and
// in-place reduction through the per-type kernels (native/kernels.ts). Every
// rank combines the same operands in the same order, so floating-point results
// agree bit for bit.

import { RailcommError, ErrorCode } from '../../core/errors.js';
import { describe } from '../../core/bytes.js';
import { kernel, type Kernel, type Op, type ReduceArray } from '../../native/kernels.js';

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

/**
 * A user-defined reduction (MPI_Op_create): fn(inout, input) sets
 * inout[i] = inout[i] (op) input[i], where inout holds the operand of the lower
 * ranks. railcomm applies it in rank order unless it is commutative, in which
 * case any order (and the faster algorithms) may be used. Made by op().
 */
export class UserOp<T extends ReduceArray = ReduceArray> {
  readonly fn: (inout: T, input: T) => void;
  readonly commutative: boolean;
  /** @internal The kernel form (out = a (op) b over ranges), as the collectives call the built-in ones. */
  readonly kernel: Kernel;
  /** @internal A 32-bit hash of the function's source and commutativity: RAILCOMM_CHECK compares it across ranks. */
  readonly hash: number;

  /** @internal */
  constructor(fn: (inout: T, input: T) => void, commutative: boolean) {
    this.fn = fn;
    this.commutative = commutative;
    this.hash = hash32(`${commutative ? 'c' : 'n'}${String(fn)}`);
    const f = fn as unknown as (inout: ReduceArray, input: ReduceArray) => void;
    this.kernel = (out, oo, a, ao, b, bo, n) => {
      if (n === 0) return;
      const o = range(out, oo, n);
      if (out !== a || oo !== ao) o.set(range(a, ao, n) as never);
      f(o, range(b, bo, n));
    };
  }

  toString(): string {
    return `op(${this.fn.name || 'anonymous'}${this.commutative ? ', commutative' : ''})`;
  }
}

/** The elements [at, at + n) of x: x itself when that is all of it (no view made). */
function range(x: ReduceArray, at: number, n: number): ReduceArray {
  return at === 0 && n === x.length ? x : x.subarray(at, at + n) as ReduceArray;
}

/** FNV-1a over a string's UTF-16 units. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The built-in reduction ops by name. */
export type ReduceOpName = Op;

/** What the collectives accept as an op: a built-in name or a user-defined op. */
export type ReduceOp = Op | UserOp;

/**
 * A user-defined reduction op for typed arrays, accepted wherever op names
 * are (reduce, allreduce, reduceScatter, scan, exscan and their i-twins; not
 * window accumulate, which applies at the target). fn(inout, input) must set
 * inout[i] = inout[i] (op) input[i] for every i, element by element: railcomm
 * may call it on any range of the vectors (slot-sized pieces, per-rank
 * blocks), with views of the caller's element type. inout holds the lower
 * ranks' operand. The op must be associative; commutative (default false)
 * lets railcomm combine operands in any order, otherwise they combine in
 * rank order (so a fold of non-commutative maps comes out right).
 */
export function op<T extends ReduceArray = ReduceArray>(fn: (inout: T, input: T) => void, options: { commutative?: boolean } = {}): UserOp<T> {
  if (typeof fn !== 'function') throw new RailcommError(ErrorCode.INVALID_ARG, `op(fn, options): fn must be a function (inout, input) => void that combines input into inout element by element, got ${describe(fn)}`);
  if (options === null || typeof options !== 'object') throw new RailcommError(ErrorCode.INVALID_ARG, `op(fn, options): options must be an object such as { commutative: true }, got ${describe(options)}`);
  const c = options.commutative ?? false;
  if (typeof c !== 'boolean') throw new RailcommError(ErrorCode.INVALID_ARG, `op(fn, { commutative }): commutative must be true or false, got ${describe(c)}`);
  return new UserOp<T>(fn, c);
}

/** True when the op may combine operands in any order. */
export function isCommutative(op: ReduceOp): boolean {
  return typeof op === 'string' || op.commutative;
}

/** The kernel of a built-in or user op for arrays like `like`. */
export function kernelOf(op: ReduceOp, like: ReduceArray): Kernel {
  return typeof op === 'string' ? kernel(op, like) : op.kernel;
}

/** Checks an op against an element type: throws ERR_INVALID_ARG at the call. */
export function checkOp(op: unknown, sample: ReduceArray, what: string): ReduceOp {
  if (op instanceof UserOp) return op as UserOp;
  if (typeof op !== 'string' || !(OPS as readonly string[]).includes(op)) {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: op must be one of ${OPS.join(', ')} or a user-defined op made with op((inout, input) => ...), got ${typeof op === 'string' ? `'${op}'` : describe(op)}`);
  }
  if (BITWISE.has(op) && isFloat(sample)) {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: bitwise op '${op}' is not defined on ${sample.constructor.name}; use an integer array`);
  }
  return op as Op;
}

/** acc[i] = acc[i] (op) x[i] for i < n. Both arrays have the same element type. */
export function reduceInto(op: ReduceOp, acc: ReduceArray, x: ReduceArray, n = acc.length): void {
  kernelOf(op, acc)(acc, 0, acc, 0, x, 0, n);
}
