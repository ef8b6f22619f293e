// Argument checks shared by every communicator call: wrong input throws a
// RailcommError with a code at the call, before any traffic.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { describe } from '../core/bytes.js';
import { ANY_SOURCE, ANY_TAG, PROC_NULL } from '../proto/matching.js';
import type { AbortSignalLike } from '../core/signal.js';
import { constants } from 'node:buffer';

export const TAG_MAX = 0x7fffffff;

/**
 * `what` + `suffix` name the argument in the error (two parts, so hot callers
 * build no string unless it fails). The messages are built in functions of
 * their own: every send, receive and put runs these checks, and small bodies
 * let V8 inline them.
 */
export function checkRank(r: unknown, size: number, what: string, allowAny: boolean, suffix = ''): number {
  if (typeof r !== 'number' || !Number.isInteger(r) || r >= size || (r < 0 && !(allowAny && r === ANY_SOURCE))) badRank(r, size, what, allowAny, suffix);
  return r;
}

/** A point-to-point peer: a rank, PROC_NULL (the call moves nothing), or with allowAny ANY_SOURCE. */
export function checkPeer(r: unknown, size: number, what: string, allowAny: boolean): number {
  if (typeof r !== 'number' || !Number.isInteger(r) || r >= size || (r < 0 && r !== PROC_NULL && !(allowAny && r === ANY_SOURCE))) badRank(r, size, what, allowAny, '', true);
  return r;
}

function badRank(r: unknown, size: number, what: string, allowAny: boolean, suffix: string, procNull = false): never {
  const range = `0..${size - 1}${procNull ? (allowAny ? ', PROC_NULL or ANY_SOURCE' : ' or PROC_NULL') : allowAny ? ' or ANY_SOURCE' : ''}`;
  if (typeof r !== 'number' || !Number.isInteger(r)) throw new RailcommError(ErrorCode.RANK, `${what}${suffix} ${kindOf(r)}; pass a rank as an integer (${range})`);
  throw new RailcommError(ErrorCode.RANK, `${what}${suffix} ${r} is not a rank of this communicator (${range})`);
}

/**
 * What a value that should have been an integer is, for error messages:
 * "'1' is a string, not an integer", "1.5 is not an integer".
 */
export function kindOf(v: unknown): string {
  if (typeof v === 'string') return `'${v}' is a string, not an integer`;
  if (typeof v === 'number') return `${v} is not an integer`;
  if (typeof v === 'bigint') return `${v}n is a bigint, not a number`;
  return `${v === null ? 'null' : v === undefined ? 'undefined' : describe(v)} is not an integer`;
}

export function checkTag(t: unknown, allowAny: boolean): number {
  if (typeof t !== 'number' || !Number.isInteger(t) || t > TAG_MAX || (t < 0 && !(allowAny && t === ANY_TAG))) badTag(t, allowAny);
  return t;
}

function badTag(t: unknown, allowAny: boolean): never {
  const range = `0..${TAG_MAX}${allowAny ? ' or ANY_TAG' : ''}`;
  if (typeof t !== 'number' || !Number.isInteger(t)) throw new RailcommError(ErrorCode.TAG, `tag ${kindOf(t)}; pass a tag as an integer (${range})`);
  throw new RailcommError(ErrorCode.TAG, `tag ${t} is not an integer in ${range}`);
}

/** options.signal: an AbortSignal, or any object of its shape (AbortSignalLike). */
export function checkSignal(opts: unknown): AbortSignalLike | null {
  if (opts === undefined || opts === null) return null;
  if (typeof opts !== 'object') throw new RailcommError(ErrorCode.INVALID_ARG, `options must be an object such as { signal }, got ${describe(opts)}`);
  const s = (opts as { signal?: unknown }).signal;
  if (s === undefined) return null;
  if (s instanceof AbortSignal) return s;
  const like = s as Partial<AbortSignalLike> | null;
  if (typeof like !== 'object' || like === null || typeof like.aborted !== 'boolean' || typeof like.addEventListener !== 'function' || typeof like.removeEventListener !== 'function') {
    throw new RailcommError(ErrorCode.INVALID_ARG, `options.signal must be an AbortSignal (or an object with aborted, reason, addEventListener and removeEventListener), got ${describe(s)}`);
  }
  return like as AbortSignalLike;
}

/** A value as an error message shows it: strings quoted, bigints with their n ("'8'", "8n", "8"). */
export function shown(v: unknown): string {
  if (typeof v === 'string') return `'${v}'`;
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'object' && v !== null) return describe(v);
  return String(v);
}

/** The most bytes one typed array can view on this Node (buffer.constants.MAX_LENGTH: 4 GiB on Node 20). */
export const MAX_VIEW_BYTES = constants.MAX_LENGTH;

/** A byte count for alloc and allocWindow: a safe integer from 0 to what one Uint8Array can hold. */
export function checkByteCount(n: unknown, what: string): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new RailcommError(ErrorCode.INVALID_ARG, `${what}(${shown(n)}): expected a byte count, an integer >= 0`);
  if (n > MAX_VIEW_BYTES) throw new RailcommError(ErrorCode.INVALID_ARG, `${what}(${n}): at most ${MAX_VIEW_BYTES} bytes (the largest typed array this Node makes)`);
  return n;
}

/** A failed allocation of `n` bytes, as the RailcommError the caller gets. */
export function allocFailed(what: string, n: number, e: unknown): RailcommError {
  return e instanceof RailcommError ? e : new RailcommError(ErrorCode.INVALID_ARG, `${what}(${n}): cannot allocate ${n} bytes: ${(e as Error)?.message ?? String(e)}`, { cause: e });
}
