// Copies between typed arrays that are fast into and out of shared memory: V8
// copies to and from a SharedArrayBuffer a word at a time (37 us a MiB here
// against memmove's 20), so long copies go through the addon's memmove where
// it is built. One place for the one-sided engine and the collectives.

import { loadNative } from './addon.js';

/** From this many bytes the addon's memmove beats TypedArray.set. */
const NATIVE_FROM = 8192;

/** The typed arrays copyElements takes (dst and src of one kind). */
type Elements = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array
  | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

/** dst[d .. d+n) = src[s .. s+n), in elements of the arrays' (shared) kind. */
export function copyElements<T extends Elements>(dst: T, d: number, src: T, s: number, n: number): void {
  const el = src.BYTES_PER_ELEMENT;
  if (n * el >= NATIVE_FROM) {
    const a = loadNative();
    if (a !== null) { a.copy(dst, d * el, src, s * el, n * el); return; }
  }
  dst.set((s === 0 && n === src.length ? src : src.subarray(s, s + n)) as never, d);
}
