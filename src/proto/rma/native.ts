// One-sided operations a rail runs natively (the ofi rail: fi_write, fi_read,
// fi_atomic), beside the engine's emulation by active messages. Per target:
// native operations in flight (a flush waits for them: the rail completes
// them only once they are complete at the target), and the order rules that
// keep the two paths from overtaking each other: accumulate-class operations
// (accumulate, fetch-and-op, compare-and-swap) stay on the path they are on
// until it is quiet, and an unlock waits for native operations to finish.

import type { Rail, RailEndpoint, RailRemoteKey, RailRma } from '../../rail/api.js';
import { DONE, NO_RESOURCE } from '../../rail/api.js';
import type { RailcommError } from '../../core/errors.js';
import type { Region, RemoteRegion } from './region.js';

/** What native.ts needs of an operation (op.ts's RmaOp). */
export interface NativeOp {
  readonly kind: number;
  readonly target: number;
  readonly offset: number;
  readonly bytes: Uint8Array;
  readonly type: number;
  readonly code: number;
  readonly operand: number | bigint;
  readonly compare: number | bigint;
  /** The target's region as this rank knows it (null: a control operation). */
  readonly rr: RemoteRegion | null;
  pieces: number;
  awaiting: number;
  issued: boolean;
  /** A native operation of the rail in flight (its completion also ends it here). */
  native: boolean;
  /** Complete at the target when the rail's call returned (no completion to wait for). */
  landed: boolean;
  settled: boolean;
  check(): void;
  fail(err: RailcommError): void;
  railComplete(err: RailcommError | null): void;
  railValue(v: number | bigint): void;
}

/** The engine's operation kinds (op.ts K_*). */
export const K_PUT = 0, K_GET = 1, K_ACC = 2, K_ATOMIC = 3, K_FLUSH = 4, K_LOCK = 5, K_UNLOCK = 6;

interface NativeTarget {
  /** Native operations in flight. */
  out: number;
  /** Flushes waiting for them. */
  waiters: NativeOp[];
  /** Operations that must not go before the native ones in flight finish (in order). */
  after: NativeOp[];
  /** Emulated accumulate-class operations issued, and how many of them a completed flush covered. */
  amAcc: number;
  amAccDone: number;
  /** Emulated operations issued, and how many an AM flush already covers. */
  am: number;
  amCovered: number;
  /** A native operation failed (its target failed): flushes waiting fail too. */
  failure: RailcommError | null;
}

export class NativeRma {
  private readonly targets = new Map<number, NativeTarget>();
  /** Re-issues an operation that waited (engine.issue). */
  private readonly reissue: (target: number, op: NativeOp) => void;
  /** Counts an operation issued natively (the engine's nativeOps). */
  private readonly counted: () => void;

  constructor(reissue: (target: number, op: NativeOp) => void, counted: () => void) {
    this.reissue = reissue;
    this.counted = counted;
  }

  private state(target: number): NativeTarget {
    let t = this.targets.get(target);
    if (t === undefined) { t = { out: 0, waiters: [], after: [], amAcc: 0, amAccDone: 0, am: 0, amCovered: 0, failure: null }; this.targets.set(target, t); }
    return t;
  }

  /** Register a new region with every rail that runs one-sided operations natively. */
  static register(r: Region, rails: readonly Rail[]): void {
    if (r.bytes.byteLength === 0) return;
    for (const rail of rails) {
      if (rail.registerMemory === undefined) continue;
      const m = rail.registerMemory(r.bytes);
      if (m !== null) r.rails.push({ rail: rail.name, packed: m.packed, release: () => m.release() });
    }
  }

  /** The target region's key for lane's rail (unpacked once), or null: emulate. */
  private keyFor(rr: RemoteRegion, lane: RailEndpoint): RailRemoteKey | null {
    const rail = lane.rail;
    const n = rr.native;
    if (n !== undefined && n.rail === rail.name) return n.key;
    const k = rr.rails?.find((x) => x.rail === rail.name);
    const key = k === undefined || rail.unpackRemoteKey === undefined ? null : rail.unpackRemoteKey(k.packed);
    rr.native = { rail: rail.name, key };
    return key;
  }

  /**
   * Before the engine emulates op on lane: true when it was handled here
   * (issued natively, or queued behind native operations in flight, or a
   * flush with nothing to ask the target), false to emulate it.
   */
  intercept(lane: RailEndpoint, op: NativeOp): boolean {
    const t = this.targets.get(op.target);
    const kind = op.kind;
    if (kind === K_LOCK) return false;
    if (t !== undefined && t.after.length > 0 && kind !== K_PUT && kind !== K_GET) { t.after.push(op); return true; }
    const rma = lane.rma;
    if (rma != null && kind <= K_ATOMIC && op.rr !== null) {
      const key = this.keyFor(op.rr, lane);
      if (key !== null && this.issue(rma, key, this.state(op.target), op)) return true;
    }
    if (t === undefined) return false;
    if (kind === K_FLUSH) {
      if (t.out > 0) { op.pieces++; t.waiters.push(op); }
      // Only native operations since the last flush: nothing to ask the target.
      if (t.am === t.amCovered) { op.awaiting = 0; op.issued = true; op.check(); return true; }
      t.amCovered = t.am;
      return false;
    }
    // An emulated accumulate, or an unlock, must not overtake native operations in flight.
    if ((kind === K_ACC || kind === K_ATOMIC || kind === K_UNLOCK) && t.out > 0) { t.after.push(op); return true; }
    return false;
  }

  /** No native operation to target in flight or waiting, and none failed unreported (the engine's fast flush). */
  idle(target: number): boolean {
    const t = this.targets.get(target);
    return t === undefined || (t.out === 0 && t.after.length === 0 && t.waiters.length === 0 && t.failure === null);
  }

  /** The engine emulates op (counted: a flush then asks the target). */
  emulated(op: NativeOp): void {
    if (op.kind > K_ATOMIC) return;
    const t = this.state(op.target);
    t.am++;
    if (op.kind === K_ACC || op.kind === K_ATOMIC) t.amAcc++;
  }

  /** A flush completed: the emulated accumulates it covered are applied; native ones may follow. */
  flushed(target: number, accMark: number): void {
    const t = this.targets.get(target);
    if (t !== undefined && accMark > t.amAccDone) t.amAccDone = accMark;
  }

  /** The emulated accumulate count a flush issued now covers (for flushed()). */
  accMark(target: number): number {
    return this.targets.get(target)?.amAcc ?? 0;
  }

  private issue(rma: RailRma, key: RailRemoteKey, t: NativeTarget, op: NativeOp): boolean {
    // (Nothing to move: providers refuse zero-length transfers; the target answers it.)
    if ((op.kind === K_PUT || op.kind === K_GET || op.kind === K_ACC) && op.bytes.byteLength === 0) return false;
    const acc = op.kind === K_ACC || op.kind === K_ATOMIC;
    // Accumulate-class operations stay emulated while emulated ones may still be unapplied (their order counts).
    if (acc && t.amAcc !== t.amAccDone) return false;
    if (op.kind === K_ACC && !rma.atomicNative(op.type, op.code, false, op.bytes.byteLength / elementSize(op.type))) return false;
    if (op.kind === K_ATOMIC && !rma.atomicNative(op.type, op.code, true, 1)) return false;
    op.native = true;
    op.pieces++;
    t.out++;
    let st: number;
    switch (op.kind) {
      case K_PUT: st = rma.put(op.bytes, key, op.offset, op); break;
      case K_GET: st = rma.get(op.bytes, key, op.offset, op); break;
      case K_ACC: st = rma.accumulate(op.bytes, op.type, op.code, key, op.offset, op); break;
      default: st = rma.fetchAtomic(op.type, op.code, op.operand, op.compare, key, op.offset, op);
    }
    if (st === NO_RESOURCE) {
      // Nothing taken: emulated instead (an accumulate then waits for the native ones in flight).
      op.native = false;
      op.pieces--;
      t.out--;
      return false;
    }
    this.counted();
    if (st === DONE) {
      // Complete at the target within the call (done is never called).
      op.native = false;
      op.pieces--;
      t.out--;
      op.landed = true;
    }
    if (op.kind !== K_GET) op.awaiting = 0;
    op.issued = true;
    op.check();
    return true;
  }

  /** A native operation ended (err: it failed); the last one in flight releases flushes and what waited. */
  done(op: NativeOp, err: RailcommError | null): void {
    const t = this.targets.get(op.target);
    if (t === undefined) return;
    if (err !== null && t.failure === null) t.failure = err;
    if (--t.out > 0) return;
    const w = t.waiters;
    const failure = t.failure;
    t.waiters = [];
    t.failure = null;
    for (const f of w) {
      if (failure !== null) f.fail(failure);
      else f.railComplete(null);
    }
    const after = t.after;
    t.after = [];
    for (const a of after) if (!a.settled) this.reissue(op.target, a);
  }

  /** The target failed: what waits here for it fails. */
  peerFailed(target: number, err: RailcommError): void {
    const t = this.targets.get(target);
    if (t === undefined) return;
    for (const op of t.after.splice(0)) op.fail(err);
    for (const op of t.waiters.splice(0)) op.fail(err);
  }

  /** Whether operations to target wait here (keepalive checks). */
  waitsOn(target: number): boolean {
    const t = this.targets.get(target);
    return t !== undefined && (t.out > 0 || t.after.length > 0);
  }

  /** For the hang report. */
  describe(): string[] {
    const out: string[] = [];
    for (const [target, t] of this.targets) {
      if (t.out > 0 || t.after.length > 0) out.push(`native one-sided operations to rank ${target}: ${t.out} in flight, ${t.after.length} waiting for them, ${t.waiters.length} flushes waiting`);
    }
    return out;
  }
}

const SIZES = [1, 1, 2, 2, 4, 4, 4, 8, 8, 8];
function elementSize(type: number): number {
  return SIZES[type] ?? 1;
}
