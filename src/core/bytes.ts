// Helpers to look at any ArrayBufferView as bytes without copying, and the
// memory-type classification: host memory (any ArrayBufferView) or device
// memory (a DeviceBuffer: src/cuda's device arrays).

import { invalidArg } from './errors.js';

export function isView(v: unknown): v is ArrayBufferView {
  return ArrayBuffer.isView(v);
}

/**
 * Memory on a GPU (src/cuda/memory.ts: DeviceArray extends it). Defined here,
 * where buffers are classified, so every call that takes buffers can tell a
 * device array from host memory without loading the CUDA part.
 */
export abstract class DeviceBuffer {
  /** The device address of the first byte. */
  abstract readonly ptr: bigint;
  abstract readonly byteLength: number;
  /** The device ordinal the memory lives on. */
  abstract readonly device: number;
}

export function isDevice(v: unknown): v is DeviceBuffer {
  return v instanceof DeviceBuffer;
}

/** A device array where only host memory can go: what to do instead. */
export function deviceWhereHostOnly(what: string): never {
  throw invalidArg(`${what} must be host memory, got a device array: copy it to a typed array first (d.download(host)), or pass it to a call that takes device arrays (send, recv, isend, irecv, the collectives)`);
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
    if ((v as unknown) instanceof DeviceBuffer) deviceWhereHostOnly(what);
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
