// Helpers to look at any ArrayBufferView as bytes without copying.

import { invalidArg } from './errors.js';

export function isView(v: unknown): v is ArrayBufferView {
  return ArrayBuffer.isView(v);
}

/**
 * The bytes of a view; a Uint8Array (or Buffer) is returned as it is.
 *
 * Hot paths read a Uint8Array's size as `length`, not `byteLength`: on
 * Node 20 (V8 11.3) `byteLength` is a call of about 10 ns here, while
 * `length` is inlined (bench/node-facts.mjs, "typed array size").
 */
export function asBytes(v: ArrayBufferView, what = 'buffer'): Uint8Array {
  // One prototype walk on the common path (puts and sends call this every time).
  if (v instanceof Uint8Array) {
    if (v.length === 0) checkAttached(v, what);
    return v;
  }
  if (!ArrayBuffer.isView(v)) {
    throw invalidArg(`${what} must be an ArrayBufferView (a typed array, Buffer or DataView), got ${describe(v)}`);
  }
  if (v.byteLength === 0) checkAttached(v, what);
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/** A detached buffer reads as zero bytes; only then is the check worth making. */
function checkAttached(v: ArrayBufferView, what: string): void {
  if (isDetached(v.buffer)) throw invalidArg(`${what} is backed by a detached ArrayBuffer (it was transferred); pass a live buffer`);
}

export function isDetached(b: ArrayBufferLike): boolean {
  // `detached` exists from Node 20.?; fall back to a zero-length probe.
  const d = (b as { detached?: boolean }).detached;
  if (typeof d === 'boolean') return d;
  try { new Uint8Array(b, 0, 0); return false; } catch { return true; }
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'object';
  return typeof v;
}

export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$/i.exec(text);
  if (!m) return NaN;
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2]!.toLowerCase()] ?? 1;
  return Math.round(Number(m[1]) * mult);
}
