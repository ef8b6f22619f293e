// A protocol endpoint: everything this rank uses to reach one peer. It holds
// the rail endpoint(s) by priority, the datapath thresholds for them, message
// sequence numbers, eager credits, and the queue of operations waiting for
// resources (the rail answered "no resource", or the peer is not resolved yet).

import { WordViews } from '../core/word-copy.js';
import type { Completion, RailEndpoint, RailCaps } from '../rail/api.js';
import { NO_RESOURCE } from '../rail/api.js';
import type { Params } from '../core/params.js';
import type { RailcommError } from '../core/errors.js';
import { ReorderBuffer } from './reorder.js';
import type { BytesHolder, Request } from './request.js';
import type { Unexpected } from './unexpected.js';
import type { LaneReceiver } from './lanes/receiver.js';

/** Size ranges of the datapaths on one lane (bytes, inclusive upper bounds). */
export interface Thresholds {
  /** <= short: header and payload inlined in one AM. */
  short: number;
  /** <= eager: copied at send; the send completes at once. */
  eager: number;
  /**
   * <= now: a blocking send that the rail takes at once is complete at the
   * call, with no Request (eager, or up to the zero-copy range on rails that
   * copy at send anyway).
   */
  now: number;
  /** <= zcopy: sent from the user's buffer; completes once the rail is done with it. */
  zcopy: number;
  /** Larger: rendezvous, data in chunks of this size. */
  chunk: number;
}

/** Where rendezvous starts on a rail: its own crossover when it knows one, else RAILCOMM_RNDV_THRESHOLD. */
export function rndvThresholdOf(caps: RailCaps, p: Params): number {
  return caps.rndvThreshold ?? p.rndvThreshold;
}

export function thresholdsFor(caps: RailCaps, p: Params): Thresholds {
  const eager = Math.min(p.eagerLimit, caps.amCopyMax);
  const zcopy = Math.max(eager, Math.min(rndvThresholdOf(caps, p) - 1, caps.amZcopyMax));
  return {
    short: Math.min(caps.amShortMax, eager),
    eager,
    now: caps.copiesAtSend === true ? Math.max(eager, Math.min(zcopy, caps.amCopyMax)) : eager,
    zcopy,
    chunk: Math.min(p.rndvChunk, caps.amZcopyMax),
  };
}

/** A message that arrived out of order, kept (copied) until its turn. */
export interface Stashed {
  am: number;
  hdr: Buffer;
  payload: Buffer | null;
}

/** Something waiting to go out, in order, on this endpoint. */
export interface PendingOp {
  /** A send not started yet (peer unresolved, or queued behind another op). */
  start: Request | null;
  am: number;
  hdr: Uint8Array | null;
  hdrLen: number;
  payload: Uint8Array | null;
  zcopy: boolean;
  /** Request finished by issuing this op (eager copy), or owning the zero-copy piece. */
  req: Request | null;
  /** Told instead of req (one-sided operations): the op was issued, or failed. */
  done: Completion | null;
}

/** What a held copy costs beyond its bytes, for RAILCOMM_SEND_BUFFER: its Request (232 bytes on the heap) and its Buffer (104), and their queue entries. */
export const HELD_OVERHEAD = 400;

export class ProtoEndpoint implements BytesHolder {
  readonly rank: number;
  readonly id: bigint;
  lane: RailEndpoint | null = null;
  /** The lane's rail is polled by progress (shared-memory rings): worth waiting for at the call. */
  polled = false;
  th: Thresholds = { short: 0, eager: 0, now: 0, zcopy: 0, chunk: 1 };
  resolving = false;
  txSeq = 0;
  readonly rx = new ReorderBuffer<Stashed>();
  /** Eager bytes we may still send before the peer returns credit. */
  credits: number;
  /** Eager bytes of the peer's we consumed and have not told it about. */
  owed = 0;
  readonly creditLimit: number;
  private readonly pending: PendingOp[] = [];
  private pendingHead = 0;
  failure: RailcommError | null = null;
  /** Several lanes (lanes/multi-lane.ts): rendezvous completes on the receiver's FIN, data may come twice. */
  multi = false;
  /** What came from the peer in envelopes (it has several lanes): numbers taken, acknowledgements owed. */
  laneRx: LaneReceiver | null = null;
  /** A receive from this peer (another job's rank) opened the connection to it (p2p.ts reachOut). */
  reachedOut = false;
  /** The peer called finalize() and everything it sent before is delivered: it starts no more messages. */
  peerFinalized = false;
  /** We finalize and owe the peer a BYE, sent once what is queued to it went out. */
  byeOwed = false;
  /** Small announcements from this peer no receive matched yet, to fetch ahead when credit allows (rndv/prefetch.ts). */
  readonly toFetch: Unexpected[] = [];
  toFetchHead = 0;
  /** Bytes of copies of completed sends to this peer not yet delivered (RAILCOMM_SEND_BUFFER bounds it). */
  held = 0;
  readonly heldLimit: number;
  /** Sends on this endpoint that a peer failure must fail (rendezvous waiting for CTS). */
  readonly sendsActive = new Set<Request>();
  /** Receives being filled from this peer (rendezvous data). */
  readonly recvsActive = new Set<Request>();
  /** Word views of the buffers this peer's small messages are received into (p2p copyOut). */
  readonly arrivalViews = new WordViews();

  constructor(rank: number, id: bigint, creditLimit: number, heldLimit = Infinity) {
    this.rank = rank;
    this.id = id;
    this.credits = creditLimit;
    this.creditLimit = creditLimit;
    this.heldLimit = heldLimit;
  }

  /** Whether a copy of `bytes` more may be held (a send of them may complete before the peer takes it). */
  mayHold(bytes: number): boolean {
    return this.held + bytes + HELD_OVERHEAD <= this.heldLimit;
  }

  hold(r: Request): void {
    this.held += r.bytes + HELD_OVERHEAD;
    r.holder = this;
  }

  released(r: Request): void {
    this.held -= r.bytes + HELD_OVERHEAD;
  }

  get hasPending(): boolean {
    return this.pendingHead < this.pending.length;
  }

  /** Credits to piggy-back on the next header going to this peer. */
  takeOwed(): number {
    const n = Math.min(this.owed, 0xffffffff);
    this.owed -= n;
    return n;
  }

  deferSend(req: Request): void {
    this.pending.push(ProtoEndpoint.deferred(req));
  }

  /** A send to start later, when the lane has room (it waits in the queue as it is). */
  static deferred(req: Request): PendingOp {
    return { start: req, am: 0, hdr: null, hdrLen: 0, payload: null, zcopy: false, req: null, done: null };
  }

  /** A rail operation that found no resource; the header is copied (scratch is reused). */
  static op(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null, zcopy: boolean, req: Request | null, done: Completion | null = null): PendingOp {
    return { start: null, am, hdr: hdr.slice(0, hdrLen), hdrLen, payload, zcopy, req, done };
  }

  pushOp(op: PendingOp): void {
    this.pending.push(op);
  }

  /**
   * Issue queued operations in order until one finds no resource again.
   * `start` begins a deferred send; it returns the rail op that found no
   * resource, which then takes the send's place at the head of the queue.
   */
  drain(start: (ep: ProtoEndpoint, r: Request) => PendingOp | null): void {
    const lane = this.lane;
    if (lane === null || this.failure !== null) return;
    while (this.pendingHead < this.pending.length) {
      const op = this.pending[this.pendingHead]!;
      if (op.start !== null) {
        const blocked = start(this, op.start);
        if (blocked !== null) { this.pending[this.pendingHead] = blocked; return; }
        this.pendingHead++;
        continue;
      }
      const st = op.zcopy
        ? lane.sendZcopy(op.am, op.hdr!, op.hdrLen, op.payload!, op.done ?? op.req!)
        : lane.sendCopy(op.am, op.hdr!, op.hdrLen, op.payload);
      if (st === NO_RESOURCE) return;
      this.pendingHead++;
      if (!op.zcopy) {
        if (op.done !== null) op.done.railComplete(null);
        else if (op.req !== null) op.req.complete(op.req.source, op.req.tag, op.req.bytes);
      }
    }
    this.pending.length = 0;
    this.pendingHead = 0;
  }

  /** Everything still queued, removed (for failing it). */
  takePending(): PendingOp[] {
    const out = this.pending.slice(this.pendingHead);
    this.pending.length = 0;
    this.pendingHead = 0;
    return out;
  }
}
