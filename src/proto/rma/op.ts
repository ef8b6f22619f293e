// One one-sided operation in flight at its origin (RmaOp): its parameters
// (it may wait for the lane), what it still waits for, and its promise; and
// how the active messages of operations and replies go out on a lane.

import type { ValueCompletion } from '../../rail/api.js';
import { NO_RESOURCE } from '../../rail/api.js';
import { ErrorCode, type RailcommError } from '../../core/errors.js';
import { pendingPromise, takeReject, takeResolve } from '../../core/settlers.js';
import { ProtoEndpoint } from '../endpoint.js';
import type { NativeRma } from './native.js';
import type { RemoteRegion } from './region.js';

export const K_PUT = 0, K_GET = 1, K_ACC = 2, K_ATOMIC = 3, K_FLUSH = 4, K_LOCK = 5, K_UNLOCK = 6;
export const KIND_NAMES = ['put', 'get', 'accumulate', 'atomic', 'flush', 'lock', 'unlock'];

/** What an operation tells its engine (engine.ts) as it ends. */
export interface OpEngine {
  readonly native: NativeRma;
  flushFinished(op: RmaOp): void;
  settled(op: RmaOp): void;
  failedQuietly(target: number, p: Promise<unknown>): void;
}

/** Ignores completions nobody waits for (replies sent from window memory). */
const NOOP: ValueCompletion = { railComplete(): void { /* nothing waits */ }, railValue(): void { /* nothing waits */ } };

/** One operation in flight: its parameters (it may wait for the lane) and what it still waits for. */
export class RmaOp implements ValueCompletion {
  id = 0;
  /** The target's region as this rank knows it (native operations use its rail keys); null for control operations. */
  rr: RemoteRegion | null = null;
  /** A native operation of the lane's rail in flight (native.ts). */
  native = false;
  /** Complete at the target when the rail's call returned (native.ts). */
  landed = false;
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
  /** Made when first asked for: an operation that settles within its call may never need one. */
  private made: Promise<number | bigint> | null = null;
  private error: RailcommError | null = null;

  constructor(
    readonly engine: OpEngine,
    readonly kind: number,
    readonly target: number,
    readonly region: number,
    readonly offset: number,
    readonly bytes: Uint8Array,
    readonly type: number,
    readonly code: number,
    readonly operand: number | bigint,
    readonly compare: number | bigint,
  ) {}

  /** Settles with the operation: its old value (atomics), or the failure. */
  get promise(): Promise<number | bigint> {
    if (this.made !== null) return this.made;
    if (this.settled) return (this.made = this.error === null ? Promise.resolve(this.value()) : Promise.reject(this.error));
    this.made = pendingPromise<number | bigint>();
    this.resolveFn = takeResolve<number | bigint>();
    this.rejectFn = takeReject();
    return this.made;
  }

  /** It settled with a failure. */
  get failed(): boolean {
    return this.error !== null;
  }

  private value(): number | bigint {
    return this.kind === K_ATOMIC ? this.result : 0;
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
    if (this.resolveFn !== null) this.resolveFn(this.value());
  }

  fail(err: RailcommError): void {
    if (this.settled) return;
    this.settled = true;
    this.error = err;
    this.engine.settled(this);
    // An operation need not be awaited (MPI_Put's shape: the next flush
    // completes it): when its target failed, that flush rejects too, so the
    // operation's own rejection must not count as unhandled and end the
    // process. Other failures stay the operation's own to report.
    if (this.kind <= K_ATOMIC && err.code === ErrorCode.PEER_FAILED) this.engine.failedQuietly(this.target, this.promise);
    if (this.rejectFn !== null) this.rejectFn(err);
  }
}

/** Hand one AM (header in hdr) to the lane, or queue it behind what waits; counted on op. */
export function emitAm(ep: ProtoEndpoint, am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null, op: RmaOp | null, copy: boolean): void {
  const lane = ep.lane!;
  if (op !== null) op.pieces++;
  if (!ep.hasPending) {
    if (copy || payload === null) {
      if (lane.sendCopy(am, hdr, hdrLen, payload) !== NO_RESOURCE) { if (op !== null) op.pieces--; return; }
    } else if (lane.sendZcopy(am, hdr, hdrLen, payload, op ?? NOOP) !== NO_RESOURCE) {
      return;
    }
  }
  // A queued reply keeps a copy: its payload may be scratch (an atomic's old value) or window memory that changes.
  const keep = copy && op === null && payload !== null ? payload.slice() : payload;
  ep.pushOp(ProtoEndpoint.op(am, hdr, hdrLen, keep, !copy && payload !== null, null, op ?? NOOP));
}

