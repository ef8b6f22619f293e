// The one-sided engine: put, get, accumulate, atomics, flush and window locks
// on registered regions. An operation on memory this rank can map (its own,
// another thread's SharedArrayBuffer, a host segment) is done directly with
// Atomics; otherwise it is an active message the target applies on arrival.
// Lanes are ordered, so a FLUSH answered by the target covers everything sent
// to it before; completion is counted per target endpoint. Where the lane's
// rail runs one-sided operations natively (ofi), native.ts issues them.

import type { AmHandler, Rail, RailEndpoint, ValueCompletion } from '../../rail/api.js';
import { NO_RESOURCE } from '../../rail/api.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { pendingPromise, takeReject, takeResolve } from '../../core/settlers.js';
import { ProtoEndpoint } from '../endpoint.js';
import type { AmRegistry } from '../am.js';
import type { Progress } from '../progress.js';
import type { HangWait } from '../hang.js';
import { LockTable, type LockRequest } from './locks.js';
import { RegionTable, type Region, type RemoteRegion, type SharedSegments } from './region.js';
import { NativeRma } from './native.js';
import type { ThreadShare } from './thread-share.js';
import { copyElements } from '../../native/copy.js';
import { accumulateElements, applyAccumulate, applyAtomic, readValue, writeValue, TYPE_SIZE, OP_CSWAP, OP_NO_OP, type AnyArray } from './apply.js';
import {
  AM_RMA_ACC, AM_RMA_ATOMIC, AM_RMA_FLUSH, AM_RMA_GET, AM_RMA_GET_DATA, AM_RMA_LOCK, AM_RMA_PUT, AM_RMA_REPLY, AM_RMA_UNLOCK,
  ACC_HDR, ATOMIC_COMPARE, ATOMIC_HDR, ATOMIC_OPERAND, CTRL_HDR, GET_HDR, PUT_HDR, REPLY_HDR,
  RMA_ERR_OP, RMA_ERR_RANGE, RMA_ERR_REGION, RMA_OK,
  accOp, accType, atomicOp, atomicOpId, atomicType, ctrlMode, ctrlOpId, ctrlRegion, encodeAcc, encodeAtomic, encodeCtrl,
  encodeGet, encodeReply, encodeTarget, getLength, getOpId, replyOffset, replyOpId, replyStatus, tgtOffset, tgtRegion,
} from './wire.js';

export interface RmaHost {
  readonly worldRank: number;
  /** The open rails (memory is registered with those that run one-sided operations natively). */
  readonly rails?: readonly Rail[];
  endpointFor(world: number): ProtoEndpoint;
  existingEndpoint(world: number): ProtoEndpoint | undefined;
}

const K_PUT = 0, K_GET = 1, K_ACC = 2, K_ATOMIC = 3, K_FLUSH = 4, K_LOCK = 5, K_UNLOCK = 6;
const KIND_NAMES = ['put', 'get', 'accumulate', 'atomic', 'flush', 'lock', 'unlock'];
const STATUS_TEXT = ['', 'the target region is not registered (window freed?)', 'the range is outside the target region', 'the target refused the operation or element type'];

/** Ignores completions nobody waits for (replies sent from window memory). */
const NOOP: ValueCompletion = { railComplete(): void { /* nothing waits */ }, railValue(): void { /* nothing waits */ } };
/** Marks a rejection handled: the next flush of that target reports the failure too (failedUnflushed). */
const ignore = (): void => { /* reported by the next flush */ };
const RESOLVED: Promise<void> = Promise.resolve();

/** One operation in flight: its parameters (it may wait for the lane) and what it still waits for. */
class RmaOp implements ValueCompletion {
  id = 0;
  /** The target's region as this rank knows it (native operations use its rail keys); null for control operations. */
  rr: RemoteRegion | null = null;
  /** A native operation of the lane's rail in flight (native.ts). */
  native = false;
  /** FLUSH/UNLOCK: the emulated accumulates it covers (native.ts). */
  accMark = 0;
  /** Local completions outstanding: rail operations queued or in flight. */
  pieces = 0;
  /** Reply bytes (get) or replies (atomic, control) still expected. */
  awaiting = 0;
  issued = false;
  result: number | bigint = 0;
  /** FLUSH: the count of operations it covers. */
  mark = 0;
  settled = false;
  private resolveFn: ((v: number | bigint) => void) | null = null;
  private rejectFn: ((e: RailcommError) => void) | null = null;
  readonly promise: Promise<number | bigint>;

  constructor(
    readonly engine: RmaEngine,
    readonly kind: number,
    readonly target: number,
    readonly region: number,
    readonly offset: number,
    readonly bytes: Uint8Array,
    readonly type: number,
    readonly code: number,
    readonly operand: number | bigint,
    readonly compare: number | bigint,
  ) {
    this.promise = pendingPromise<number | bigint>();
    this.resolveFn = takeResolve<number | bigint>();
    this.rejectFn = takeReject();
  }

  railComplete(err: RailcommError | null): void {
    if (err !== null) this.fail(err);
    else { this.pieces--; this.check(); }
    if (this.native) { this.native = false; this.engine.native.done(this, err); }
  }

  /** A native fetching atomic's old value (before railComplete). */
  railValue(v: number | bigint): void {
    this.result = v;
  }

  check(): void {
    if (this.issued && this.pieces <= 0 && this.awaiting <= 0) this.finish();
  }

  finish(): void {
    if (this.settled) return;
    this.settled = true;
    if (this.kind === K_FLUSH || this.kind === K_UNLOCK) this.engine.flushFinished(this);
    this.engine.settled(this);
    this.resolveFn!(this.kind === K_ATOMIC ? this.result : 0);
  }

  fail(err: RailcommError): void {
    if (this.settled) return;
    this.settled = true;
    this.engine.settled(this);
    // An operation need not be awaited (MPI_Put's shape: the next flush
    // completes it): when its target failed, that flush rejects too, so the
    // operation's own rejection must not count as unhandled and end the
    // process. Other failures stay the operation's own to report.
    if (this.kind <= K_ATOMIC && err.code === ErrorCode.PEER_FAILED) this.engine.failedQuietly(this.target, this.promise);
    this.rejectFn!(err);
  }
}

/** Per target: operations sent that only a FLUSH can confirm, and operations waiting for the lane. */
interface TargetState {
  issued: number;
  flushed: number;
  waitingLane: RmaOp[];
}

export class RmaEngine {
  readonly regions = new RegionTable();
  readonly locks = new LockTable();
  /** Named shared-memory segments (native addon), where this build has them. */
  segments: SharedSegments | null = null;
  /** Hands SharedArrayBuffers between thread ranks; made by the first window in a thread job. */
  threadShare: ThreadShare | null = null;
  /** Counted protocol errors from peers (unknown op ids, bad ranges). */
  protocolErrors = 0;
  /** Operations done directly on mapped memory, and through the target. */
  // Doubles from the start (-0 reads as 0): counts that pass 2^31 in a long job
  // would otherwise change representation mid-run and deoptimize the hot paths.
  nativeOps = -0;
  emulatedOps = -0;
  private readonly host: RmaHost;
  readonly progress: Progress;
  private readonly ops = new Map<number, RmaOp>();
  private readonly targets = new Map<number, TargetState>();
  private nextOpId = 1;
  private readonly hdr = new Uint8Array(64);
  private readonly hv = new DataView(this.hdr.buffer);
  private readonly val = new DataView(new ArrayBuffer(8));
  private readonly valBytes = new Uint8Array(this.val.buffer);
  /** Operations the lane's rail runs natively (ofi), and the order rules beside emulation. */
  readonly native: NativeRma;

  constructor(host: RmaHost, am: AmRegistry, progress: Progress) {
    this.host = host;
    this.progress = progress;
    this.native = new NativeRma((target, op) => {
      const ep = this.host.existingEndpoint(target);
      if (ep === undefined || ep.failure !== null || ep.lane === null) op.fail(ep?.failure ?? new RailcommError(ErrorCode.PEER_FAILED, `rank ${target} is gone`));
      else this.issue(ep, op as RmaOp);
    }, () => { this.nativeOps++; });
    this.regions.onRegister = (r) => NativeRma.register(r, this.host.rails ?? []);
    am.register(AM_RMA_PUT, 'rma-put', this.putHandler);
    am.register(AM_RMA_ACC, 'rma-acc', this.accHandler);
    am.register(AM_RMA_GET, 'rma-get', this.getHandler);
    am.register(AM_RMA_ATOMIC, 'rma-atomic', this.atomicHandler);
    am.register(AM_RMA_FLUSH, 'rma-flush', this.ctrlHandler(AM_RMA_FLUSH));
    am.register(AM_RMA_LOCK, 'rma-lock', this.ctrlHandler(AM_RMA_LOCK));
    am.register(AM_RMA_UNLOCK, 'rma-unlock', this.ctrlHandler(AM_RMA_UNLOCK));
    am.register(AM_RMA_REPLY, 'rma-reply', this.replyHandler);
    am.register(AM_RMA_GET_DATA, 'rma-get-data', this.getDataHandler);
  }

  // ---- origin side -------------------------------------------------------

  /**
   * A peer known dead: its mapped memory may still be there, but operations
   * on it fail. The rejection is marked handled (the flush that follows
   * reports the failure too, so it never counts as unhandled).
   */
  private deadTarget(target: number): Promise<never> | null {
    // Checked on every operation on mapped memory: no lookup until some peer failed.
    if (this.failedPeers === 0) return null;
    const f = this.host.existingEndpoint(target)?.failure;
    if (!f) return null;
    const dead = Promise.reject(f);
    this.failedQuietly(target, dead);
    return dead;
  }

  /**
   * An operation on target failed because target failed: its rejection is
   * marked handled, and the next flush (or testFlush) of target reports the
   * failure, even with nothing left outstanding there.
   */
  failedQuietly(target: number, p: Promise<unknown>): void {
    p.catch(ignore);
    this.failedUnflushed.add(target);
  }

  /** Targets with operations that failed (their target failed) since target's last flush. */
  private readonly failedUnflushed = new Set<number>();

  /** The failure of an operation on target that no flush reported yet (null: none); `take` clears it. */
  private unflushedFailure(target: number, take: boolean): RailcommError | null {
    if (this.failedUnflushed.size === 0 || !this.failedUnflushed.has(target)) return null;
    if (take) this.failedUnflushed.delete(target);
    return this.host.existingEndpoint(target)?.failure ?? null;
  }

  // put and get on mapped memory are a copy: their bodies stay small (the
  // rest is in putThrough / getThrough) so that V8 inlines them into the
  // window's call; an 8-byte put cost 31 ns before, 17 with everything inline.

  /** Copy src into the target region at offset. Resolves at local completion. */
  put(target: number, rr: RemoteRegion, offset: number, src: Uint8Array): Promise<unknown> {
    const dst = rr.local;
    if (dst === null || this.failedPeers !== 0) return this.putThrough(target, rr, offset, src);
    const n = src.length;
    // A few bytes by a loop here (as get does): the call and TypedArray.set
    // cost more than copying 8 bytes, and a loop shared with get ran slower.
    if (n <= 64) for (let i = 0; i < n; i++) dst[offset + i] = src[i]!;
    else copyElements(dst, offset, src, 0, n);
    this.nativeOps++;
    return RESOLVED;
  }

  /** put through the target (AMs), or to a mapped target that failed. */
  private putThrough(target: number, rr: RemoteRegion, offset: number, src: Uint8Array): Promise<unknown> {
    if (rr.local !== null) {
      const dead = this.deadTarget(target);
      if (dead !== null) return dead;
      rr.local.set(src, offset);
      this.nativeOps++;
      return RESOLVED;
    }
    const op = new RmaOp(this, K_PUT, target, rr.id, offset, src, 0, 0, 0, 0);
    op.rr = rr;
    return this.start(op);
  }

  /** Copy the target region at offset into dst. Resolves once the bytes are here. */
  get(target: number, rr: RemoteRegion, offset: number, dst: Uint8Array): Promise<unknown> {
    const src = rr.local;
    if (src === null || this.failedPeers !== 0) return this.getThrough(target, rr, offset, dst);
    const n = dst.length;
    // A few bytes by a loop: subarray() would allocate a view per call,
    // which costs more than the copy (8-byte get, median: 0.10-0.11 -> 0.08-0.09 us).
    if (n <= 64) for (let i = 0; i < n; i++) dst[i] = src[offset + i]!;
    else copyElements(dst, 0, src, offset, n);
    this.nativeOps++;
    return RESOLVED;
  }

  /** get through the target (AMs), or from a mapped target that failed. */
  private getThrough(target: number, rr: RemoteRegion, offset: number, dst: Uint8Array): Promise<unknown> {
    if (rr.local !== null) {
      const dead = this.deadTarget(target);
      if (dead !== null) return dead;
      dst.set(rr.local.subarray(offset, offset + dst.byteLength));
      this.nativeOps++;
      return RESOLVED;
    }
    if (dst.byteLength === 0) return RESOLVED;
    const op = new RmaOp(this, K_GET, target, rr.id, offset, dst, 0, 0, 0, 0);
    op.rr = rr;
    return this.start(op);
  }

  /**
   * target[offset + i] = target[offset + i] op elements[i], atomically per
   * element (src: the same elements as bytes, for the wire).
   */
  accumulate(target: number, rr: RemoteRegion, offset: number, elements: AnyArray, type: number, op: number): Promise<unknown> {
    if (rr.local !== null) {
      const dead = this.deadTarget(target);
      if (dead !== null) return dead;
      accumulateElements(rr.local, offset, elements, type, op);
      this.nativeOps++;
      return RESOLVED;
    }
    const src = new Uint8Array(elements.buffer, elements.byteOffset, elements.byteLength);
    const o = new RmaOp(this, K_ACC, target, rr.id, offset, src, type, op, 0, 0);
    o.rr = rr;
    return this.start(o);
  }

  /** Fetch-and-op (op) or compare-and-swap (OP_CSWAP) on one element; resolves to the old value. */
  atomic(target: number, rr: RemoteRegion, offset: number, type: number, op: number, operand: number | bigint, compare: number | bigint): Promise<number | bigint> {
    if (rr.local !== null) {
      const dead = this.deadTarget(target);
      if (dead !== null) return dead;
      this.nativeOps++;
      return Promise.resolve(applyAtomic(rr.local, offset, type, op, operand, compare));
    }
    const o = new RmaOp(this, K_ATOMIC, target, rr.id, offset, EMPTY, type, op, operand, compare);
    o.rr = rr;
    return this.start(o);
  }

  /**
   * Whether every operation this rank issued to target so far is complete
   * there, without waiting or sending anything: true on mapped memory (each
   * operation completed at its call), and through the target once a flush
   * confirmed them. Throws when operations on target failed since its last
   * flush because target failed (that flush will reject too).
   */
  flushedNow(target: number): boolean {
    // Left for the flush to report as well (testing does not take it).
    const f = this.unflushedFailure(target, false);
    if (f !== null) throw f;
    if (this.targets.size === 0) return true;
    const t = this.targets.get(target);
    return t === undefined || t.flushed >= t.issued;
  }

  /** Every operation this rank issued to target so far is complete there. */
  flush(target: number): Promise<unknown> {
    // Operations on target failed since the last flush (target failed): so does this flush.
    const failed = this.unflushedFailure(target, true);
    if (failed !== null) return Promise.reject(failed);
    // Only operations on mapped memory so far: nothing can be outstanding (no lookup).
    if (this.targets.size === 0) return RESOLVED;
    const t = this.targets.get(target);
    if (t === undefined || t.flushed >= t.issued) return RESOLVED;
    const op = new RmaOp(this, K_FLUSH, target, 0, 0, EMPTY, 0, 0, 0, 0);
    op.mark = t.issued;
    op.accMark = this.native.accMark(target);
    return this.start(op);
  }

  /**
   * Every operation issued so far over one rail is complete at its targets
   * (the per-rail flush: all targets whose lane is that rail); with no rail,
   * over every rail. Operations that went straight to mapped memory are
   * complete already.
   */
  flushRail(rail: string | null): Promise<unknown> {
    const waits: Array<Promise<unknown>> = [];
    for (const target of this.targets.keys()) {
      if (rail !== null && this.host.existingEndpoint(target)?.lane?.rail.name !== rail) continue;
      const w = this.flush(target);
      if (w !== RESOLVED) waits.push(w);
    }
    return waits.length === 0 ? RESOLVED : Promise.all(waits);
  }

  /** Wait until the target grants its lock on the region (mode: LOCK_EXCLUSIVE / LOCK_SHARED). */
  lock(target: number, region: number, mode: number): Promise<unknown> {
    return this.start(new RmaOp(this, K_LOCK, target, region, 0, EMPTY, 0, mode, 0, 0));
  }

  /** Release the lock; resolves once every earlier operation to target is complete there. */
  unlock(target: number, region: number): Promise<unknown> {
    const op = new RmaOp(this, K_UNLOCK, target, region, 0, EMPTY, 0, 0, 0, 0);
    op.mark = this.state(target).issued;
    op.accMark = this.native.accMark(target);
    return this.start(op);
  }

  private state(target: number): TargetState {
    let t = this.targets.get(target);
    if (t === undefined) { t = { issued: 0, flushed: 0, waitingLane: [] }; this.targets.set(target, t); }
    return t;
  }

  private start<T>(op: RmaOp): Promise<T> {
    this.progress.hold();
    const ep = this.host.endpointFor(op.target);
    if (ep.failure !== null) { op.fail(ep.failure); return op.promise as Promise<T>; }
    const t = this.state(op.target);
    // Counted when started, not when issued: a flush must cover operations still waiting for the lane.
    if (op.kind <= K_ATOMIC) t.issued++;
    if (ep.lane === null) t.waitingLane.push(op);
    else this.issue(ep, op);
    return op.promise as Promise<T>;
  }

  /** The protocol endpoint to this peer got its lane: issue what waited for it. */
  laneReady(ep: ProtoEndpoint): void {
    const t = this.targets.get(ep.rank);
    if (t === undefined || t.waitingLane.length === 0) return;
    const w = t.waitingLane;
    t.waitingLane = [];
    for (const op of w) if (!op.settled) this.issue(ep, op);
  }

  private issue(ep: ProtoEndpoint, op: RmaOp): void {
    const lane = ep.lane!;
    if (this.native.intercept(lane, op)) return;
    this.native.emulated(op);
    const caps = lane.rail.caps;
    this.emulatedOps++;
    const v = this.hv;
    switch (op.kind) {
      case K_PUT:
      case K_ACC: {
        const src = op.bytes;
        const elem = op.kind === K_ACC ? TYPE_SIZE[op.type]! : 1;
        let piece = Math.max(elem, Math.min(caps.amZcopyMax, 1 << 20));
        piece -= piece % elem;
        // An accumulate is applied from a copy (the target must align it anyway).
        if (op.kind === K_ACC) piece = Math.max(elem, Math.min(piece, caps.amCopyMax - (caps.amCopyMax % elem)));
        let off = 0;
        do {
          const n = Math.min(piece, src.byteLength - off);
          if (op.kind === K_PUT) { encodeTarget(v, op.region, op.offset + off); v.setUint32(12, 0, true); }
          else encodeAcc(v, op.region, op.offset + off, op.code, op.type);
          this.emit(ep, op.kind === K_PUT ? AM_RMA_PUT : AM_RMA_ACC, op.kind === K_PUT ? PUT_HDR : ACC_HDR,
            n > 0 ? src.subarray(off, off + n) : null, op, op.kind === K_ACC || n <= Math.min(caps.amCopyMax, 65536));
          off += n;
          if (op.settled) return;
        } while (off < src.byteLength);
        break;
      }
      case K_GET:
        op.id = this.track(op);
        op.awaiting = op.bytes.byteLength;
        encodeGet(v, op.region, op.offset, op.id, op.bytes.byteLength);
        this.emit(ep, AM_RMA_GET, GET_HDR, null, op, true);
        break;
      case K_ATOMIC:
        op.id = this.track(op);
        op.awaiting = 1;
        encodeAtomic(v, op.region, op.offset, op.id, op.code, op.type);
        writeValue(v, ATOMIC_OPERAND, op.type, op.operand);
        writeValue(v, ATOMIC_COMPARE, op.type, op.compare);
        this.emit(ep, AM_RMA_ATOMIC, ATOMIC_HDR, null, op, true);
        break;
      default:
        op.id = this.track(op);
        op.awaiting = 1;
        encodeCtrl(v, op.region, op.id, op.code);
        this.emit(ep, op.kind === K_FLUSH ? AM_RMA_FLUSH : op.kind === K_LOCK ? AM_RMA_LOCK : AM_RMA_UNLOCK, CTRL_HDR, null, op, true);
    }
    op.issued = true;
    op.check();
  }

  private track(op: RmaOp): number {
    let id = this.nextOpId;
    this.nextOpId = id >= 0xfffffffe ? 1 : id + 1;
    while (this.ops.has(id)) id = id >= 0xfffffffe ? 1 : id + 1;
    this.ops.set(id, op);
    return id;
  }

  /** Hand one AM (header in this.hdr) to the lane, or queue it behind what waits; counted on op. */
  private emit(ep: ProtoEndpoint, am: number, hdrLen: number, payload: Uint8Array | null, op: RmaOp | null, copy: boolean): void {
    const lane = ep.lane!;
    if (op !== null) op.pieces++;
    if (!ep.hasPending) {
      if (copy || payload === null) {
        if (lane.sendCopy(am, this.hdr, hdrLen, payload) !== NO_RESOURCE) { if (op !== null) op.pieces--; return; }
      } else if (lane.sendZcopy(am, this.hdr, hdrLen, payload, op ?? NOOP) !== NO_RESOURCE) {
        return;
      }
    }
    // A queued reply keeps a copy: its payload may be scratch (an atomic's old value) or window memory that changes.
    const keep = copy && op === null && payload !== null ? payload.slice() : payload;
    ep.pushOp(ProtoEndpoint.op(am, this.hdr, hdrLen, keep, !copy && payload !== null, null, op ?? NOOP));
  }

  /** A FLUSH or UNLOCK finished: everything issued to its target before it is complete there. */
  flushFinished(op: RmaOp): void {
    const t = this.state(op.target);
    if (op.mark > t.flushed) t.flushed = op.mark;
    this.native.flushed(op.target, op.accMark);
  }

  /** Called by an op once it settled. */
  settled(op: RmaOp): void {
    if (op.id !== 0 && this.ops.get(op.id) === op) this.ops.delete(op.id);
    this.progress.release();
  }

  // ---- target side -------------------------------------------------------

  private originOf(rep: RailEndpoint): ProtoEndpoint | null {
    return rep.owner as ProtoEndpoint | null;
  }

  /** The region and a checked range, or an RMA_ERR_* status. */
  private lookup(id: number, offset: number, len: number): Region | number {
    const r = this.regions.get(id);
    if (r === undefined) return RMA_ERR_REGION;
    if (offset + len > r.bytes.byteLength) return RMA_ERR_RANGE;
    return r;
  }

  private readonly putHandler: AmHandler = {
    place: (_rep, rx) => {
      const r = this.lookup(tgtRegion(rx.view, rx.hdrOff), tgtOffset(rx.view, rx.hdrOff), rx.payLen);
      if (typeof r === 'number') { this.protocolErrors++; return null; }
      const off = tgtOffset(rx.view, rx.hdrOff);
      return r.bytes.subarray(off, off + rx.payLen);
    },
    recv: (_rep, rx) => {
      if (rx.placed !== null || rx.payLen === 0) return;
      const off = tgtOffset(rx.view, rx.hdrOff);
      const r = this.lookup(tgtRegion(rx.view, rx.hdrOff), off, rx.payLen);
      if (typeof r === 'number') { this.protocolErrors++; return; }
      r.bytes.set(rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen), off);
    },
  };

  private readonly accHandler: AmHandler = {
    recv: (_rep, rx) => {
      const off = tgtOffset(rx.view, rx.hdrOff);
      const type = accType(rx.view, rx.hdrOff);
      const op = accOp(rx.view, rx.hdrOff);
      const r = this.lookup(tgtRegion(rx.view, rx.hdrOff), off, rx.payLen);
      if (typeof r === 'number' || type >= TYPE_SIZE.length || op > OP_NO_OP || (r.bytes.byteOffset + off) % TYPE_SIZE[type]! !== 0 || rx.payLen % TYPE_SIZE[type]! !== 0) {
        this.protocolErrors++;
        return;
      }
      applyAccumulate(r.bytes, off, rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen), type, op);
    },
  };

  private readonly getHandler: AmHandler = {
    recv: (rep, rx) => {
      const origin = this.originOf(rep);
      if (origin === null || origin.lane === null) { this.protocolErrors++; return; }
      const off = tgtOffset(rx.view, rx.hdrOff);
      const len = getLength(rx.view, rx.hdrOff);
      const opId = getOpId(rx.view, rx.hdrOff);
      const r = this.lookup(tgtRegion(rx.view, rx.hdrOff), off, len);
      if (typeof r === 'number') { this.reply(origin, opId, 0, r, null); return; }
      const caps = origin.lane.rail.caps;
      const piece = Math.max(1, Math.min(caps.amZcopyMax, 1 << 20));
      for (let done = 0; done < len; done += piece) {
        const n = Math.min(piece, len - done);
        this.reply(origin, opId, done, RMA_OK, r.bytes.subarray(off + done, off + done + n), AM_RMA_GET_DATA);
      }
    },
  };

  private readonly atomicHandler: AmHandler = {
    recv: (rep, rx) => {
      const origin = this.originOf(rep);
      if (origin === null || origin.lane === null) { this.protocolErrors++; return; }
      const v = rx.view, o = rx.hdrOff;
      const off = tgtOffset(v, o);
      const type = atomicType(v, o);
      const op = atomicOp(v, o);
      const opId = atomicOpId(v, o);
      const size = type < TYPE_SIZE.length ? TYPE_SIZE[type]! : 0;
      const r = this.lookup(tgtRegion(v, o), off, size);
      if (typeof r === 'number') { this.reply(origin, opId, 0, r, null); return; }
      if (size < 4 || op > OP_CSWAP || (r.bytes.byteOffset + off) % size !== 0) { this.reply(origin, opId, 0, RMA_ERR_OP, null); return; }
      const old = applyAtomic(r.bytes, off, type, op, readValue(v, o + ATOMIC_OPERAND, type), readValue(v, o + ATOMIC_COMPARE, type));
      writeValue(this.val, 0, type, old);
      this.reply(origin, opId, 0, RMA_OK, this.valBytes);
    },
  };

  private ctrlHandler(am: number): AmHandler {
    return {
      recv: (rep, rx) => {
        const origin = this.originOf(rep);
        if (origin === null || origin.lane === null) { this.protocolErrors++; return; }
        const region = ctrlRegion(rx.view, rx.hdrOff);
        const opId = ctrlOpId(rx.view, rx.hdrOff);
        if (am === AM_RMA_FLUSH) { this.reply(origin, opId, 0, RMA_OK, null); return; }
        if (this.regions.get(region) === undefined) { this.reply(origin, opId, 0, RMA_ERR_REGION, null); return; }
        if (am === AM_RMA_LOCK) {
          this.sendGrants(this.locks.request(region, { rank: origin.rank, mode: ctrlMode(rx.view, rx.hdrOff), opId }));
          return;
        }
        const granted = this.locks.release(region, origin.rank);
        this.reply(origin, opId, 0, granted === null ? RMA_ERR_OP : RMA_OK, null);
        if (granted !== null) this.sendGrants(granted);
      },
    };
  }

  /**
   * A window is freed here: its region goes, and lock requests still queued
   * on it are answered with an error rather than left waiting forever.
   */
  deregister(region: Region): void {
    this.regions.deregister(region);
    for (const q of this.locks.dropRegion(region.id)) {
      const ep = this.host.endpointFor(q.rank);
      this.reply(ep, q.opId, 0, RMA_ERR_REGION, null);
    }
  }

  private sendGrants(granted: LockRequest[]): void {
    for (const g of granted) {
      const ep = this.host.endpointFor(g.rank);
      if (ep.failure === null && ep.lane !== null) this.reply(ep, g.opId, 0, RMA_OK, null);
    }
  }

  private reply(ep: ProtoEndpoint, opId: number, offset: number, status: number, payload: Uint8Array | null, am = AM_RMA_REPLY): void {
    if (ep.failure !== null || ep.lane === null) return;
    encodeReply(this.hv, opId, offset, status);
    const big = payload !== null && payload.byteLength > Math.min(ep.lane.rail.caps.amCopyMax, 65536);
    this.emit(ep, am, REPLY_HDR, payload, null, !big);
  }

  private readonly getDataHandler: AmHandler = {
    place: (_rep, rx) => {
      const op = this.ops.get(replyOpId(rx.view, rx.hdrOff));
      if (op === undefined || op.kind !== K_GET) { this.protocolErrors++; return null; }
      const off = replyOffset(rx.view, rx.hdrOff);
      if (off + rx.payLen > op.bytes.byteLength) { this.protocolErrors++; return null; }
      return op.bytes.subarray(off, off + rx.payLen);
    },
    recv: (rep, rx) => this.replyHandler.recv(rep, rx),
  };

  private readonly replyHandler: AmHandler = {
    recv: (_rep, rx) => {
      const op = this.ops.get(replyOpId(rx.view, rx.hdrOff));
      if (op === undefined) { this.protocolErrors++; return; }
      const status = replyStatus(rx.view, rx.hdrOff);
      if (status !== RMA_OK) {
        op.fail(new RailcommError(ErrorCode.INVALID_ARG, `${KIND_NAMES[op.kind]} on rank ${op.target}: ${STATUS_TEXT[status] ?? `status ${status}`}`));
        return;
      }
      switch (op.kind) {
        case K_GET: {
          const off = replyOffset(rx.view, rx.hdrOff);
          if (off + rx.payLen > op.bytes.byteLength) { this.protocolErrors++; return; }
          if (rx.placed === null) op.bytes.set(rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen), off);
          op.awaiting -= rx.payLen;
          break;
        }
        case K_ATOMIC:
          if (rx.payLen !== 8) { this.protocolErrors++; return; }
          this.valBytes.set(rx.buf.subarray(rx.payOff, rx.payOff + 8));
          op.result = readValue(this.val, 0, op.type);
          op.awaiting = 0;
          break;
        case K_FLUSH:
        case K_UNLOCK:
          // (What it covers counts as flushed once it finishes: a flush may also wait for native operations.)
          op.awaiting = 0;
          break;
        default:
          op.awaiting = 0;
      }
      op.check();
    },
  };

  // ---- failures ----------------------------------------------------------

  /** Peers that failed so far (operations on mapped memory look them up only then). */
  private failedPeers = 0;

  /** The peer is gone: its operations fail, and it no longer holds or waits for locks here. */
  peerFailed(ep: ProtoEndpoint, err: RailcommError): void {
    this.failedPeers++;
    const t = this.targets.get(ep.rank);
    if (t !== undefined) {
      for (const op of t.waitingLane) op.fail(err);
      t.waitingLane = [];
    }
    for (const op of [...this.ops.values()]) if (op.target === ep.rank) op.fail(err);
    this.native.peerFailed(ep.rank, err);
    for (const { granted } of this.locks.dropRank(ep.rank)) this.sendGrants(granted);
  }

  /** Whether an operation to the peer waits (rails' keepalive checks; rare). */
  waitsOn(ep: ProtoEndpoint): boolean {
    const t = this.targets.get(ep.rank);
    if (t !== undefined && t.waitingLane.length > 0) return true;
    for (const op of this.ops.values()) if (op.target === ep.rank) return true;
    return this.native.waitsOn(ep.rank);
  }

  /** Operations still waiting, with their target's world rank (hang report). */
  waits(out: HangWait[]): void {
    for (const op of this.ops.values()) out.push({ peer: op.target, what: `one-sided ${KIND_NAMES[op.kind]} to world rank ${op.target} (op ${op.id}, awaiting ${op.awaiting})` });
    for (const what of this.native.describe()) {
      const m = /to rank (\d+)/.exec(what);
      out.push({ peer: m === null ? null : Number(m[1]), what });
    }
  }

  /** Operations still waiting (for the hang report). */
  describePending(): string[] {
    return [...this.ops.values()].map((op) => `${KIND_NAMES[op.kind]} to rank ${op.target} (op ${op.id}, awaiting ${op.awaiting})`).concat(this.native.describe());
  }
}

const EMPTY = new Uint8Array(0);
