// Loader of railcomm's libfabric binding (native/ofi: a Node-API module of
// its own, built only where libfabric's headers are) and the shapes of what
// it returns. null, with the reason, where it is not built or does not load.

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { nativeDir, resolveBinary } from '../../native/addon.js';
import { isMainThread } from 'node:worker_threads';
import { OFI_ENV_NAMES, setOfiEnvDefaults } from './env-defaults.js';

/** One answer of fi_getinfo, as native/ofi/ofi-info.cc describes it. */
export interface OfiInfo {
  provider: string;
  fabric: string;
  domain: string;
  addrFormat: number;
  caps: string;
  mrMode: number;
  mrModeText: string;
  dataProgress: 'auto' | 'manual' | 'unspec';
  controlProgress: 'auto' | 'manual' | 'unspec';
  injectSize: number;
  txSize: number;
  rxSize: number;
  iovLimit: number;
  maxMsgSize: number;
  maxTxContexts: number;
  maxRxContexts: number;
  multiRecv: boolean;
  mrKeySize: number;
  /** Refused answers: why the rail cannot use them. */
  why?: string;
}

export interface OfiGetinfo {
  version: string;
  error?: string;
  usable: OfiInfo[];
  refused: OfiInfo[];
}

export interface OfiOpenOptions {
  provider: string;
  domain: string;
  addrFormat: number;
  /** Bytes of each pre-posted receive slot, and how many. */
  rxSlot: number;
  rxCount: number;
  /** Transmit entries: small ones (1 KiB of data) and large ones (largeBytes each). */
  smallCount: number;
  largeBytes: number;
  largeCount: number;
  /** Whether small frames go by fi_inject (default true). */
  inject?: boolean;
  /** Whether the completion queue gets a wait fd to sleep on where the provider has one (default true; RAILCOMM_OFI_WAIT_FD). */
  waitFd?: boolean;
  /** Whether each poll reads the counter of peers' one-sided operations served here (poll head word 7; open.ts remoteWakes; default false). */
  remoteWakes?: boolean;
  /** fi_getinfo's node with FI_SOURCE: the endpoint's own name where the provider takes one (shm: its /dev/shm file). */
  node?: string;
  /** At least 2: a context of a scalable endpoint of this many contexts, shared with this process's other thread ranks. */
  contexts?: number;
}

export interface OfiOpened {
  handle: number;
  /** fi_getname: what peers insert into their address vectors. */
  name: Buffer;
  /** The receive slab (rxCount slots of rxSlot bytes). */
  rx: ArrayBuffer;
  rxSlot: number;
  /** The completion queue's wait fd (-1: none; the rail polls on a timer when idle). */
  waitFd: number;
  inject: number;
  virtAddr: boolean;
  provKey: boolean;
  mrMode: number;
  fabric: string;
  addrFormat: number;
  dataProgress: 'auto' | 'manual';
  txSize: number;
  iovLimit: number;
  maxMsgSize: number;
  /** Max elements per atomic: [(fi datatype * 13 + fi op) * 3 + (0 plain, 1 fetch, 2 compare)]; 0: not offered. */
  atomics: Int32Array;
  /** This rank's context of a shared scalable endpoint (-1: a plain endpoint), and the endpoint's context count (0: plain). */
  context: number;
  contexts: number;
}

export interface OfiRegistration {
  id: number;
  key: bigint;
  /** The registered memory's address in this process. */
  base: number;
}

/** Transmit entry kinds (native/ofi/ofi.h). */
export const K_SEND = 1, K_SENDV = 2, K_WRITE = 3, K_READ = 4, K_ATOMIC = 5, K_FETCH = 6, K_CSWAP = 7;
/** Event records (8 int32 words each, after an 8-word head: count, entries freed, unposted, in flight, free small and large entries, reads made). */
export const EV_RECV = 1, EV_DONE = 2, EV_ERROR = 3;
export const EVENT_WORDS = 8;

export interface OfiBinding {
  /** libfabric's headers' version this binding was built with. */
  readonly headers: string;
  /** The loaded library's version (fi_version), major.minor. */
  readonly runtime: string;
  getinfo(): OfiGetinfo;
  /** Whether the provider's completion queues have a wait fd: 'fd', 'none', or '' (could not open). */
  waitObject(provider: string, domain: string, addrFormat: number): 'fd' | 'none' | '';
  /** fi_strerror. */
  strerror(err: number): string;
  /** setenv(name, value) in the process's real environment unless name is set there (what libfabric reads). */
  setEnvDefault(name: string, value: string): void;
  /** getenv(name) in the process's real environment: what libfabric sees. */
  getEnv(name: string): string | null;
  open(o: OfiOpenOptions): OfiOpened;
  close(h: number): void;
  /** The peer's handle (what the other calls take); ctx: its context of a scalable endpoint, -1 for a plain endpoint. */
  avInsert(h: number, name: Buffer, ctx: number): number;
  /** Where poll writes events, and per receive slot a flag JavaScript sets while it keeps the frame (posted again once cleared). */
  setEvents(h: number, events: Int32Array, hold: Int32Array): void;
  regMr(h: number, view: Uint8Array): OfiRegistration;
  deregMr(h: number, id: number): void;
  remote(h: number, base: number, key: bigint): number;
  dropRemote(h: number, index: number): void;
  cloexec(): number;
  inFlight(h: number): number;
  /** From now on its close leaves libfabric's objects open, to the process's exit (close-hazard.ts). */
  abandonAtClose(h: number): void;
  /** DONE (0), IN_PROGRESS (1), NO_RESOURCE (2) or a negative libfabric errno. */
  send(h: number, fiAddr: number, head: Uint8Array, headLen: number, payload: Uint8Array | null, jsId: number): number;
  /** The buffer sendHead sends from (the rail's frame head, with room for a small payload). */
  setHead(h: number, head: Uint8Array): number;
  /** send(h, fiAddr, head, len, null, 0) for the setHead buffer: DONE, NO_RESOURCE or a negative libfabric errno. */
  sendHead(h: number, fiAddr: number, len: number): number;
  /** fast: the provider writes synchronously (shm over CMA), no FI_DELIVERY_COMPLETE needed. */
  rma(h: number, kind: number, fiAddr: number, view: Uint8Array, remote: number, offset: number, jsId: number, fast: boolean): number;
  /** Whether this process may read process pid's memory at address (cross-memory attach). */
  cmaCheck(pid: number, address: number): boolean;
  atomic(h: number, kind: number, fiAddr: number, datatype: number, op: number, view: Uint8Array, remote: number, offset: number, jsId: number): number;
  /** reads > 1: while the queue is empty, read it again, up to that many times (a synchronous receive's spin). */
  poll(h: number, reads?: number): number;
  /** Completions waiting, read ahead for the next poll (reading is progress: manual-progress providers serve RMA here). */
  pending(h: number): number;
  /** Whether peers' one-sided operations were served here since the last call (where the endpoint counts them: FI_RMA_EVENT, no wait fd). */
  remoteActivity(h: number): boolean;
  errText(h: number, i: number): string;
  watch(h: number, wake: () => void): boolean;
  arm(h: number): boolean;
  disarm(h: number): void;
  /** A synchronous call's wait: at most ms on the queue's wait fd, or a 100 us sleep without one; whether completions wait. */
  block(h: number, ms: number): boolean;
}

let loaded: OfiBinding | null | undefined;
let why = '';
const requireHere = createRequire(import.meta.url);

/** The package's native/ofi folder. */
export function ofiDir(): string {
  return path.join(nativeDir(), 'ofi');
}

/**
 * Whether the binding is built here, without loading it: loading it loads
 * libfabric, whose psm providers' libraries sleep in their constructors (200 ms
 * here), and every init asks components whether they are available.
 */
export function ofiBuilt(): { ok: boolean; why: string } {
  if (loaded !== undefined) return { ok: loaded !== null, why };
  if (process.env['RAILCOMM_NO_NATIVE'] === '1') return { ok: false, why: 'disabled by RAILCOMM_NO_NATIVE=1' };
  if (process.platform !== 'linux') return { ok: false, why: `needs Linux (this is ${process.platform})` };
  const bin = resolveBinary(ofiDir());
  if (bin === null) { loadOfi(); return { ok: false, why }; }
  return { ok: true, why: `libfabric binding built (${path.relative(path.dirname(nativeDir()), bin.file)}; loaded when a job uses it)` };
}

export function loadOfi(): OfiBinding | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (process.env['RAILCOMM_NO_NATIVE'] === '1') { why = 'disabled by RAILCOMM_NO_NATIVE=1'; return null; }
  if (process.platform !== 'linux') { why = `needs Linux (this is ${process.platform})`; return null; }
  const bin = resolveBinary(ofiDir());
  if (bin === null) {
    let log = '';
    try { log = readFileSync(path.join(ofiDir(), 'build-log.txt'), 'utf8').split('\n')[0] ?? ''; } catch { /* never built */ }
    why = `libfabric binding not built (${log || 'run node native/ofi/build.mjs'}; it needs libfabric's headers: apt-get install libfabric-dev)`;
    return null;
  }
  // In a thread rank this changes only the worker's copy (env-defaults.ts): the binding copies them below.
  setOfiEnvDefaults();
  try {
    // A copy: V8 keeps the addon's exports object (some thirty functions) in
    // dictionary mode (%HasFastProperties false), where every `b.poll` in
    // optimised code stays a LoadIC call (4% of a synchronous ping-pong's time
    // in a profile); an object spread has fast properties (test/integration/ofi.test.mjs).
    loaded = { ...(requireHere(bin.file) as OfiBinding) };
    // Into the process's real environment, where libfabric reads them when it
    // initializes (at the first fi_getinfo, after this). setenv without
    // overwrite leaves what is there (the thread host's values for a job that
    // names ofi, the user's) untouched.
    if (!isMainThread) for (const name of OFI_ENV_NAMES) loaded.setEnvDefault(name, process.env[name]!);
    why = `libfabric binding loaded (${path.relative(path.dirname(nativeDir()), bin.file)}, headers ${loaded.headers})`;
  } catch (e) {
    why = `libfabric binding failed to load (${bin.file}): ${(e as Error).message.split('\n')[0]}`;
  }
  return loaded;
}

export function ofiWhy(): string {
  loadOfi();
  return why;
}
