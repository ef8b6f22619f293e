// Loader of railcomm's optional native addon (native/, built by npm install):
// /dev/shm segments as SharedArrayBuffer, a cross-process futex doorbell, CMA
// single-copy reads, CRC32C and batched datagram sends. Returns null, with the
// reason, when it is absent.

import { createRequire } from 'node:module';
import { existsSync, readFileSync, readdirSync, unlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { RailcommError, ErrorCode } from '../core/errors.js';

/** An opaque doorbell waiter (owned by the addon). */
export interface DoorbellWaiter { readonly __brand: 'DoorbellWaiter' }

export interface NativeAddon {
  /** Create /dev/shm/<name> exclusively (O_CREAT|O_EXCL), reserve the space up front (posix_fallocate; a full /dev/shm is a thrown RailcommError ERR_NO_RAIL, never a later SIGBUS), mmap it shared and return it as a zero-filled SharedArrayBuffer. name has no slash. */
  shmCreate(name: string, bytes: number): SharedArrayBuffer;
  /** Map an existing segment (whole size) as a SharedArrayBuffer; throws RailcommError if absent. */
  shmOpen(name: string): SharedArrayBuffer;
  /** Remove the name (mappings stay valid); no error if already gone. */
  shmUnlink(name: string): void;
  /**
   * A thread that sleeps (FUTEX_WAIT) on the 32-bit word at byteOffset of sab
   * once armed, and calls `wake` on the event loop when the word changes. It
   * never keeps the process alive. Close it when done.
   */
  doorbellWaiter(sab: SharedArrayBuffer, byteOffset: number, wake: () => void): DoorbellWaiter;
  /** Arm once: `wake` runs after the word differs from `expected` (at once if it already does). */
  doorbellArm(w: DoorbellWaiter, expected: number): void;
  doorbellClose(w: DoorbellWaiter): void;
  /** Block this thread (and its event loop) until the word differs from `expected`, a wake, or timeoutUs pass. */
  futexWait(sab: SharedArrayBuffer, byteOffset: number, expected: number, timeoutUs: number): void;
  /** Wake every process sleeping on that word (after changing it); returns how many woke. */
  futexWake(sab: SharedArrayBuffer, byteOffset: number): number;
  /** Where the view's first byte is in this process (stable while the buffer lives). */
  addressOf(view: ArrayBufferView | ArrayBuffer | SharedArrayBuffer): bigint;
  /** Read dst.byteLength bytes at `address` of process `pid` (process_vm_readv): bytes read, or -errno (EPERM: not allowed). */
  cmaRead(pid: number, address: bigint, dst: ArrayBufferView): number;
  /** Write src into process `pid` at `address` (process_vm_writev): bytes written, or -errno. */
  cmaWrite(pid: number, address: bigint, src: ArrayBufferView): number;
  /** memcpy from an address in this process (another thread's buffer) into dst: bytes copied, or -EFAULT (ends probed first). */
  memRead?(address: bigint, dst: ArrayBufferView): number;
  /** memcpy src to an address in this process: bytes copied, or -EFAULT. */
  memWrite?(address: bigint, src: ArrayBufferView): number;
  /**
   * out[oo+i] = a[ao+i] (op) b[bo+i] for i < n (offsets in elements) in vector
   * instructions, type and op as indices into TYPE_CODES and OP_CODES; false
   * (nothing done) for pairs whose bits could differ from the JavaScript
   * kernels'. out may be a.
   */
  reduce(type: number, op: number, out: ArrayBufferView, oo: number, a: ArrayBufferView, ao: number, b: ArrayBufferView, bo: number, n: number): boolean;
  /** bytes bytes from src at byte sOff to dst at byte dOff (memmove; V8 copies into a SharedArrayBuffer a word at a time). */
  copy(dst: ArrayBufferView, dOff: number, src: ArrayBufferView, sOff: number, bytes: number): void;
  /** CRC32C (Castagnoli) of the view, chained from `seed` (default 0). */
  crc32c(view: ArrayBufferView, seed?: number): number;
  /** CRC32C of view[offset, offset + length) (seed 0), without a subarray per call. */
  crc32cRange(view: ArrayBufferView, offset: number, length: number): number;
  /**
   * sendmmsg(2) on a UDP socket's fd: bufs[i]'s first lens[i] bytes to the IPv4
   * address addrs[i] (host order) port ports[i], for i < count (at most 256).
   * Never blocks: returns how many went (fewer when the socket buffer is full),
   * or -errno when none did.
   */
  udpSendBatch(fd: number, bufs: ArrayBufferView[], lens: Uint32Array, ports: Uint32Array, addrs: Uint32Array, count: number): number;
  /** Whether crc32c uses the CPU's instruction (SSE4.2). */
  crc32cHardware(): boolean;
  /**
   * A thread that waits for this process's parent to end, then graceMs more,
   * then kills this process (SIGKILL) unless stopWatchingParent was called.
   * Returns the parent's pid. Absent from addons built before it.
   */
  watchParent?(graceMs: number): number;
  stopWatchingParent?(): void;
}

/** The addon's element-type and op numbering for reduce(). */
export const TYPE_CODES: readonly string[] = ['Int8Array', 'Uint8Array', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
export const OP_CODES: readonly string[] = ['sum', 'prod', 'min', 'max', 'band', 'bor', 'bxor'];

/** Segment names of a job start with this, so the launcher can remove leftovers by prefix. */
export function shmJobPrefix(jobId: number): string {
  return `railcomm-${jobId >>> 0}-`;
}

interface RawError { code?: string; message?: string }

let loaded: NativeAddon | null | undefined;
let why = '';

function root(): string {
  // dist/native/addon.js or src/native/addon.ts -> the package root
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
}

/** Wrap the raw functions so that failures are RailcommErrors with codes. */
function wrap(raw: NativeAddon): NativeAddon {
  const fail = (what: string, e: unknown): never => {
    if (e instanceof TypeError) throw e; // a bad argument: a bug in the caller, not the system
    const r = e as RawError;
    const hint = r.code === 'ENOSPC' ? ' (/dev/shm is full: free space there, or raise its size, or run with RAILCOMM_RAILS without shm)' : '';
    throw new RailcommError(ErrorCode.NO_RAIL, `${what}: ${r.message ?? String(e)}${hint}`, { cause: e });
  };
  return {
    ...raw,
    shmCreate(name, bytes) { try { return raw.shmCreate(name, bytes); } catch (e) { return fail(`cannot create shared-memory segment ${name} of ${bytes} bytes`, e); } },
    shmOpen(name) { try { return raw.shmOpen(name); } catch (e) { return fail(`cannot map shared-memory segment ${name}`, e); } },
    shmUnlink(name) { try { raw.shmUnlink(name); } catch (e) { fail(`cannot remove shared-memory segment ${name}`, e); } },
  };
}

export function loadNative(): NativeAddon | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (process.env['RAILCOMM_NO_NATIVE'] === '1') { why = 'disabled by RAILCOMM_NO_NATIVE=1'; return null; }
  if (process.platform !== 'linux') { why = `needs Linux (this is ${process.platform})`; return null; }
  const file = path.join(root(), 'native', 'build', 'Release', 'railcomm_native.node');
  if (!existsSync(file)) {
    let log = '';
    try { log = readFileSync(path.join(root(), 'native', 'build-log.txt'), 'utf8').split('\n')[0] ?? ''; } catch { /* no log */ }
    why = `native addon not built (${log || 'run npm install, or npm run build:native'}; needs node-gyp, a C++17 compiler, make and python3)`;
    return null;
  }
  try {
    const raw = createRequire(import.meta.url)(file) as NativeAddon;
    loaded = wrap(raw);
    why = `native addon loaded (${file}; crc32c ${raw.crc32cHardware() ? 'SSE4.2' : 'table'})`;
  } catch (e) {
    why = `native addon failed to load: ${(e as Error).message}`;
  }
  return loaded;
}

/** Why the addon is or is not available (for railcomm info). */
export function nativeWhy(): string {
  loadNative();
  return why;
}

/**
 * Remove what a job left in /dev/shm (ranks killed before they could unlink):
 * plain file removal, so it works without the addon. Returns how many went.
 */
export function removeJobSegments(jobId: number, dir = '/dev/shm'): number {
  const prefix = shmJobPrefix(jobId);
  let names: string[];
  try { names = readdirSync(dir); } catch { return 0; }
  let n = 0;
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    try { unlinkSync(path.join(dir, name)); n++; } catch { /* gone meanwhile */ }
  }
  return n;
}
