// Copies between byte views that are fast into and out of shared memory: V8
// copies to and from a SharedArrayBuffer a word at a time (37 us a MiB here
// against memmove's 20), so long copies go through the addon's memmove where
// it is built.

import { loadNative, type NativeAddon } from './addon.js';

/** From this many bytes the addon's memmove beats TypedArray.set. */
const NATIVE_FROM = 8192;
let addon: NativeAddon | null | undefined;

/** dst[dOff .. dOff+n) = src[sOff .. sOff+n). */
export function copyBytes(dst: Uint8Array, dOff: number, src: Uint8Array, sOff: number, n: number): void {
  if (n >= NATIVE_FROM) {
    const a = addon === undefined ? (addon = loadNative()) : addon;
    if (a !== null) { a.copy(dst, dOff, src, sOff, n); return; }
  }
  dst.set(sOff === 0 && n === src.byteLength ? src : src.subarray(sOff, sOff + n), dOff);
}
