// The blocking receive at the call (issue "Faster than C MPI": synchronous
// calls): an eager message already queued taken with no Request (recvNow),
// or, while the call waits a moment, the receive held in a slot that the
// source's next eager message fills straight from its ring or queue
// (recvAtCall, recvAtCallOn), with no Request, promise or progress pass. The
// point-to-point layer (p2p.ts) offers it what arrives (offer, closeFor).

import type { PolledEndpoint, RxFrame } from '../rail/api.js';
import { copySmall } from '../core/word-copy.js';
import { ANY_TAG } from './matching.js';
import type { Progress } from './progress.js';
import type { ProtoEndpoint } from './endpoint.js';
import type { ContextState } from './context-state.js';
import { AM_EAGER, EAGER_HDR, EAGER_OVERHEAD, hdrCredits, hdrCtx, hdrSeq, hdrSrc, hdrTag } from './wire.js';

/** recvNow's answer when a matching message is queued that only a posted Request may take. */
export const QUEUED = -2;

/** Reads of an ofi queue in one brief wait of a synchronous receive (recvAtCallOn). */
const OFI_BRIEF_POLLS = 128;
/** Of them, how many one call into the binding makes while the queue is empty (its spin stays in C). */
const OFI_READS_PER_CALL = 16;
/** The empty payload (one, shared with p2p.ts). */
export const EMPTY_BUF = Buffer.alloc(0);

/**
 * A rail read through a completion queue (ofi): poll(reads) reads it up to
 * reads times while it is empty; readsMade, how many times it did.
 */
export interface QueueRail { poll(reads?: number): boolean; readonly readsMade?: number }

/** What the receive at the call needs of the point-to-point layer. */
export interface AtCallHost {
  state(ctx: number): ContextState;
  returnCredit(ep: ProtoEndpoint, n: number): void;
}

export class AtCall {
  private readonly host: AtCallHost;

  constructor(host: AtCallHost) {
    this.host = host;
  }

  /**
   * The blocking receive's fast path: when an eager message that fits is
   * already queued, take it and return its size (source and tag in
   * gotSource, gotTag), with no Request (the common case in halo exchanges,
   * where the neighbour's message is here before the receive). Having
   * changed nothing otherwise: -1 when nothing matching is queued, QUEUED
   * when something is that this path cannot take (or the context is broken):
   * then only a posted Request may receive, or a later message would
   * overtake the queued one.
   */
  recvNow(buf: Uint8Array, ctx: number, src: number, tag: number): number {
    const st = this.host.state(ctx);
    if (st.broken !== null) return QUEUED;
    if (st.queues.arrivedCount === 0) return -1;
    const u = st.queues.findArrived(src, tag);
    if (u === null) return -1;
    // Its first match is queued but is not for this path (a rendezvous, or too large): a Request takes it, in order.
    if (u.data === null || u.size > buf.length) return QUEUED;
    st.queues.removeArrived(u);
    this.host.returnCredit(u.ep, u.size + EAGER_OVERHEAD);
    if (u.size > 0) buf.set(u.data);
    this.gotSource = u.src;
    this.gotTag = u.tag;
    return u.size;
  }

  /** The source and tag of what recvNow or recvAtCall just received (no Status object per message). */
  gotSource = 0;
  gotTag = 0;

  /**
   * The blocking receive's short wait, when recvNow found nothing queued
   * that matches and the source is on a polled rail: up to RECV_SPIN_MS in
   * all, watching the source's ring alone, with the receive held here instead
   * of posted as a Request. Its own eager message at the head of that ring is
   * taken from there (takeAtCall); otherwise frames are delivered as usual,
   * and an eager message for it that no earlier posted receive matches is
   * copied straight into buf (onEager). Either way its size is returned (as
   * recvNow): no Request, no promise, no progress pass. -1 when the wait ran
   * out, or when a matching message arrived that is not for this slot
   * (rendezvous, too large): the caller then posts a Request as usual, which
   * finds it queued.
   */
  recvAtCall(buf: Uint8Array, ctx: number, src: number, tag: number, lane: PolledEndpoint, progress: Progress): number {
    // A matching message already queued comes first (recvNow takes it): one that
    // a wait delivered since the caller's last recvNow would otherwise be
    // overtaken by the next one at the head of the ring (seen: a ring
    // allreduce's step took the following step's block, 1 run in 10 under load).
    const st = this.host.state(ctx);
    if (st.queues.arrivedCount > 0 && st.queues.findArrived(src, tag) !== null) return -1;
    if (!progress.beginBrief()) return -1;
    // The receive's own eager message at the head of the source's queue is
    // taken from there (takeAtCall); anything else there is delivered as usual below.
    const rx = this.peeked;
    const ep = lane.owner as ProtoEndpoint;
    for (;;) {
      // A failed peer's frames are not taken (its receives fail through a Request).
      if (ep.failure !== null) return -1;
      const am = lane.peek(rx);
      if (am < 0) { if (progress.briefOver()) return -1; continue; }
      if (am === AM_EAGER) {
        const n = this.takeAtCall(ep, rx, buf, ctx, src, tag);
        if (n >= 0) { lane.takePeeked(rx); return n; }
      }
      break;
    }
    this.hold(buf, ctx, src, tag);
    try {
      // Until filled, or a message for it was queued instead (onEager and onRts
      // close the slot: buf = null), or the one deadline passed (other
      // traffic does not extend it).
      while (this.buf !== null && progress.pollBriefly(lane)) { /* deliver */ }
    } finally {
      this.buf = null;
    }
    return this.bytes;
  }

  /**
   * recvAtCall for a synchronous receive from a source on a rail without
   * rings (ofi): its rail polled alone a moment, the receive held in the
   * at-call slot, so its eager message is copied straight into buf
   * (onEager), with no queue entry.
   */
  recvAtCallOn(buf: Uint8Array, ctx: number, src: number, tag: number, ep: ProtoEndpoint, rail: QueueRail, polls = OFI_BRIEF_POLLS): number {
    const st = this.host.state(ctx);
    if (st.queues.arrivedCount > 0 && st.queues.findArrived(src, tag) !== null) return -1;
    if (ep.failure !== null) return -1;
    this.hold(buf, ctx, src, tag);
    try {
      // A read of the queue costs about a microsecond on tcp (a ring's look, 50 ns):
      // OFI_BRIEF_POLLS of them make a brief wait of about 0.1 ms, as on a ring
      // (a wait past its spin budget reads once between blocks). The binding
      // makes up to OFI_READS_PER_CALL of them per call while nothing comes:
      // on libfabric's shm provider a read is ~0.1 us and a call from
      // JavaScript as much again, which delayed noticing a message.
      for (let i = 0; i < polls && this.buf !== null;) {
        const k = Math.min(OFI_READS_PER_CALL, polls - i);
        rail.poll(k);
        // What the call read, not what it was allowed: it returns at the first completion (anyone's).
        i += Math.max(1, rail.readsMade ?? k);
      }
    } finally {
      this.buf = null;
    }
    return this.bytes;
  }

  /**
   * The eager frame rx (peeked at the head of ep's queue) into buf, when it
   * is this receive's message and nothing may come before it: the next in
   * the peer's order (none held back), on this context from src with a
   * matching tag, no receive posted on the context (an earlier one might
   * match it), and it fits. Then it is received as onEager would, without the
   * handler's path, and its size returned; otherwise -1, nothing changed.
   * The source is the lane's peer, so its claimed rank is right by construction.
   */
  private takeAtCall(ep: ProtoEndpoint, rx: RxFrame, buf: Uint8Array, ctx: number, src: number, tag: number): number {
    const v = rx.view;
    const o = rx.hdrOff;
    const len = rx.payLen;
    if (rx.hdrLen !== EAGER_HDR || hdrCtx(v, o) !== ctx || hdrSrc(v, o) !== src || len > buf.length) return -1;
    const t = hdrTag(v, o);
    if (tag !== ANY_TAG && t !== tag) return -1;
    const st = this.host.state(ctx);
    if (st.queues.postedCount > 0 || st.broken !== null || ep.rx.waiting > 0 || !ep.rx.inOrder(hdrSeq(v, o))) return -1;
    ep.credits += hdrCredits(v, o);
    this.tookAtCall(ep, rx.buf, rx.words, rx.payOff, len, buf, src, t);
    return len;
  }

  /** The receive waiting at the call took an eager message (len bytes of src from off): its credit, its bytes, its source and tag. */
  private tookAtCall(ep: ProtoEndpoint, src: Buffer, words: Int32Array | null, off: number, len: number, buf: Uint8Array, source: number, tag: number): void {
    this.host.returnCredit(ep, len + EAGER_OVERHEAD);
    copyOut(ep, src, words, off, len, buf);
    this.gotSource = source;
    this.gotTag = tag;
    this.recvsAtCall++;
  }

  /** The frame recvAtCall looks at before taking it. */
  private readonly peeked: RxFrame = { buf: EMPTY_BUF, view: new DataView(new ArrayBuffer(0)), hdrOff: 0, hdrLen: 0, payOff: 0, payLen: 0, placed: null, words: null };

  /** Whether a message (context, source, tag) matches the receive waiting at the call. */
  private matches(ctx: number, src: number, tag: number): boolean {
    return ctx === this.ctx && src === this.src && (this.tag === ANY_TAG || this.tag === tag);
  }

  private hold(buf: Uint8Array, ctx: number, src: number, tag: number): void {
    this.buf = buf; this.ctx = ctx; this.src = src; this.tag = tag; this.bytes = -1;
  }

  /**
   * An eager message (len bytes of src from off) that no posted receive
   * matched, offered to the receive waiting at the call (buf not null): true
   * when it took it. One it matches but cannot take (too large) closes the
   * slot and is queued, and then nothing later may overtake it there.
   */
  offer(ep: ProtoEndpoint, ctx: number, source: number, tag: number, src: Buffer, words: Int32Array | null, off: number, len: number): boolean {
    const at = this.buf;
    if (at === null || !this.matches(ctx, source, tag)) return false;
    this.buf = null;
    if (len > at.length) return false;
    this.tookAtCall(ep, src, words, off, len, at, source, tag);
    this.bytes = len;
    return true;
  }

  /** A rendezvous it matches arrived: the slot closes (the receive is posted, and takes it from the queue). */
  closeFor(ctx: number, src: number, tag: number): void {
    if (this.matches(ctx, src, tag)) this.buf = null;
  }

  /** The receive recvAtCall holds (null: none), its match, and the bytes it got once filled (-1: not yet). */
  buf: Uint8Array | null = null;
  private ctx = 0;
  private src = 0;
  private tag = 0;
  private bytes = -1;
  /** Blocking receives that completed while waiting at the call (--stats; a double from the start, as rgetBytes). */
  recvsAtCall = -0;
  /** Times a synchronous call's wait blocked on a doorbell, its spin budget spent (comm/sync.ts; --stats). */
  syncBlocks = -0;
}

/**
 * An arrived payload (len bytes of src from off; src as words, if it has
 * them) into the receive buffer. Small copies go by words where both sides
 * allow (core/word-copy.ts; the views of receive buffers are kept per peer,
 * so that a halo exchange's alternating buffers each keep theirs), else by
 * bytes: Buffer#copy with an offset makes a temporary view, an allocation per
 * message; larger ones are a memmove, also out of a ring in shared memory.
 */
export function copyOut(ep: ProtoEndpoint, src: Buffer, words: Int32Array | null, off: number, len: number, dst: Uint8Array): void {
  if (len <= 256) {
    copySmall(dst, 0, words !== null && len >= 4 ? ep.arrivalViews.of(dst) : null, src, off, words, len);
    return;
  }
  src.copy(dst, 0, off, off + len);
}
