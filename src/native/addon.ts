// Loader of railcomm's native addon (native/: Node-API, one binary for every
// Node, a prebuild or built by npm install): /dev/shm segments as
// SharedArrayBuffer, a cross-process futex doorbell, CMA single-copy reads,
// CRC32C, SipHash and batched datagram sends. Returns null, with the reason, when absent.

import { createRequire } from 'node:module';
import { existsSync, readFileSync, readdirSync, unlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { RailcommError, ErrorCode } from '../core/errors.js';
import { mac } from '../core/auth.js';

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
   * SipHash-2-4 of view[offset, offset + length) under a 16-byte key, with the
   * 4 bytes at offset + hole read as zeros (hole -1: none): its low 32 bits
   * (the udp rail's datagram MAC); `out` (8 bytes) takes all 64. Absent from
   * addons built before it.
   */
  siphash24Range?(view: ArrayBufferView, offset: number, length: number, key: Uint8Array, hole: number, out?: Uint8Array): number;
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
  /** Pin the calling thread to one CPU: 0, or a negative errno. Absent from addons built before it. */
  bindThread?(cpu: number): number;
  /** The CPUs the calling thread may run on, ascending. Absent from addons built before it. */
  threadCpus?(): number[];
  /** Bytes waiting unread on socket fd, copied into `into` and left there (MSG_PEEK): the count, or a negative errno. Absent from addons built before it. */
  peekSocket?(fd: number, into: Uint8Array): number;
  /** SO_KEEPALIVE on socket fd, probes after idleS s, every intervalS s, count unanswered ones closing it: 0, or a negative errno. Absent from addons built before it. */
  tcpKeepalive?(fd: number, idleS: number, intervalS: number, count: number): number;
  /** ms the peer's host has acknowledged nothing while data waits for its ACK (0: nothing waits), or a negative errno. Absent from addons built before it. */
  tcpAckWait?(fd: number): number;
}

/** The addon's element-type and op numbering for reduce(). */
export const TYPE_CODES: readonly string[] = ['Int8Array', 'Uint8Array', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
export const OP_CODES: readonly string[] = ['sum', 'prod', 'min', 'max', 'band', 'bor', 'bxor'];

/** Segment names of a job start with this, so the launcher can remove leftovers by prefix. */
export function shmJobPrefix(jobId: number, jobKey: string): string {
  // A tag only the job's members can compute (its key is their secret):
  // /dev/shm is world-readable, so names must not give away the job id, nor
  // be guessable by another user who would take them first.
  const key = /^[0-9a-f]+$/i.test(jobKey) && jobKey.length % 2 === 0 ? jobKey : Buffer.from(jobKey).toString('hex');
  return `railcomm-${mac(key || '00', 'railcomm-shm-names', String(jobId >>> 0)).toString('hex').slice(0, 16)}-`;
}

interface RawError { code?: string; message?: string }

/** The V8 shim's wrapMapping (native/sab/sab.cc): a mapping the addon made, as a SharedArrayBuffer that owns it. */
type WrapMapping = (address: bigint, length: number) => SharedArrayBuffer;

/**
 * What the binary exports where it differs from NativeAddon: Node-API cannot
 * read a SharedArrayBuffer before Node 24.9, so the futex calls take a view,
 * and segments take the shim where Node-API cannot make them.
 */
interface RawAddon extends Omit<NativeAddon, 'shmCreate' | 'shmOpen' | 'doorbellWaiter' | 'futexWait' | 'futexWake' | 'addressOf'> {
  shmCreate(name: string, bytes: number, wrap?: WrapMapping): SharedArrayBuffer;
  shmOpen(name: string, wrap?: WrapMapping): SharedArrayBuffer;
  doorbellWaiter(view: Uint8Array, byteOffset: number, wake: () => void): DoorbellWaiter;
  futexWait(view: Uint8Array, byteOffset: number, expected: number, timeoutUs: number): void;
  futexWake(view: Uint8Array, byteOffset: number): number;
  addressOf(view: ArrayBufferView | ArrayBuffer): bigint;
  /** Whether the running Node has node_api_create_external_sharedarraybuffer (else segments need the shim). */
  externalSharedArrayBuffer(): boolean;
}

/** Where the loaded parts came from, for railcomm info and the install line. */
export interface NativeOrigin {
  /** The addon's file, and whether it is a shipped prebuild or built here from source. */
  file: string;
  from: 'prebuild' | 'source build';
  /** How segments become SharedArrayBuffers: Node-API itself, or the V8 shim (its file). */
  sab: 'node-api' | 'v8 shim';
  shim?: { file: string; from: 'prebuild' | 'source build' };
}

let loaded: NativeAddon | null | undefined;
let origin: NativeOrigin | null = null;
let why = '';

function root(): string {
  // dist/native/addon.js or src/native/addon.ts -> the package root
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
}

/** The package's native folder (binding.gyp, build/, prebuilds/). */
export function nativeDir(): string {
  return path.join(root(), 'native');
}

const requireHere = createRequire(import.meta.url);

/**
 * The .node file node-gyp-build picks in dir: build/Release first (a source
 * build), else prebuilds/<platform>-<arch>/ (node.napi.node, node.abi<N>.node);
 * null when neither is there.
 */
export function resolveBinary(dir: string): { file: string; from: 'prebuild' | 'source build' } | null {
  let file: string;
  // The addon's own name first: node-gyp-build takes whichever .node file build/Release lists first.
  const own = path.join(dir, 'build', 'Release', 'railcomm_native.node');
  if (existsSync(own)) return { file: own, from: 'source build' };
  try {
    file = (requireHere('node-gyp-build') as { resolve(dir: string): string }).resolve(dir);
  } catch {
    // No build there (node-gyp-build says so by throwing), or no node-gyp-build: the two places it would look.
    const candidates = [path.join(dir, 'build', 'Release', 'railcomm_native.node'), path.join(dir, 'prebuilds', `${process.platform}-${process.arch}`, 'node.napi.node')];
    const found = candidates.find((f) => existsSync(f));
    if (found === undefined) return null;
    file = found;
  }
  return { file, from: file.split(path.sep).includes('prebuilds') ? 'prebuild' : 'source build' };
}

/** First line of a build log (what npm install did), or ''. */
function logLine(file: string): string {
  try { return readFileSync(file, 'utf8').split('\n')[0] ?? ''; } catch { return ''; }
}

/** Why the binary in dir is not to be loaded: the install skipped the native parts (RAILCOMM_SKIP_NATIVE=1), or null. */
function skippedAtInstall(dir: string): string | null {
  return logLine(path.join(dir, 'build-log.txt')).startsWith('not built: RAILCOMM_SKIP_NATIVE=1')
    ? 'skipped at install (RAILCOMM_SKIP_NATIVE=1); npm run build:native builds or loads it' : null;
}

/** Why no binary was found: the build log's first line, and what a build needs unless it says so already. */
function notBuilt(dir: string): string {
  const log = logLine(path.join(dir, 'build-log.txt'));
  const needs = 'building it needs node-gyp, a C++17 compiler, make and python3';
  return `native addon not built (${log || 'run npm install, or npm run build:native'}${log.includes('node-gyp') ? '' : `; ${needs}`})`;
}

/**
 * The shim's wrapMapping where this Node's Node-API cannot wrap a mapping
 * (or RAILCOMM_SAB_SHIM=1 asks for the shim); null when not needed; a string
 * saying why when needed and missing. A source build first (this machine's
 * own), then the prebuild for this Node ABI: a source build left from another
 * Node version does not load here, and the prebuild still can.
 */
function sabPath(raw: RawAddon): { wrap: WrapMapping; file: string; from: 'prebuild' | 'source build' } | null | string {
  const napi = raw.externalSharedArrayBuffer();
  if (napi && process.env['RAILCOMM_SAB_SHIM'] !== '1') return null;
  const dir = path.join(nativeDir(), 'sab');
  const need = napi ? `RAILCOMM_SAB_SHIM=1 asks for the V8 shim native/sab for node ${process.version} (ABI ${process.versions.modules})`
    : `node ${process.version} (ABI ${process.versions.modules}) lacks node_api_create_external_sharedarraybuffer, so the shm rail needs the V8 shim native/sab`;
  const candidates: { file: string; from: 'prebuild' | 'source build' }[] = [
    { file: path.join(dir, 'build', 'Release', 'railcomm_sab.node'), from: 'source build' },
    { file: path.join(dir, 'prebuilds', `${process.platform}-${process.arch}`, `node.abi${process.versions.modules}.node`), from: 'prebuild' },
  ];
  const failed: string[] = [];
  for (const c of candidates) {
    if (!existsSync(c.file)) continue;
    try {
      const shim = requireHere(c.file) as { wrapMapping: WrapMapping };
      return { wrap: shim.wrapMapping, ...c };
    } catch (e) {
      failed.push(`${path.relative(root(), c.file)}: ${(e as Error).message.replace(/\s+/g, ' ').slice(0, 240)}`);
    }
  }
  if (failed.length > 0) return `${need}, which failed to load (${failed.join('; ')}); run npm rebuild railcomm`;
  return `${need}, which is not built (${logLine(path.join(dir, 'build-log.txt')) || 'run npm rebuild railcomm'})`;
}

/** Wrap the raw functions: failures become RailcommErrors with codes, and SharedArrayBuffers go in as views. */
function wrap(raw: RawAddon, wrapMapping: WrapMapping | undefined): NativeAddon {
  const fail = (what: string, e: unknown): never => {
    if (e instanceof TypeError) throw e; // a bad argument: a bug in the caller, not the system
    const r = e as RawError;
    const hint = r.code === 'ENOSPC' ? ' (/dev/shm is full: free space there, or raise its size, or run with RAILCOMM_RAILS without shm)' : '';
    throw new RailcommError(ErrorCode.NO_RAIL, `${what}: ${r.message ?? String(e)}${hint}`, { cause: e });
  };
  // One byte view per buffer, made once: the futex calls pass it instead of the
  // SharedArrayBuffer (a WeakMap lookup, about 10 ns, where a view per call would allocate).
  const views = new WeakMap<SharedArrayBuffer, Uint8Array>();
  const bytes = (sab: SharedArrayBuffer): Uint8Array => {
    let v = views.get(sab);
    if (v === undefined) { v = new Uint8Array(sab); views.set(sab, v); }
    return v;
  };
  const { externalSharedArrayBuffer: _unused, ...rest } = raw;
  return {
    ...rest,
    shmCreate(name, bytes) { try { return raw.shmCreate(name, bytes, wrapMapping); } catch (e) { return fail(`cannot create shared-memory segment ${name} of ${bytes} bytes`, e); } },
    shmOpen(name) { try { return raw.shmOpen(name, wrapMapping); } catch (e) { return fail(`cannot map shared-memory segment ${name}`, e); } },
    shmUnlink(name) { try { raw.shmUnlink(name); } catch (e) { fail(`cannot remove shared-memory segment ${name}`, e); } },
    doorbellWaiter: (sab, byteOffset, wake) => raw.doorbellWaiter(bytes(sab), byteOffset, wake),
    futexWait: (sab, byteOffset, expected, timeoutUs) => raw.futexWait(bytes(sab), byteOffset, expected, timeoutUs),
    futexWake: (sab, byteOffset) => raw.futexWake(bytes(sab), byteOffset),
    addressOf: (v) => raw.addressOf(v instanceof SharedArrayBuffer ? bytes(v) : v),
  };
}

export function loadNative(): NativeAddon | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (process.env['RAILCOMM_NO_NATIVE'] === '1') { why = 'disabled by RAILCOMM_NO_NATIVE=1'; return null; }
  if (process.platform !== 'linux') { why = `needs Linux (this is ${process.platform})`; return null; }
  const skipped = skippedAtInstall(nativeDir());
  if (skipped !== null) { why = skipped; return null; }
  const bin = resolveBinary(nativeDir());
  if (bin === null) { why = notBuilt(nativeDir()); return null; }
  let raw: RawAddon;
  try {
    raw = requireHere(bin.file) as RawAddon;
  } catch (e) {
    why = `native addon failed to load (${bin.file}): ${(e as Error).message}`;
    return null;
  }
  const sab = sabPath(raw);
  if (typeof sab === 'string') { why = `native addon loaded from ${bin.from} (${bin.file}), but unusable: ${sab}`; return null; }
  loaded = wrap(raw, sab?.wrap);
  origin = { file: bin.file, from: bin.from, sab: sab === null ? 'node-api' : 'v8 shim', ...(sab === null ? {} : { shim: { file: sab.file, from: sab.from } }) };
  const sabWhy = sab === null ? "shared memory as SharedArrayBuffer through Node-API's node_api_create_external_sharedarraybuffer"
    : `shared memory as SharedArrayBuffer through the V8 shim, ${sab.from} ${path.relative(root(), sab.file)}`;
  why = `native addon loaded from ${bin.from} (${path.relative(root(), bin.file)}; crc32c ${raw.crc32cHardware() ? 'SSE4.2' : 'table'}; ${sabWhy})`;
  return loaded;
}

/** Why the addon is or is not available (for railcomm info). */
export function nativeWhy(): string {
  loadNative();
  return why;
}

/** Where the loaded addon (and shim) came from; null when it is not loaded. */
export function nativeOrigin(): NativeOrigin | null {
  loadNative();
  return origin;
}

/**
 * The addon's binary itself, loaded without RAILCOMM_NO_NATIVE's veto and
 * without the shim: the PMIx client lives in it too (src/boot/pmix.ts). An
 * install that skipped the native parts (RAILCOMM_SKIP_NATIVE=1) loads none.
 */
export function loadBinary(dir = nativeDir()): { ok: true; raw: unknown; file: string; from: 'prebuild' | 'source build' } | { ok: false; why: string } {
  const skipped = skippedAtInstall(dir);
  if (skipped !== null) return { ok: false, why: skipped };
  const bin = resolveBinary(dir);
  if (bin === null) return { ok: false, why: notBuilt(dir) };
  try {
    // Spread: V8 keeps the exports object in dictionary mode, its copy has fast properties (as in rail/ofi/native.ts).
    return { ok: true, raw: { ...(requireHere(bin.file) as object) }, file: bin.file, from: bin.from };
  } catch (e) {
    return { ok: false, why: `native addon failed to load (${bin.file}): ${(e as Error).message}` };
  }
}

/**
 * Remove what a job left in /dev/shm (ranks killed before they could unlink):
 * plain file removal, so it works without the addon. Returns how many went.
 */
export function removeJobSegments(jobId: number, jobKey: string, dir = '/dev/shm'): number {
  const prefix = shmJobPrefix(jobId, jobKey);
  let names: string[];
  try { names = readdirSync(dir); } catch { return 0; }
  let n = 0;
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    try { unlinkSync(path.join(dir, name)); n++; } catch { /* gone meanwhile */ }
  }
  return n;
}
