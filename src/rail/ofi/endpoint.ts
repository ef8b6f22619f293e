// An ofi rail endpoint: one peer in the rail's address vector (inserted on
// first use), the HELLO that introduces this rank before its first frame,
// active-message sends (injected, copied or gathered from the caller's
// memory) and native one-sided operations on the peer's registered memory.

import type { Completion, RailRemoteKey, RailRma, RailStatus, ValueCompletion } from '../api.js';
import { processExists } from '../../core/host.js';
import { DONE, IN_PROGRESS, NO_RESOURCE } from '../api.js';
import { TrafficCounters } from '../../core/counters.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { formatId } from '../../core/ids.js';
import { copySmall } from '../../core/word-copy.js';
import { writeValue, OP_CSWAP } from '../../proto/rma/apply.js';
import { PEER_CLOSED_DRAIN_MS } from './ops.js';
import { AM_CONTROL, F_BYE, F_HELLO, F_PING, FRAME_HEAD, HEAD_PAYLOAD_MAX, MAC_BYTES, encodeHead, helloMac } from './wire.js';
import { K_ATOMIC, K_CSWAP, K_FETCH, K_READ, K_WRITE } from './native.js';
import type { OfiRail, OfiRemoteKey } from './rail.js';
import { unreachableAtSend } from './peer-errors.js';

/** Zero-copy sends of at most this many payload bytes are copied instead (a completion costs more than the copy). */
const ZCOPY_COPY_BELOW = 16384;
const NO_ADDR = -1;
/** The BYE's completion: nothing waits for it but the rail's close (which counts operations in flight). */
const BYE_SENT: Completion = { railComplete(): void { /* sent, or its peer is gone */ } };
/** A PING's completion: an error fails the peer (peers.ts completionError), nothing else waits. */
const PING_SENT: Completion = { railComplete(): void { /* sent, or the peer failed */ } };
/**
 * FI_ENOENT from a send: the provider has no connection to the peer now. The
 * sockets provider says so when its connect attempt failed (a race between its
 * threads, or a refused connect under load): transient while the peer lives,
 * so the send is tried again (first retry after this many ms, doubling).
 */
const NO_CONNECTION = 2;
const RETRY_FIRST_MS = 5;
const RETRY_MAX_MS = 250;
/** A refusal this long after the last one starts a new episode (its own connect timeout). */
const EPISODE_GAP_MS = 2000;
/** Finalizing, a peer refused this long (at most) most likely finalized first. */
const FINALIZING_LIMIT_MS = 1000;

export class OfiEndpoint implements RailRma {
  readonly rail: OfiRail;
  readonly peer: bigint;
  readonly counters = new TrafficCounters();
  owner: unknown = null;
  readonly rma: RailRma;
  /** The peer's rail address (from wire-up or its HELLO). */
  address: string;
  /** Its process on this host (liveness), else 0. */
  pid: number;
  private fiAddr = NO_ADDR;
  /** shm: whether its writes to this peer go over cross-memory attach (synchronous; undefined: not checked yet). */
  private cma: boolean | undefined;
  private helloSent = false;
  /** Sequence number of the next frame to the peer (its HELLO is 0). */
  private txSeq = 0;
  /** The peer's HELLO arrived: its frames are delivered. */
  heard = false;
  failed = false;
  /** The peer finalized (its BYE came, or it was unreachable while this rank finalized): failed, gracefully. */
  peerFinalized = false;
  /** When sends to the peer first found no connection (FI_ENOENT) in this episode, else 0; and the last refusal. */
  private noConnSince = 0;
  private lastRefusal = 0;
  private retryMs = RETRY_FIRST_MS;
  /**
   * While a send waits to try the connection again: when (Date.now()). The
   * rail's poll re-drives the layer above once it is due (a synchronous wait
   * runs no event loop), and so does a timer (an idle rank polls nothing).
   */
  retryAt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(rail: OfiRail, peer: bigint, address: string, pid: number) {
    this.rail = rail;
    this.peer = peer;
    this.address = address;
    this.pid = pid;
    this.rma = this;
  }

  fiAddrIs(a: number): boolean {
    return this.fiAddr === a;
  }

  /** The peer's address-vector entry, inserted on first use; NO_ADDR when that failed (the peer failed). */
  private dest(): number {
    if (this.fiAddr !== NO_ADDR) return this.fiAddr;
    const to = this.rail.nameOf(this.address);
    if (to === null) { this.fail(`its rail address is not an ofi address of provider ${this.rail.provider}: ${JSON.stringify(this.address.slice(0, 80))}`, false); return NO_ADDR; }
    try {
      this.fiAddr = this.rail.b.avInsert(this.rail.h, to.name, to.ctx);
    } catch (e) {
      this.fail(`cannot insert its address into the address vector: ${(e as Error).message}`, false);
      return NO_ADDR;
    }
    this.rail.newPeer();
    return this.fiAddr;
  }

  /** The first frame to the peer: who we are, how to reach us, and proof of the job key. */
  private hello(dest: number): boolean {
    const rail = this.rail;
    const addr = Buffer.from(rail.address(), 'utf8');
    const mac = helloMac(rail.env.jobKey, rail.env.self, this.peer, rail.address());
    encodeHead(rail.headView, AM_CONTROL, F_HELLO, MAC_BYTES, addr.length, rail.rank, rail.job, 0);
    rail.head.set(mac, FRAME_HEAD);
    const r = rail.b.send(rail.h, dest, rail.head, FRAME_HEAD + MAC_BYTES, addr, 0);
    if (r === NO_RESOURCE) return false;
    if (r < 0) { if (!this.awaitConnection(r)) this.sendFailed(r); return false; }
    this.noConnSince = 0;
    this.helloSent = true;
    this.txSeq = 1;
    return true;
  }

  /** Address and HELLO done; NO_ADDR when the peer failed, -2 when the HELLO found no room or no connection. */
  private ready(): number {
    const d = this.fiAddr !== NO_ADDR ? this.fiAddr : this.dest();
    if (d === NO_ADDR) return NO_ADDR;
    if (!this.helloSent && !this.hello(d)) return this.failed ? NO_ADDR : -2;
    return d;
  }

  /** The HELLO could not go: re-driven when room frees, or when its connection retry is due. */
  private helloBlocked(): RailStatus {
    return this.retryAt !== 0 ? this.waiting() : this.blocked();
  }

  /** No room: re-driven when the rail's transmit entries free. */
  private blocked(): RailStatus {
    this.counters.pending++;
    this.rail.blocked.add(this);
    return NO_RESOURCE;
  }

  /** No connection: re-driven when the retry is due (not by freed room, which would retry at once). */
  private waiting(): RailStatus {
    this.counters.pending++;
    return NO_RESOURCE;
  }

  /**
   * A send to the peer failed with error r. If the provider found no
   * connection (FI_ENOENT) and the peer may live, the send waits and is tried
   * again on a timer (true: report NO_RESOURCE), until the connect timeout
   * (RAILCOMM_CONNECT_TIMEOUT) has passed since sends first found none. A dead
   * peer is failed sooner by what watches it (its pid, the wire-up service).
   */
  private awaitConnection(r: number): boolean {
    if (-r !== NO_CONNECTION || this.failed || this.rail.closing || !this.alive()) return false;
    const now = Date.now();
    // (A refusal long after the last starts afresh: sends the layer above drops
    // rather than queues, a probe or an ack, leave no one to end an episode.)
    if (this.noConnSince === 0 || now - this.lastRefusal > EPISODE_GAP_MS) {
      this.noConnSince = now;
      this.retryMs = RETRY_FIRST_MS;
      this.rail.env.log.debug(`ofi: no connection to peer ${formatId(this.peer)} (${this.rail.fiError(r)}): trying again for up to ${this.connectLimit()} ms`);
    }
    this.lastRefusal = now;
    if (now - this.noConnSince >= this.connectLimit()) return false;
    this.counters.noConnection++;
    this.rail.counters.noConnection++;
    if (this.retryAt === 0) {
      this.retryAt = now + this.retryMs;
      this.rail.retrying.add(this);
      this.retryTimer = setTimeout(this.retryNow, this.retryMs);
      this.retryTimer.unref(); // (outstanding requests hold the event loop)
      this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
    }
    return true;
  }

  /** How long sends may find no connection: the connect timeout, or at most a second while finalizing. */
  private connectLimit(): number {
    const t = this.rail.env.params.connectTimeout;
    return this.rail.finalizing ? Math.min(t, FINALIZING_LIMIT_MS) : t;
  }

  /** The connection retry is due (the rail's poll or the timer): the layer above sends what waits. */
  readonly retryNow = (): void => {
    if (this.retryAt === 0) return;
    this.stopRetry();
    if (!this.failed && !this.rail.closing) this.rail.env.upcalls.ready(this);
  };

  private stopRetry(): void {
    this.retryAt = 0;
    this.rail.retrying.delete(this);
    if (this.retryTimer !== null) { clearTimeout(this.retryTimer); this.retryTimer = null; }
  }

  sendCopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus {
    if (this.failed) return DONE;
    const d = this.helloSent ? this.fiAddr : this.ready();
    if (d < 0) return d === NO_ADDR ? DONE : this.helloBlocked();
    const rail = this.rail;
    const head = rail.head;
    const payLen = payload === null ? 0 : payload.length;
    encodeHead(rail.headView, am, 0, hdrLen, payLen, rail.rank, rail.job, this.txSeq);
    for (let i = 0; i < hdrLen; i++) head[FRAME_HEAD + i] = hdr[i]!;
    let r: number;
    if (payLen <= HEAD_PAYLOAD_MAX) {
      // The whole frame in the head: one binding call with three numbers (the small eager message's path).
      const at = FRAME_HEAD + hdrLen;
      if (payLen <= 32) copySmall(head, at, null, payload!, 0, null, payLen);
      else head.set(payload!, at);
      r = rail.b.sendHead(rail.h, d, at + payLen);
    } else {
      r = rail.b.send(rail.h, d, head, FRAME_HEAD + hdrLen, payload, 0);
    }
    if (r === DONE) { this.txSeq = (this.txSeq + 1) >>> 0; this.counters.msgsSent++; this.counters.bytesSent += payLen; this.noConnSince = 0; return DONE; }
    if (r === NO_RESOURCE) return this.blocked();
    if (this.awaitConnection(r)) return this.waiting();
    this.sendFailed(r);
    return DONE;
  }

  sendZcopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array, done: Completion): RailStatus {
    const rail = this.rail;
    if (payload.length <= ZCOPY_COPY_BELOW || !rail.gathers) {
      const st = this.sendCopy(am, hdr, hdrLen, payload);
      if (st === NO_RESOURCE) return st;
      done.railComplete(this.failed ? this.gone() : null);
      return IN_PROGRESS;
    }
    if (this.failed) { done.railComplete(this.gone()); return IN_PROGRESS; }
    const d = this.helloSent ? this.fiAddr : this.ready();
    if (d < 0) {
      if (d === NO_ADDR) { done.railComplete(this.gone()); return IN_PROGRESS; }
      return this.helloBlocked();
    }
    const head = rail.head;
    encodeHead(rail.headView, am, 0, hdrLen, payload.length, rail.rank, rail.job, this.txSeq);
    for (let i = 0; i < hdrLen; i++) head[FRAME_HEAD + i] = hdr[i]!;
    const id = rail.ops.take(done, this, payload, -1);
    const r = rail.b.send(rail.h, d, head, FRAME_HEAD + hdrLen, payload, id);
    if (r === IN_PROGRESS) { this.txSeq = (this.txSeq + 1) >>> 0; this.counters.msgsSent++; this.counters.bytesSent += payload.length; this.noConnSince = 0; return IN_PROGRESS; }
    if (r === NO_RESOURCE) { rail.ops.drop(id); return this.blocked(); }
    if (this.awaitConnection(r)) { rail.ops.drop(id); return this.waiting(); }
    rail.ops.fail(id, this.gone());
    this.sendFailed(r);
    return IN_PROGRESS;
  }

  // ---- native one-sided operations (RailRma) ---------------------------------

  /** Issue one native operation; op is the binding call, done its completion. */
  private issue(r: number, id: number): RailStatus {
    if (r === IN_PROGRESS) return IN_PROGRESS;
    const rail = this.rail;
    // Complete within the call (shm's cross-memory attach): done is never called.
    if (r === DONE) { rail.ops.drop(id); return DONE; }
    // (The one-sided engine emulates what finds no room, or no connection yet:
    // its messages wait for one. Nothing to re-drive.)
    if (r === NO_RESOURCE || -r === NO_CONNECTION) { rail.ops.drop(id); return NO_RESOURCE; }
    // Refused at the call (a bad key or range): that operation fails, the peer stays.
    rail.ops.fail(id, new RailcommError(ErrorCode.INVALID_ARG, `ofi: the provider refused a one-sided operation to ${formatId(this.peer)}: ${rail.fiError(r)}`));
    return IN_PROGRESS;
  }

  /** The peer's address, or null after failing done (the peer failed). */
  private rmaDest(done: Completion): number | null {
    if (this.failed) { done.railComplete(this.gone()); return null; }
    const d = this.fiAddr !== NO_ADDR ? this.fiAddr : this.dest();
    if (d === NO_ADDR) { done.railComplete(this.gone()); return null; }
    return d;
  }

  put(src: Uint8Array, key: RailRemoteKey, offset: number, done: Completion): RailStatus {
    const d = this.rmaDest(done);
    if (d === null) return IN_PROGRESS;
    const rail = this.rail;
    const id = rail.ops.take(done, this, src, -1);
    this.counters.bytesSent += src.length;
    return this.issue(rail.b.rma(rail.h, K_WRITE, d, src, (key as OfiRemoteKey).index, offset, id, this.viaCma(key as OfiRemoteKey)), id);
  }

  get(dst: Uint8Array, key: RailRemoteKey, offset: number, done: Completion): RailStatus {
    const d = this.rmaDest(done);
    if (d === null) return IN_PROGRESS;
    const rail = this.rail;
    const id = rail.ops.take(done, this, dst, -1);
    this.counters.bytesRecv += dst.length;
    return this.issue(rail.b.rma(rail.h, K_READ, d, dst, (key as OfiRemoteKey).index, offset, id, this.viaCma(key as OfiRemoteKey)), id);
  }

  /**
   * Whether writes and reads to this peer are done within the call: shm
   * copies them itself over cross-memory attach (process_vm_writev,
   * process_vm_readv) where the kernel lets this process reach the peer's
   * memory, so a write complete at the call is complete in the target's
   * memory without FI_DELIVERY_COMPLETE (asking for it sends shm down its
   * slow path instead, served only when the target reads its queue: an idle
   * target, a timer tick per write), and the binding looks for the
   * completion at once (put and get then answer DONE).
   */
  private viaCma(key: OfiRemoteKey): boolean {
    if (this.rail.provider !== 'shm' || this.pid === 0) return false;
    this.cma ??= this.rail.b.cmaCheck(this.pid, key.base);
    return this.cma;
  }

  atomicNative(type: number, op: number, fetch: boolean, count: number): boolean {
    return this.rail.atomicCount(type, op, fetch) >= count;
  }

  accumulate(src: Uint8Array, type: number, op: number, key: RailRemoteKey, offset: number, done: Completion): RailStatus {
    const d = this.rmaDest(done);
    if (d === null) return IN_PROGRESS;
    const rail = this.rail;
    const id = rail.ops.take(done, this, src, -1);
    return this.issue(rail.b.atomic(rail.h, K_ATOMIC, d, rail.fiType(type), rail.fiOp(op), src, (key as OfiRemoteKey).index, offset, id), id);
  }

  fetchAtomic(type: number, op: number, operand: number | bigint, compare: number | bigint, key: RailRemoteKey, offset: number, done: ValueCompletion): RailStatus {
    const d = this.rmaDest(done);
    if (d === null) return IN_PROGRESS;
    const rail = this.rail;
    const v = rail.operandView;
    writeValue(v, 0, type, operand);
    writeValue(v, 8, type, op === OP_CSWAP ? compare : operand);
    const id = rail.ops.take(done, this, null, type);
    const kind = op === OP_CSWAP ? K_CSWAP : K_FETCH;
    return this.issue(rail.b.atomic(rail.h, kind, d, rail.fiType(type), rail.fiOp(op), rail.operand, (key as OfiRemoteKey).index, offset, id), id);
  }

  // ---- failure and close --------------------------------------------------------

  gone(): RailcommError {
    return new RailcommError(ErrorCode.PEER_FAILED, `ofi: peer ${formatId(this.peer)} is gone`);
  }

  /** The peer said BYE: it finalized. */
  peerClosed(): void {
    if (this.failed) return;
    this.failed = true;
    this.peerFinalized = true;
    this.stopRetry();
    this.rail.forget(this);
    const err = new RailcommError(ErrorCode.PEER_FAILED, `peer ${formatId(this.peer)} finalized`);
    // What we sent may have reached the peer before it finalized: its BYE can
    // overtake the provider's completions of our sends (on sockets they come
    // back on the connection we opened, the BYE on the one it opened), and a
    // send the peer received must complete, not fail. The provider completes
    // or fails them; what it has not within PEER_CLOSED_DRAIN_MS fails then.
    this.rail.ops.drain(this, err, Date.now() + PEER_CLOSED_DRAIN_MS);
    this.rail.env.upcalls.failed(this, err, true);
  }

  abort(reason: string): void {
    this.fail(reason, true);
  }

  /**
   * The provider refused a send to the peer (error r). While this rank
   * finalizes, a peer it cannot reach most likely finalized first (its last
   * BYE went to the ranks it talked to, not necessarily this one): it is
   * closed, quietly. Otherwise it failed.
   */
  private sendFailed(r: number): void {
    if (this.rail.finalizing && unreachableAtSend(-r)) {
      this.rail.env.log.debug(`ofi: peer ${formatId(this.peer)} unreachable while finalizing (${this.rail.fiError(r)}): it finalized first`);
      this.peerClosed();
      return;
    }
    const since = -r === NO_CONNECTION ? this.noConnSince : 0;
    this.fail(since === 0 ? `cannot send to it: ${this.rail.fiError(r)}` : `no connection to it for ${Date.now() - since} ms (RAILCOMM_CONNECT_TIMEOUT ${this.rail.env.params.connectTimeout}): ${this.rail.fiError(r)}`, false);
  }

  /**
   * This rank gives up on the connection (multirail: a lane that stopped
   * answering): failed at once, quietly (the lanes said why), so that what is
   * in flight on it fails now. A close() instead would leave it open: its
   * BYE, and the zero-copy sends the provider still holds, would wait on a
   * connection that carries nothing, and the rendezvous sends they belong
   * to would never complete.
   */
  giveUp(reason: string): void {
    this.fail(`given up on: ${reason}`, false, true);
  }

  fail(reason: string, bad: boolean, quiet = false): void {
    if (this.failed) return;
    this.failed = true;
    this.stopRetry();
    if (bad) { this.counters.badFrames++; this.rail.counters.badFrames++; }
    // (Finalizing, peers that finalized first are gone: no alarm.)
    if ((this.rail.closing || quiet) && !bad) this.rail.env.log.debug(`ofi: peer ${formatId(this.peer)} ${quiet ? 'dropped' : 'gone while closing'}: ${reason}`);
    else this.rail.env.log.error(`ofi: dropping peer ${formatId(this.peer)}: ${reason}`);
    this.rail.forget(this);
    this.rail.peerDropped();
    const err = new RailcommError(ErrorCode.PEER_FAILED, `ofi (${this.rail.provider}): peer ${formatId(this.peer)} failed: ${reason}`);
    this.rail.ops.failOwner(this, err);
    this.rail.env.upcalls.failed(this, err, false);
  }

  /** Whether the peer's process still runs (peers on this host only; others: true). */
  alive(): boolean {
    return this.failed || this.pid === 0 || processExists(this.pid);
  }

  /**
   * Tell the peer we finalized (only if we ever talked); true once handed to
   * the provider. Never injected: its completion keeps the rail open until
   * the provider sent it (the sockets provider drops injected frames at close).
   */
  sayBye(): boolean {
    if (this.failed || !this.helloSent) return true;
    const rail = this.rail;
    encodeHead(rail.headView, AM_CONTROL, F_BYE, 0, 0, rail.rank, rail.job, this.txSeq);
    const id = rail.ops.take(BYE_SENT, this, null, -1);
    const r = rail.b.send(rail.h, this.fiAddr, rail.head, FRAME_HEAD, null, id);
    if (r === NO_RESOURCE) { rail.ops.drop(id); return false; }
    if (r < 0) {
      rail.ops.drop(id);
      // No connection yet to a peer that lives: close() tries again (for 2 s).
      if (-r === NO_CONNECTION && this.alive()) return false;
    }
    this.txSeq = (this.txSeq + 1) >>> 0;
    return true;
  }

  /**
   * A synchronous wait's liveness check of a peer on another host (one here
   * is watched by its pid): a PING the peer ignores, sent with a completion,
   * so that a connection its death broke comes back as an error and fails it.
   */
  probe(): void {
    if (this.failed || !this.helloSent || this.pid !== 0) return;
    const rail = this.rail;
    encodeHead(rail.headView, AM_CONTROL, F_PING, 0, 0, rail.rank, rail.job, this.txSeq);
    const id = rail.ops.take(PING_SENT, this, null, -1);
    const r = rail.b.send(rail.h, this.fiAddr, rail.head, FRAME_HEAD, null, id);
    if (r === NO_RESOURCE) { rail.ops.drop(id); return; }
    if (r < 0) { rail.ops.drop(id); if (!this.awaitConnection(r)) this.sendFailed(r); return; }
    this.txSeq = (this.txSeq + 1) >>> 0;
    this.noConnSince = 0;
  }

  async close(): Promise<void> {
    this.stopRetry();
    const deadline = Date.now() + 2000;
    while (!this.sayBye() && Date.now() < deadline) {
      this.rail.poll();
      await new Promise((r) => setTimeout(r, 1));
    }
  }
}
