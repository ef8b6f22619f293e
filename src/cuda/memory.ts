// Typed device arrays: GPU memory that mirrors a typed array (length, element
// type, subarray) and is accepted by the calls that take host buffers. An
// allocation is freed at once unless peers may have it open through CUDA IPC:
// then it waits until each one closed it (the driver's rule: the owner must not
// free what another process still maps).

import { DeviceBuffer } from '../core/bytes.js';
import { RailcommError, ErrorCode, invalidArg } from '../core/errors.js';
import { cudaFailed, currentDevice, driver, type CudaDriver } from './driver.js';

export type DeviceElements = Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array
  | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

/** A typed array constructor (Float32Array, ...): the element type of a device array. */
export interface ElementType<T extends DeviceElements> {
  readonly BYTES_PER_ELEMENT: number;
  readonly name: string;
  new (length: number): T;
  new (buffer: ArrayBuffer, byteOffset: number, length: number): T;
}

const ELEMENT_TYPES: ReadonlySet<unknown> = new Set([Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
  Float32Array, Float64Array, BigInt64Array, BigUint64Array]);

/** Holds an allocation open in peers (the device protocol): told when its owner frees it. */
export interface ExportHolder {
  /** Tell the peers that may have `a` open to close it; returns how many answers follow (each: a.ack()). */
  revoke(a: DeviceAllocation): number;
}

const LIVE = 0, FREEING = 1, FREED = 2;

/** One driver allocation (cuMemAlloc, or memory another library allocated and a wrap names). */
export class DeviceAllocation {
  readonly base: bigint;
  readonly bytes: number;
  readonly device: number;
  /** Unique in this process for its life (CU_POINTER_ATTRIBUTE_BUFFER_ID): what peers cache an opened handle under. */
  readonly bufferId: bigint;
  /** railcomm allocated it (free() releases it); false for cuda.wrap. */
  readonly owned: boolean;
  /** cuIpcGetMemHandle works on it (cuMemAlloc memory; not pool or VMM allocations). */
  readonly ipcCapable: boolean;
  private state = LIVE;
  /** Requests moving it now: free() refuses while any are. */
  users = 0;
  /** Its IPC handle, made once (cuIpcGetMemHandle costs tens of microseconds). */
  ipcHandle: Uint8Array | null = null;
  /** Protocol contexts that sent its handle to peers. */
  readonly exports = new Set<ExportHolder>();
  private pendingAcks = 0;

  constructor(base: bigint, bytes: number, device: number, bufferId: bigint, owned: boolean, ipcCapable: boolean) {
    this.base = base; this.bytes = bytes; this.device = device; this.bufferId = bufferId; this.owned = owned; this.ipcCapable = ipcCapable;
  }

  get live(): boolean { return this.state === LIVE; }

  /** The user freed it: peers close it first, then (owned) the driver frees it. */
  free(): void {
    if (this.state !== LIVE) return;
    this.state = FREEING;
    allocations.delete(this.bufferId);
    for (const h of this.exports) this.pendingAcks += h.revoke(this);
    this.exports.clear();
    if (this.pendingAcks === 0) this.release();
  }

  /** A peer closed it (or can no longer answer). */
  ack(): void {
    if (this.pendingAcks > 0 && --this.pendingAcks === 0) this.release();
  }

  private release(): void {
    if (this.state === FREED) return;
    this.state = FREED;
    if (!this.owned || this.bytes === 0) return;
    try { driver('free').cudaFree(this.base); } catch { /* the context is gone (exit): nothing left to free */ }
  }
}

/** Live allocations by buffer id, so that wraps of one allocation share its IPC handle and exports. */
const allocations = new Map<bigint, DeviceAllocation>();

/**
 * A typed array in GPU memory: length elements of one type, on one device.
 * upload() and download() copy synchronously; the communicator's calls move
 * it without staging where they can (CUDA IPC between processes on one host,
 * device-to-device between thread ranks).
 */
export class DeviceArray<T extends DeviceElements = DeviceElements> extends DeviceBuffer {
  readonly length: number;
  readonly byteLength: number;
  /** Bytes from the start of its allocation. */
  readonly byteOffset: number;
  readonly BYTES_PER_ELEMENT: number;
  /** Its element type (Float32Array, ...). */
  readonly type: ElementType<T>;
  readonly ptr: bigint;
  /** @internal */
  readonly allocation: DeviceAllocation;
  /** Whole: what cuda.alloc returned (only that one frees). */
  private readonly whole: boolean;

  /** @internal Use cuda.alloc or cuda.wrap. */
  constructor(allocation: DeviceAllocation, byteOffset: number, length: number, type: ElementType<T>, whole: boolean) {
    super();
    this.allocation = allocation;
    this.byteOffset = byteOffset;
    this.length = length;
    this.type = type;
    this.BYTES_PER_ELEMENT = type.BYTES_PER_ELEMENT;
    this.byteLength = length * type.BYTES_PER_ELEMENT;
    this.ptr = allocation.base + BigInt(byteOffset);
    this.whole = whole;
  }

  get device(): number { return this.allocation.device; }

  /** Whether its memory was freed (then every use throws ERR_INVALID_ARG). */
  get freed(): boolean { return !this.allocation.live; }

  /** Copy host's bytes to elements [offset, offset + host's elements); returns once they are on the device. */
  upload(host: ArrayBufferView, offset = 0): void {
    const d = this.live('upload');
    if (!ArrayBuffer.isView(host)) throw invalidArg(`upload: expected a typed array, Buffer or DataView, got ${describeValue(host)}`);
    checkIndex(offset, this.length, 'upload offset');
    const at = offset * this.BYTES_PER_ELEMENT;
    if (host.byteLength > this.byteLength - at) throw invalidArg(`upload: ${host.byteLength} bytes do not fit at element ${offset} of a ${this.byteLength}-byte device array`);
    if (host.byteLength === 0) return;
    try { d.cudaUpload(this.ptr + BigInt(at), host); } catch (e) { throw cudaFailed('upload (cuMemcpyHtoD)', e); }
  }

  /** Copy every element into host (at least byteLength bytes); returns host, or a new typed array when none is given. */
  download(host?: ArrayBufferView): ArrayBufferView {
    const d = this.live('download');
    const out = host ?? new this.type(this.length);
    if (!ArrayBuffer.isView(out)) throw invalidArg(`download: expected a typed array, Buffer or DataView, got ${describeValue(out)}`);
    if (out.byteLength < this.byteLength) throw invalidArg(`download: the host buffer has ${out.byteLength} bytes, the device array ${this.byteLength}; pass one at least as large`);
    if (this.byteLength === 0) return out;
    const view = out.byteLength === this.byteLength ? out : new Uint8Array(out.buffer, out.byteOffset, this.byteLength);
    try { d.cudaDownload(view, this.ptr); } catch (e) { throw cudaFailed('download (cuMemcpyDtoH)', e); }
    return out;
  }

  /** Elements [begin, end) as a device array sharing this memory (negative indices count from the end, as TypedArray#subarray). */
  subarray(begin = 0, end = this.length): DeviceArray<T> {
    this.checkLive('subarray');
    const b = clampIndex(begin, this.length), e = clampIndex(end, this.length);
    return new DeviceArray(this.allocation, this.byteOffset + b * this.BYTES_PER_ELEMENT, Math.max(0, e - b), this.type, false);
  }

  /** Set every byte to `byte` (0 zero-fills). */
  fill(byte = 0): this {
    const d = this.live('fill');
    if (this.byteLength > 0) {
      try { d.cudaMemset(this.ptr, byte, this.byteLength); } catch (e) { throw cudaFailed('fill (cuMemsetD8)', e); }
    }
    return this;
  }

  /**
   * Free the memory (cuda.alloc's array; its subarrays become unusable). A
   * wrap is forgotten instead (peers close it; the memory stays its owner's).
   * Not while a request moves it. A second free does nothing.
   */
  free(): void {
    const a = this.allocation;
    if (!a.live) return;
    if (a.owned && !this.whole) throw invalidArg('free(): this is a subarray; free the device array cuda.alloc returned');
    if (a.users > 0) throw invalidArg(`free(): ${a.users} pending request${a.users === 1 ? '' : 's'} still move${a.users === 1 ? 's' : ''} this memory; wait for ${a.users === 1 ? 'it' : 'them'} first`);
    a.free();
  }

  override toString(): string {
    return `DeviceArray<${this.type.name}>(${this.length}) on device ${this.device}${this.freed ? ' (freed)' : ''}`;
  }

  /** @internal The driver, after checking this array may be used (not freed). */
  live(what: string): CudaDriver {
    this.checkLive(what);
    return driver(what);
  }

  private checkLive(what: string): void {
    if (!this.allocation.live) throw invalidArg(`${what}: the device array was freed; allocate a new one (cuda.alloc)`);
  }
}

function describeValue(v: unknown): string {
  return v === null ? 'null' : typeof v === 'object' ? (v as object).constructor?.name ?? 'object' : typeof v;
}

function checkIndex(i: number, max: number, what: string): void {
  if (!Number.isSafeInteger(i) || i < 0 || i > max) throw invalidArg(`${what} ${String(i)} is outside 0..${max}`);
}

function clampIndex(i: number, len: number): number {
  if (typeof i !== 'number' || Number.isNaN(i)) throw invalidArg(`subarray: index ${String(i)} is not a number`);
  const t = Math.trunc(i);
  return t < 0 ? Math.max(0, len + t) : Math.min(t, len);
}

export function checkElementType<T extends DeviceElements>(type: unknown, what: string): ElementType<T> {
  if (!ELEMENT_TYPES.has(type)) throw invalidArg(`${what}: the element type must be a typed array constructor (Float32Array, Int32Array, ...), got ${typeof type === 'function' ? type.name || 'a function' : describeValue(type)}`);
  return type as ElementType<T>;
}

function checkLength(length: unknown, what: string): number {
  if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) throw invalidArg(`${what}: length must be a whole number of elements >= 0, got ${String(length)}`);
  return length;
}

/** cuda.alloc: `length` elements of `type` on this thread's device. */
export function allocDevice<T extends DeviceElements>(length: number, type: ElementType<T>): DeviceArray<T> {
  const t = checkElementType<T>(type, 'cuda.alloc');
  const n = checkLength(length, 'cuda.alloc');
  const bytes = n * t.BYTES_PER_ELEMENT;
  const d = driver('cuda.alloc');
  if (bytes === 0) return new DeviceArray(new DeviceAllocation(0n, 0, currentDevice(), 0n, true, false), 0, 0, t, true);
  let ptr: bigint;
  try { ptr = d.cudaAlloc(bytes); } catch (e) { throw cudaFailed(`cuda.alloc of ${bytes} bytes (cuMemAlloc)`, e); }
  const info = d.cudaPointer(ptr);
  const a = new DeviceAllocation(ptr, bytes, info?.device ?? 0, info?.bufferId ?? 0n, true, info?.ipc ?? true);
  if (a.bufferId !== 0n) allocations.set(a.bufferId, a);
  return new DeviceArray(a, 0, n, t, true);
}

/** cuda.wrap: `length` elements of `type` at device address `ptr` (memory another library allocated). */
export function wrapDevice<T extends DeviceElements>(ptr: bigint, length: number, type: ElementType<T>): DeviceArray<T> {
  const t = checkElementType<T>(type, 'cuda.wrap');
  const n = checkLength(length, 'cuda.wrap');
  if (typeof ptr !== 'bigint' || ptr <= 0n) throw invalidArg(`cuda.wrap: ptr must be a device address as a bigint (d.ptr, or another library's pointer), got ${typeof ptr === 'bigint' ? String(ptr) : describeValue(ptr)}`);
  const d = driver('cuda.wrap');
  let info;
  try { info = d.cudaPointer(ptr); } catch (e) { throw cudaFailed('cuda.wrap (cuPointerGetAttribute)', e); }
  if (info === null) throw invalidArg(`cuda.wrap: 0x${ptr.toString(16)} is not memory the CUDA driver knows (cuPointerGetAttribute refuses it); pass a device pointer from cuMemAlloc or cudaMalloc`);
  if (info.type === 1) throw invalidArg(`cuda.wrap: 0x${ptr.toString(16)} is host memory (pinned or registered), not device memory; pass it as a typed array instead`);
  if (info.base === undefined || info.size === undefined || info.bufferId === undefined) throw new RailcommError(ErrorCode.CUDA, `cuda.wrap: the driver did not say where the allocation of 0x${ptr.toString(16)} starts`);
  const offset = Number(ptr - info.base);
  const bytes = n * t.BYTES_PER_ELEMENT;
  if (offset % t.BYTES_PER_ELEMENT !== 0) throw invalidArg(`cuda.wrap: 0x${ptr.toString(16)} is not aligned to ${t.name}'s ${t.BYTES_PER_ELEMENT}-byte elements`);
  if (offset + bytes > info.size) throw invalidArg(`cuda.wrap: ${n} elements of ${t.name} (${bytes} bytes) from 0x${ptr.toString(16)} run past the end of its ${info.size}-byte allocation`);
  let a = allocations.get(info.bufferId);
  if (a === undefined || !a.live) {
    a = new DeviceAllocation(info.base, info.size, info.device ?? 0, info.bufferId, false, info.ipc === true && info.managed !== true);
    allocations.set(a.bufferId, a);
  }
  return new DeviceArray(a, offset, n, t, a.owned ? false : true);
}

/** Live allocations (for cuda.stats and tests). */
export function liveAllocations(): number {
  return allocations.size;
}
