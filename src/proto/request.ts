// A nonblocking operation. The protocol layer fills and completes it; users
// wait(), test() or cancel() it. Its promise is made only when someone waits,
// so a failure nobody awaits is never an unhandled rejection.

import type { Completion } from '../rail/api.js';
import type { Linked, List } from './list.js';
import type { Posted } from './matching.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import type { DeviceBuffer } from '../core/bytes.js';
import { pendingPromise, takeReject, takeResolve } from '../core/settlers.js';
import { failedHere, rejectAtAwait } from '../core/at-await.js';
import type { AbortSignalLike } from '../core/signal.js';

/** What a completed send or receive reports. Frozen: railcomm may hand the same object to several calls. */
export interface Status {
  /** Rank of the sender in the communicator (for a send: this rank). */
  readonly source: number;
  readonly tag: number;
  /** Bytes received (or sent). */
  readonly bytes: number;
}

/** A Status as railcomm hands them out: frozen. */
export function statusOf(source: number, tag: number, bytes: number): Status {
  return Object.freeze({ source, tag, bytes });
}

export const PENDING = 0;
export const COMPLETE = 1;
export const FAILED = 2;

export const KIND_SEND = 0;
export const KIND_RECV = 1;
/** A waiting probe: matches like a receive but leaves (or claims) the message. */
export const KIND_PROBE = 2;
/** A nonblocking collective. */
export const KIND_COLL = 3;

/** Told when a request settles (keep-alive and finalize bookkeeping); an object, not a closure. */
export interface RequestWatcher {
  /** Watch another request too (one the protocol layer made on this one's behalf). */
  track(r: Request): void;
  requestSettled(r: Request): void;
}

/** Holds the bytes of requests that completed early (a peer's send buffer): told when one settles. */
export interface BytesHolder {
  released(r: Request): void;
}

/** Where cancellation is routed (the protocol layer owns the queues). */
export interface Canceller {
  cancel(r: Request): boolean;
}

// Request is what the matching queues post (Posted) and what rails complete
// (Completion): RequestFits below checks it, since an implements clause would
// put those internal types, and Node's Buffer with them, into the public declarations.
/** Request's rarely used fields (Request.more). */
class RequestMore {
  claim = false;
  found: unknown = null;
  finWanted = false;
  awaitingFin = false;
  peerSendId = 0;
  seenOffsets: Set<number> | null = null;
  signalCleanup: (() => void) | null = null;
  listeners: Array<(r: Request) => void> | null = null;
}

export class Request {
  /** @internal */ state = PENDING;
  /** @internal */ readonly kind: number;
  source = 0;
  tag = 0;
  bytes = 0;
  error: RailcommError | null = null;

  // --- protocol-layer fields (not part of the public contract) ---
  /** User bytes: the send payload or the receive buffer. */
  /** @internal */ buf: Uint8Array;
  /** @internal */ ctx = 0;
  /** World rank of the peer for sends; for receives, the world rank once matched. */
  /** @internal */ peerWorld = -1;
  /** @internal */ matchSrc = 0;
  /** @internal */ matchTag = 0;
  /** @internal */ postSeq = 0;
  /** @internal */ prev: Linked | null = null;
  /** @internal */ next: Linked | null = null;
  /** @internal */ list: List<Linked> | null = null;
  /** Rendezvous id (this side's), 0 when unused. */
  /** @internal */ rndvId = 0;
  /** Bytes moved so far (rendezvous). */
  /** @internal */ progressBytes = 0;
  /** Zero-copy pieces still owned by a rail. */
  /** @internal */ railPending = 0;
  /** @internal */ canceller: Canceller | null = null;
  /** @internal */ watcher: RequestWatcher | null = null;
  /** For a copy of a send that already completed: who counts its bytes until it settles. */
  /** @internal */ holder: BytesHolder | null = null;
  /**
   * Device memory this request moves (the memory type, learned at the call),
   * or null for host memory. A device send's buf only gives the size (its
   * bytes are never read); a device receive's buf stages data that arrives
   * from host memory (proto/rndv/device.ts, src/cuda/p2p.ts).
   */
  /** @internal */ dev: DeviceBuffer | null = null;
  private resolveFn: ((s: Status) => void) | null = null;
  private promise: Promise<Status> | null = null;
  private status: Status | null = null;
  /**
   * What few requests need (probes, multirail rendezvous, an AbortSignal,
   * internal listeners), made on first use: every field here would cost each
   * request 8 bytes, and a sender may hold 100,000 copies (RAILCOMM_SEND_BUFFER).
   */
  private more: RequestMore | null = null;

  constructor(kind: number, buf: Uint8Array) {
    this.kind = kind;
    this.buf = buf;
  }

  private extra(): RequestMore {
    return (this.more ??= new RequestMore());
  }

  /** For probes: claim the message (mprobe) instead of peeking. */
  /** @internal */ get claim(): boolean { return this.more !== null && this.more.claim; }
  /** @internal */ set claim(v: boolean) { if (v || this.more !== null) this.extra().claim = v; }
  /** What a matched probe found. */
  /** @internal */ get found(): unknown { return this.more === null ? null : this.more.found; }
  /** @internal */ set found(v: unknown) { if (v !== null || this.more !== null) this.extra().found = v; }
  /** Multirail rendezvous: the send was announced in an envelope, so its receiver FINs it (its data may be asked for again). */
  /** @internal */ get finWanted(): boolean { return this.more !== null && this.more.finWanted; }
  /** @internal */ set finWanted(v: boolean) { if (v || this.more !== null) this.extra().finWanted = v; }
  /** ...and it holds a rail piece until that FIN comes. */
  /** @internal */ get awaitingFin(): boolean { return this.more !== null && this.more.awaitingFin; }
  /** @internal */ set awaitingFin(v: boolean) { if (v || this.more !== null) this.extra().awaitingFin = v; }
  /** Multirail rendezvous receive: the sender's id (for FIN and asking again), and the offsets that arrived. */
  /** @internal */ get peerSendId(): number { return this.more === null ? 0 : this.more.peerSendId; }
  /** @internal */ set peerSendId(v: number) { if (v !== 0 || this.more !== null) this.extra().peerSendId = v; }
  /** @internal */ get seenOffsets(): Set<number> | null { return this.more === null ? null : this.more.seenOffsets; }
  /** @internal */ set seenOffsets(v: Set<number> | null) { if (v !== null || this.more !== null) this.extra().seenOffsets = v; }

  /** Resolves with the Status when the operation completes; rejects with its RailcommError. */
  wait(): Promise<Status> {
    if (this.promise !== null) return this.promise;
    if (this.state === COMPLETE) return (this.promise = Promise.resolve(this.getStatus()));
    // Failed before anyone waited: the error names the program's call that waits now.
    if (this.state === FAILED) return (this.promise = Promise.reject(failedHere(this.error!, this, Request.prototype.wait)));
    // No closure per waited request (it ran on every receive's hot path).
    this.promise = pendingPromise<Status>();
    this.resolveFn = takeResolve<Status>();
    // (A failure resolves it with a promise that rejects: rejectAtAwait.)
    takeReject();
    return this.promise;
  }

  /** The Status once complete, undefined while pending; throws the error of a failed request. */
  test(): Status | undefined {
    if (this.state === COMPLETE) return this.getStatus();
    if (this.state === FAILED) throw failedHere(this.error!, this, Request.prototype.test);
    return undefined;
  }

  /**
   * Cancel a receive that has not matched yet: it rejects with ERR_CANCELLED.
   * Returns false (and changes nothing) when it already matched or is a send.
   */
  cancel(reason?: unknown): boolean {
    if (this.state !== PENDING || this.canceller === null) return false;
    if (!this.canceller.cancel(this)) return false;
    this.fail(new RailcommError(ErrorCode.CANCELLED, 'the receive was cancelled before it matched a message', reason === undefined ? undefined : { cause: reason }));
    return true;
  }

  get done(): boolean {
    return this.state !== PENDING;
  }

  /** Bind an AbortSignal: aborting cancels the request if it can still be cancelled. */
  /** @internal */
  bindSignal(signal: AbortSignalLike): void {
    // Already settled (an irecv that matched at once): nothing to cancel, and a
    // listener added now would never be removed (settle() already ran).
    if (this.state !== PENDING) return;
    if (signal.aborted) { this.cancel(signal.reason); return; }
    const onAbort = (): void => { this.cancel(signal.reason); };
    signal.addEventListener('abort', onAbort, { once: true });
    this.extra().signalCleanup = () => signal.removeEventListener('abort', onAbort);
  }

  /** @internal */
  onSettled(fn: (r: Request) => void): void {
    if (this.state !== PENDING) { fn(this); return; }
    (this.extra().listeners ??= []).push(fn);
  }

  /** @internal */
  offSettled(fn: (r: Request) => void): void {
    const l = this.more === null ? null : this.more.listeners;
    if (l === null) return;
    const i = l.indexOf(fn);
    if (i >= 0) l.splice(i, 1);
  }

  /** @internal */
  complete(source: number, tag: number, bytes: number): void {
    if (this.state !== PENDING) return;
    this.state = COMPLETE;
    this.source = source;
    this.tag = tag;
    this.bytes = bytes;
    this.settle();
    if (this.resolveFn !== null) this.resolveFn(this.getStatus());
  }

  /** @internal */
  fail(err: RailcommError): void {
    if (this.state !== PENDING) return;
    this.state = FAILED;
    this.error = err;
    this.settle();
    // The error was made where railcomm found it (a rail's callback): it reaches the waiter
    // with the waiter's stack instead (core/at-await.ts; the success path is untouched).
    if (this.resolveFn !== null) rejectAtAwait(this.resolveFn, err, this);
  }

  /** A rail finished with a zero-copy piece of this request. */
  /** @internal */
  railComplete(err: RailcommError | null): void {
    this.railPending--;
    if (err !== null) { this.fail(err); return; }
    // bytes: the size the send announced (a buffer detached meanwhile reads as 0 bytes long).
    if (this.railPending === 0 && this.kind === KIND_SEND && this.progressBytes >= this.bytes) {
      this.complete(this.source, this.tag, this.bytes);
    }
  }

  private settle(): void {
    this.canceller = null;
    const m = this.more;
    if (m !== null && m.signalCleanup !== null) { m.signalCleanup(); m.signalCleanup = null; }
    if (this.watcher !== null) { this.watcher.requestSettled(this); this.watcher = null; }
    if (this.holder !== null) { this.holder.released(this); this.holder = null; }
    const l = m === null ? null : m.listeners;
    if (l !== null) { m!.listeners = null; for (const f of l) f(this); }
    // Never retain user memory after completion.
    if (this.kind !== KIND_PROBE) this.buf = EMPTY;
  }

  private getStatus(): Status {
    return (this.status ??= statusOf(this.source, this.tag, this.bytes));
  }
}

const EMPTY = new Uint8Array(0);

/** @internal Fails to compile when Request stops being a Posted and a Completion. */
export type RequestFits = Fits<Request>;
type Fits<T extends Posted & Completion> = T;
