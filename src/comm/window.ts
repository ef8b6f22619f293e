// One-sided communication windows (MPI-3 style, DESIGN section 4): memory each
// rank exposes to the others, with put/get/accumulate/atomics inside epochs
// (between fences, or between lock and unlock of a target). Arguments are
// checked here, at the call; the protocol layer's RMA engine moves the bytes.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { hostKey } from '../core/host.js';
import { shmJobPrefix } from '../native/addon.js';
import { cleanupOnSignal } from '../core/signal-cleanup.js';
import { UserOp } from './coll/ops.js';
import { asBytes, describe } from '../core/bytes.js';
import { allocFailed, checkByteCount, checkRank, kindOf, shown } from './checks.js';
import type { Communicator } from './communicator.js';
import type { World } from './world.js';
import type { RmaEngine } from '../proto/rma/engine.js';
import { sharedThreads } from '../proto/rma/thread-share.js';
import {
  RKEY_MAX, SHARE_HOST, SHARE_NONE, SHARE_THREADS, packRkey, unpackRkey, type Region, type RemoteRegion, type SharedSegments,
} from '../proto/rma/region.js';
import {
  OP_CSWAP, forgetElementViews, OP_NAMES, OP_NO_OP, OP_REPLACE, T_F64, T_I32, T_I64, T_U32, T_U64, TYPE_SIZE, isBitwiseOp, isFloatType, typeOfArray, accumulateOpCode,
  type AnyArray,
} from '../proto/rma/apply.js';
import { LOCK_EXCLUSIVE, LOCK_SHARED } from '../proto/rma/wire.js';

export type AtomicType = 'i32' | 'i64' | 'u32' | 'u64' | 'f64';
/** The JavaScript value of an element of atomic type T: bigint for the 64-bit integers, number otherwise. */
export type AtomicValue<T extends AtomicType> = T extends 'i64' | 'u64' ? bigint : number;
export type AccumulateOp = 'sum' | 'prod' | 'min' | 'max' | 'band' | 'bor' | 'bxor' | 'land' | 'lor' | 'replace';
export type FetchOp = 'sum' | 'min' | 'max' | 'band' | 'bor' | 'bxor' | 'replace' | 'no_op';
export type LockMode = 'exclusive' | 'shared';

const ATOMIC_TYPES: Record<string, number> = { i32: T_I32, u32: T_U32, i64: T_I64, u64: T_U64, f64: T_F64 };
const FETCH_OPS: readonly string[] = ['sum', 'min', 'max', 'band', 'bor', 'bxor', 'replace', 'no_op'];
const FLOAT_FETCH_OPS: readonly string[] = ['sum', 'min', 'max', 'replace', 'no_op'];
const codes = (ops: readonly string[]): ReadonlyMap<string, number> => new Map(ops.map((o) => [o, o === 'no_op' ? OP_NO_OP : (OP_NAMES as readonly string[]).indexOf(o)]));
const FETCH_CODES = codes(FETCH_OPS);
const FLOAT_FETCH_CODES = codes(FLOAT_FETCH_OPS);
/** accumulate's ops: the op codes up to replace, whose index is their code. */
const ACC_OPS: readonly string[] = OP_NAMES.slice(0, OP_REPLACE + 1);

/** How the window's memory came to be (for allocWindow). */
interface Allocation {
  bytes: Uint8Array;
  share: number;
  segment: string | null;
}

/** Lock state of a target (Window.locked). */
const ACQUIRING = 1, HELD = 2;

export class Window {
  /** This rank's window memory. */
  readonly buffer: Uint8Array;
  private readonly comm: Communicator;
  private readonly rma: RmaEngine;
  private readonly region: Region;
  private readonly remote: RemoteRegion[];
  private readonly world: World;
  private fenceOpen = false;
  /** Per target rank: ACQUIRING while lock() waits for the grant, HELD after it (an array: every put checks it). */
  private readonly locked: Uint8Array;
  private freed = false;

  /** @internal */
  constructor(comm: Communicator, rma: RmaEngine, region: Region, remote: RemoteRegion[]) {
    this.comm = comm;
    this.world = comm.world;
    this.rma = rma;
    this.region = region;
    this.remote = remote;
    this.buffer = region.bytes;
    this.locked = new Uint8Array(comm.size);
  }

  /** How many targets this rank reaches directly through shared memory (the others go through the target). */
  get directTargets(): number {
    return this.remote.filter((r) => r.local !== null).length;
  }

  // ---- data movement -----------------------------------------------------

  /** Write src's bytes into target's window at targetByteOffset. Resolves at local completion. */
  put(src: ArrayBufferView, target: number, targetByteOffset: number): Promise<void> {
    const bytes = asBytes(src, 'put: source');
    const rr = this.access('put', target, targetByteOffset, bytes.length, 1);
    return this.rma.put(rr.world, rr, targetByteOffset, bytes) as Promise<void>;
  }

  /** Read target's window at targetByteOffset into dst. Resolves once the bytes are in dst. */
  get(dst: ArrayBufferView, target: number, targetByteOffset: number): Promise<void> {
    const bytes = asBytes(dst, 'get: destination');
    const rr = this.access('get', target, targetByteOffset, bytes.length, 1);
    return this.rma.get(rr.world, rr, targetByteOffset, bytes) as Promise<void>;
  }

  /** Combine src element-wise into target's window (element type: src's), atomically per element. */
  accumulate(src: ArrayBufferView, target: number, targetByteOffset: number, op: AccumulateOp): Promise<void> {
    const type = typeOfArray(src);
    if (type < 0) throw new RailcommError(ErrorCode.INVALID_ARG, `accumulate: source must be an integer, float or bigint typed array (not Uint8ClampedArray or DataView), got ${describe(src)}`);
    const code = accumulateOpCode(op);
    if (code < 0) throw badAccumulateOp(op);
    if (isBitwiseOp(code) && isFloatType(type)) throw new RailcommError(ErrorCode.INVALID_ARG, `accumulate: bitwise op '${op}' is not defined on ${src.constructor.name}; use an integer array`);
    const elements = src as AnyArray;
    // (A detached buffer reads as no elements: asBytes says so. No byte view is made otherwise:
    // mapped targets apply the elements themselves, and only a send through the target needs bytes.)
    if (elements.length === 0) asBytes(src, 'accumulate: source');
    const size = TYPE_SIZE[type]!;
    const rr = this.access('accumulate', target, targetByteOffset, elements.length * size, size);
    return this.rma.accumulate(rr.world, rr, targetByteOffset, elements, type, code) as Promise<void>;
  }

  /** Apply op with value to one element of target's window; resolves to the element's previous value. */
  fetchAndOp<T extends AtomicType>(value: AtomicValue<T>, target: number, targetByteOffset: number, op: FetchOp, type: T): Promise<AtomicValue<T>> {
    const t = this.atomicType('fetchAndOp', type);
    const code = (t === T_F64 ? FLOAT_FETCH_CODES : FETCH_CODES).get(op);
    if (code === undefined) throw new RailcommError(ErrorCode.INVALID_ARG, `fetchAndOp: op must be one of ${(t === T_F64 ? FLOAT_FETCH_OPS : FETCH_OPS).join(', ')} for ${type}, got ${shown(op)}`);
    const v = this.atomicValue('fetchAndOp', 'value', value, t, type);
    const rr = this.access('fetchAndOp', target, targetByteOffset, TYPE_SIZE[t]!, TYPE_SIZE[t]!);
    return this.rma.atomic(rr.world, rr, targetByteOffset, t, code, v, v) as Promise<AtomicValue<T>>;
  }

  /** If target's element equals compare, write swap; resolves to the element's previous value either way. */
  compareAndSwap<T extends AtomicType>(compare: AtomicValue<T>, swap: AtomicValue<T>, target: number, targetByteOffset: number, type: T): Promise<AtomicValue<T>> {
    const t = this.atomicType('compareAndSwap', type);
    const c = this.atomicValue('compareAndSwap', 'compare', compare, t, type);
    const s = this.atomicValue('compareAndSwap', 'swap', swap, t, type);
    const rr = this.access('compareAndSwap', target, targetByteOffset, TYPE_SIZE[t]!, TYPE_SIZE[t]!);
    return this.rma.atomic(rr.world, rr, targetByteOffset, t, OP_CSWAP, s, c) as Promise<AtomicValue<T>>;
  }

  // ---- synchronisation -----------------------------------------------------

  /**
   * Active-target synchronisation, collective: every operation this rank
   * issued is complete at its target, and every operation issued to this
   * rank before the other ranks' fence is visible here. Opens the next epoch.
   */
  fence(): Promise<void> {
    this.live('fence');
    return this.fenceAfterChecks();
  }

  private async fenceAfterChecks(): Promise<void> {
    await this.completeAll();
    await this.comm.barrier();
    this.fenceOpen = true;
  }

  /** Start a passive-target epoch on target: resolves once its lock is granted (queued, first come first served). */
  lock(target: number, mode: LockMode = 'exclusive'): Promise<void> {
    this.live('lock');
    const rr = this.target('lock', target);
    if (mode !== 'exclusive' && mode !== 'shared') throw new RailcommError(ErrorCode.INVALID_ARG, `lock: mode must be 'exclusive' or 'shared', got ${shown(mode)}`);
    if (this.locked[target] !== 0) throw new RailcommError(ErrorCode.INVALID_ARG, `lock: this rank already holds the lock of rank ${target}'s window; unlock it first`);
    this.locked[target] = ACQUIRING;
    return this.acquire(rr, target, mode);
  }

  private async acquire(rr: RemoteRegion, target: number, mode: LockMode): Promise<void> {
    try {
      await this.rma.lock(rr.world, rr.id, mode === 'exclusive' ? LOCK_EXCLUSIVE : LOCK_SHARED);
      this.locked[target] = HELD;
    } catch (e) {
      this.locked[target] = 0;
      throw e;
    }
  }

  /** End the epoch on target: its operations are complete there, then the lock is released. */
  unlock(target: number): Promise<void> {
    this.live('unlock');
    const rr = this.target('unlock', target);
    if (this.locked[target] !== HELD) throw new RailcommError(ErrorCode.INVALID_ARG, `unlock: this rank holds no lock on rank ${target}'s window${this.locked[target] === ACQUIRING ? ' yet (await lock() first)' : ''}`);
    return this.release(rr, target);
  }

  private async release(rr: RemoteRegion, target: number): Promise<void> {
    try {
      await this.rma.unlock(rr.world, rr.id);
    } finally {
      this.locked[target] = 0;
    }
  }

  /** Every operation this rank issued to target is complete there (the epoch stays open). */
  flush(target: number): Promise<void> {
    // Not async: a flush with nothing outstanding returns an already settled
    // promise, and the one-sided latency loop (put, flush) pays one await
    // instead of three. Bad arguments throw at the call, as put's do.
    this.live('flush');
    return this.rma.flush(this.target('flush', target).world) as Promise<void>;
  }

  /**
   * Whether every operation this rank issued to target is complete there
   * already, without waiting: a flush that would resolve at once. On memory
   * mapped from the target (ranks on one host) operations complete at their
   * call, so `win.put(buf, t, off); if (!win.testFlush(t)) await win.flush(t);`
   * pays no await there and still waits where the target applies them.
   * Native operations (the ofi rail) count once the rail completed them: it
   * reads the rail's queue once to see. Throws ERR_PEER_FAILED for a failed target.
   */
  testFlush(target: number): boolean {
    this.live('testFlush');
    return this.rma.flushedNow(this.target('testFlush', target).world);
  }

  /** Every operation this rank issued to any rank of the window is complete there (MPI_Win_flush_all). */
  flushAll(): Promise<void> {
    this.live('flushAll');
    return this.completeAll();
  }

  /** Collective: complete everything, then release the window on every rank. */
  free(): Promise<void> {
    this.live('free');
    const held = [...this.locked.keys()].filter((r) => this.locked[r] !== 0);
    if (held.length > 0) throw new RailcommError(ErrorCode.INVALID_ARG, `free: this rank still holds locks on ranks ${held.join(', ')}; unlock them first`);
    this.freed = true;
    return this.freeAfterChecks();
  }

  private async freeAfterChecks(): Promise<void> {
    await this.completeAll();
    await this.comm.barrier();
    this.rma.deregister(this.region);
    if (this.region.share === SHARE_THREADS) this.rma.threadShare?.withdraw(`${this.comm.world.ctx.worldRank}/${this.region.id}`);
    for (const r of this.remote) r.local = null;
    forgetElementViews();
    this.rma.progress.serve(false);
  }

  private async completeAll(): Promise<void> {
    const waits: Array<Promise<unknown>> = [];
    for (let r = 0; r < this.comm.size; r++) waits.push(this.rma.flush(this.remote[r]!.world));
    await Promise.all(waits);
  }

  // ---- checks --------------------------------------------------------------

  // The checks run on every put and get: each failure's message is built in
  // a function of its own, so that the hot functions stay small enough for
  // V8 to inline them into the call (7-8 ns a put here).

  private live(what: string): void {
    if (this.freed || this.world.isFinalized) this.notLive(what);
  }

  private notLive(what: string): never {
    this.comm.world.check(`window.${what}`);
    throw new RailcommError(ErrorCode.INVALID_ARG, `window.${what}: the window was freed`);
  }

  /** Checks an access: epoch, target, range and alignment; returns the target's region. */
  private access(what: string, target: number, offset: number, len: number, align: number): RemoteRegion {
    this.live(what);
    const rr = this.target(what, target);
    if (!this.fenceOpen && this.locked[target] !== HELD) this.noEpoch(what, target);
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + len > rr.length) this.outOfRange(what, target, offset, len);
    if (align > 1 && (rr.align + offset) % align !== 0) this.misaligned(what, target, offset, align);
    return rr;
  }

  /**
   * The target's region. A target that is not an index of the array
   * (negative, fractional, too large, not a number) reads undefined:
   * checkRank then says why (one lookup on the hot path, no checks).
   */
  private target(what: string, target: number): RemoteRegion {
    const rr = typeof target === 'number' ? this.remote[target] : undefined;
    if (rr === undefined) throw this.badTarget(what, target);
    return rr;
  }

  private badTarget(what: string, target: unknown): RailcommError {
    checkRank(target, this.comm.size, what, false, ': target');
    return new RailcommError(ErrorCode.RANK, `${what}: target ${shown(target)} is not a rank of this communicator`);
  }

  private noEpoch(what: string, target: number): never {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: outside an epoch; call fence() on every rank, or await lock(${target}) first`);
  }

  private outOfRange(what: string, target: number, offset: number, len: number): never {
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset)) throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: offset ${kindOf(offset)}; pass a byte offset into rank ${target}'s window`);
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: ${len} bytes at offset ${shown(offset)} do not fit rank ${target}'s window of ${this.remote[target]!.length} bytes`);
  }

  private misaligned(what: string, target: number, offset: number, align: number): never {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: offset ${offset} is not aligned to the ${align}-byte element in rank ${target}'s window`);
  }

  private atomicType(what: string, type: unknown): number {
    const t = typeof type === 'string' ? ATOMIC_TYPES[type] : undefined;
    if (t === undefined) throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: type must be one of ${Object.keys(ATOMIC_TYPES).join(', ')}, got ${shown(type)}`);
    return t;
  }

  private atomicValue(what: string, name: string, v: unknown, t: number, type: string): number | bigint {
    if (t === T_I64 || t === T_U64) {
      if (typeof v !== 'bigint') throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: ${name} must be a bigint for type ${type}, got ${describe(v)}`);
      return v;
    }
    if (typeof v !== 'number' || (t !== T_F64 && !Number.isInteger(v))) {
      throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: ${name} must be ${t === T_F64 ? 'a number' : 'an integer number'} for type ${type}, got ${describe(v)}`);
    }
    return v;
  }
}

// ---- creation (collective) ---------------------------------------------------

// Both check their arguments at the call (a wrong one throws there, as every
// call's does) and return the collective creation's promise.

/** comm.window(buf): expose an existing buffer. */
export function exposeWindow(comm: Communicator, buf: ArrayBufferView): Promise<Window> {
  comm.world.check('window');
  const bytes = asBytes(buf, 'window buffer');
  const threads = comm.world.ctx.launch.threads >= 2;
  const share = threads && bytes.buffer instanceof SharedArrayBuffer ? SHARE_THREADS : SHARE_NONE;
  return createWindow(comm, { bytes, share, segment: null });
}

/** comm.allocWindow(bytes): railcomm allocates zero-filled, 8-byte aligned memory, shared where ranks share a host. */
export function allocateWindow(comm: Communicator, size: number): Promise<Window> {
  comm.world.check('allocWindow');
  checkByteCount(size, 'allocWindow');
  const ctx = comm.world.ctx;
  const launch = ctx.launch;
  const segs = ctx.rma.segments;
  const otherProcessesHere = launch.localSize > launch.threads;
  if (segs !== null && otherProcessesHere) {
    const name = `${shmJobPrefix(launch.jobId, launch.jobKey)}w${launch.rank}-${process.pid}-${nextSegment++}`;
    let sab: SharedArrayBuffer;
    try {
      sab = segs.shmCreate(name, Math.max(size, 8));
    } catch (e) {
      throw allocFailed('allocWindow', size, e);
    }
    return windowOnSegment(comm, segs, name, new Uint8Array(sab, 0, size));
  }
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(launch.threads >= 2 ? new SharedArrayBuffer(size) : new ArrayBuffer(size));
  } catch (e) {
    throw allocFailed('allocWindow', size, e);
  }
  return createWindow(comm, { bytes, share: launch.threads >= 2 ? SHARE_THREADS : SHARE_NONE, segment: null });
}

let nextSegment = 0;

/** A window over a new /dev/shm segment: its name goes once every rank mapped it, or if the window is not made. */
async function windowOnSegment(comm: Communicator, segs: SharedSegments, name: string, bytes: Uint8Array): Promise<Window> {
  // Until every rank mapped it (createWindow removes the name), a signal must not leave it behind.
  const release = cleanupOnSignal(() => segs.shmUnlink(name));
  try {
    return await createWindow(comm, { bytes, share: SHARE_HOST, segment: name });
  } catch (e) {
    segs.shmUnlink(name); // a window that was not made leaves no name behind (once unlinked, again is harmless)
    throw e;
  } finally {
    release();
  }
}

async function createWindow(comm: Communicator, a: Allocation): Promise<Window> {
  const ctx = comm.world.ctx;
  const rma = ctx.rma;
  // Windows synchronise on a communicator of their own, so fences never meet the user's collectives.
  const own = await comm.dup();
  if (a.share === SHARE_THREADS) sharedThreads(rma, ctx.launch.jobId, (f) => ctx.atClose(f));
  const region = rma.regions.register(a.bytes, a.share, a.segment);
  const mine = new Uint8Array(RKEY_MAX);
  mine.set(packRkey(region, hostKey()));
  const all = new Uint8Array(RKEY_MAX * own.size);
  await own.allgather(mine, all);
  // Every rank's thread channel exists now (it was made before the allgather): offers reach them all.
  if (a.share === SHARE_THREADS) rma.threadShare!.offer(`${ctx.worldRank}/${region.id}`, a.bytes);
  const remote: RemoteRegion[] = [];
  for (let r = 0; r < own.size; r++) {
    const k = unpackRkey(all.subarray(r * RKEY_MAX, (r + 1) * RKEY_MAX));
    const rr: RemoteRegion = { world: own.worldRankOf(r), id: k.id, length: k.length, align: k.align, local: null, rails: k.rails };
    if (r === own.rank) rr.local = a.bytes;
    else if (k.share === SHARE_THREADS && k.pid === process.pid && rma.threadShare !== null) {
      rr.local = await rma.threadShare.take(`${own.worldRankOf(r)}/${k.id}`, ctx.params.connectTimeout);
    } else if (k.share === SHARE_HOST && k.hostKey === hostKey() && rma.segments !== null) {
      try {
        rr.local = new Uint8Array(rma.segments.shmOpen(k.segment), 0, k.length);
      } catch (e) {
        ctx.log.debug(`window: cannot map rank ${r}'s segment ${k.segment} (${(e as Error).message}); its operations go through rank ${r}`);
      }
    }
    remote.push(rr);
  }
  // Everyone mapped what they could: the name is no longer needed.
  await own.barrier();
  if (a.segment !== null) {
    rma.segments?.shmUnlink(a.segment);
    region.segment = null;
  }
  rma.progress.serve(true);
  return new Window(own, rma, region, remote);
}

/** Why accumulate refuses an op; a user-defined one gets its own answer. */
function badAccumulateOp(op: unknown): RailcommError {
  if (op instanceof UserOp) {
    return new RailcommError(ErrorCode.INVALID_ARG, `accumulate: user-defined ops (${String(op)}) are not supported: accumulate is applied where the target's memory is, which may be another process that cannot run your function; lock the target exclusively, get, combine and put, or use one of ${ACC_OPS.join(', ')}`);
  }
  return new RailcommError(ErrorCode.INVALID_ARG, `accumulate: op must be one of ${ACC_OPS.join(', ')}, got ${shown(op)}`);
}
