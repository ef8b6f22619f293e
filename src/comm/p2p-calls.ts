// A communicator's point-to-point calls (DESIGN section 4): send and receive,
// blocking and not, of bytes, device arrays and values; probes and matched
// probes. Communicator (communicator.ts) builds collectives and the rest on it.

import { RailcommError, ErrorCode } from '../core/errors.js';
import type { AbortSignalLike } from '../core/signal.js';
import { asBytes, DeviceBuffer } from '../core/bytes.js';
import { ANY_SOURCE, ANY_TAG, PROC_NULL } from '../proto/matching.js';
import { Request, KIND_PROBE, KIND_RECV, KIND_SEND, statusOf, type Status } from '../proto/request.js';
import type { Unexpected } from '../proto/p2p.js';
import { allocFailed, checkByteCount, checkPeer, checkSignal, checkTag } from './checks.js';
import { NO_PROC_TOKEN, NULL_STATUS, nullDone, nullRequest } from './proc-null.js';
import { Message } from './message.js';
import { deserialize, serialize, type World } from './world.js';
import { SettledStatus } from './settled-status.js';
import { deviceIrecv, deviceIsend, type DeviceLink } from '../cuda/p2p.js';
import type { DeviceArray } from '../cuda/memory.js';

/** A buffer in host memory, or a device array (src/cuda): the calls that take both accept either. */
export type Mem = ArrayBufferView | DeviceBuffer;

export interface RequestOptions {
  /** Cancels a receive not yet matched (an AbortSignal; any object of this shape). */
  signal?: AbortSignalLike;
}

export const EMPTY: Uint8Array = new Uint8Array(0);

// (Message checks structurally that a Communicator is its ClaimedReceiver; an implements clause
// would name an internal method in the public declarations.)
/** The point-to-point half of a Communicator: its base class, so that one class's calls fit in two files. */
export class PointToPoint {
  readonly rank: number;
  readonly size: number;
  /** @internal */ readonly world: World;
  /** @internal World rank of each rank of this communicator. */
  protected readonly group: readonly number[];
  /** @internal */ protected readonly p2pCtx: number;
  /** @internal */ protected readonly collCtx: number;
  /** The settled results of blocking sends and receives that completed at the call. */
  private readonly sentAtCall = new SettledStatus();
  /** Per source: a halo exchange alternates its sources, and one entry for all would miss every time. */
  private readonly receivedAtCall: SettledStatus[] = [];

  /** @internal */
  constructor(world: World, group: readonly number[], rank: number, p2pCtx: number, collCtx: number) {
    this.world = world;
    this.group = group;
    this.rank = rank;
    this.size = group.length;
    this.p2pCtx = p2pCtx;
    this.collCtx = collCtx;
    world.ctx.p2p.registerContext(p2pCtx, group, false);
    world.ctx.p2p.registerContext(collCtx, group, true);
  }

  // ---- point-to-point ----------------------------------------------------

  /** Send buf to dest. Resolves once buf may be reused (eager: at once; large: once the receiver took it). */
  send(buf: Mem, dest: number, tag = 0): Promise<Status> {
    this.world.check('send');
    if (!(buf instanceof Uint8Array) && buf instanceof DeviceBuffer) return this.deviceSend(buf, dest, tag, null).wait();
    const bytes = asBytes(buf, 'send buffer');
    checkPeer(dest, this.size, 'destination', false);
    checkTag(tag, false);
    if (dest === PROC_NULL) return nullDone();
    // Small messages the rail takes at once complete without a Request.
    if (this.world.ctx.p2p.sendNow(bytes, this.group[dest]!, this.p2pCtx, this.rank, tag)) {
      this.world.ctx.progress.completedAtOnce();
      return this.sentAtCall.get(this.rank, tag, bytes.length);
    }
    return this.startSend(bytes, dest, tag, this.p2pCtx, null).wait();
  }

  /** Receive into buf from source (or ANY_SOURCE) with tag (or ANY_TAG). */
  recv(buf: Mem, source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<Status> {
    this.world.check('recv');
    if (!(buf instanceof Uint8Array) && buf instanceof DeviceBuffer) return this.deviceRecv(buf, source, tag, null).wait();
    const bytes = asBytes(buf, 'receive buffer');
    checkPeer(source, this.size, 'source', true);
    checkTag(tag, true);
    if (source === PROC_NULL) return nullDone();
    // A small message that is already here completes without a Request.
    const ctx = this.world.ctx;
    const p2p = ctx.p2p;
    let got = p2p.atCall.recvNow(bytes, this.p2pCtx, source, tag);
    // From a peer on a polled rail (shared memory), wait for it at the call a
    // moment: in a ping-pong or a halo exchange it is a few hundred ns away.
    if (got === -1 && source !== ANY_SOURCE) {
      const lane = ctx.polledLane(this.group[source]!);
      if (lane !== null) got = p2p.atCall.recvAtCall(bytes, this.p2pCtx, source, tag, lane, ctx.progress);
    }
    if (got >= 0) { ctx.progress.completedAtOnce(); return (this.receivedAtCall[p2p.atCall.gotSource] ??= new SettledStatus()).get(p2p.atCall.gotSource, p2p.atCall.gotTag, got); }
    return this.startRecv(bytes, source, tag, this.p2pCtx, null).wait();
  }

  isend(buf: Mem, dest: number, tag = 0, opts?: RequestOptions): Request {
    this.world.check('isend');
    if (!(buf instanceof Uint8Array) && buf instanceof DeviceBuffer) return this.deviceSend(buf, dest, tag, checkSignal(opts));
    const bytes = asBytes(buf, 'send buffer');
    checkPeer(dest, this.size, 'destination', false);
    checkTag(tag, false);
    const signal = checkSignal(opts);
    if (dest === PROC_NULL) return nullRequest(KIND_SEND);
    return this.startSend(bytes, dest, tag, this.p2pCtx, signal);
  }

  irecv(buf: Mem, source: number = ANY_SOURCE, tag: number = ANY_TAG, opts?: RequestOptions): Request {
    this.world.check('irecv');
    if (!(buf instanceof Uint8Array) && buf instanceof DeviceBuffer) return this.deviceRecv(buf, source, tag, checkSignal(opts));
    const bytes = asBytes(buf, 'receive buffer');
    checkPeer(source, this.size, 'source', true);
    checkTag(tag, true);
    const signal = checkSignal(opts);
    if (source === PROC_NULL) return nullRequest(KIND_RECV);
    return this.startRecv(bytes, source, tag, this.p2pCtx, signal);
  }

  /** @internal */
  protected startSend(bytes: Uint8Array, dest: number, tag: number, ctx: number, signal: AbortSignalLike | null): Request {
    const r = new Request(KIND_SEND, bytes);
    r.ctx = ctx;
    r.source = this.rank;
    r.tag = tag;
    this.world.track(r);
    if (signal !== null) r.bindSignal(signal);
    this.world.ctx.p2p.isend(r, this.group[dest]!);
    return r;
  }

  /** @internal */
  protected startRecv(bytes: Uint8Array, source: number, tag: number, ctx: number, signal: AbortSignalLike | null): Request {
    const r = new Request(KIND_RECV, bytes);
    r.ctx = ctx;
    r.matchSrc = source;
    r.matchTag = tag;
    this.world.track(r);
    this.world.ctx.p2p.irecv(r, source === ANY_SOURCE ? -1 : this.group[source]!);
    if (signal !== null) r.bindSignal(signal);
    return r;
  }

  /** A device array (src/cuda/p2p.ts): the same argument checks, then the device datapaths. */
  private deviceSend(buf: DeviceBuffer, dest: number, tag: number, signal: AbortSignalLike | null): Request {
    checkPeer(dest, this.size, 'destination', false);
    checkTag(tag, false);
    if (dest === PROC_NULL) return nullRequest(KIND_SEND);
    return deviceIsend(this.deviceLink(), buf as DeviceArray, dest, tag, this.p2pCtx, signal);
  }

  private deviceRecv(buf: DeviceBuffer, source: number, tag: number, signal: AbortSignalLike | null): Request {
    checkPeer(source, this.size, 'source', true);
    checkTag(tag, true);
    if (source === PROC_NULL) return nullRequest(KIND_RECV);
    return deviceIrecv(this.deviceLink(), buf as DeviceArray, source, tag, this.p2pCtx, signal);
  }

  /** @internal What the device datapaths need of this communicator. */
  deviceLink(): DeviceLink {
    return (this.link ??= { world: this.world, rank: this.rank, worldRankOf: (r) => this.group[r]!, p2pCtx: this.p2pCtx, collCtx: this.collCtx });
  }
  private link: DeviceLink | null = null;

  /**
   * MPI_Sendrecv: send sbuf to dest while receiving into rbuf from source;
   * resolves with the receive's Status once both completed (a halo
   * exchange's step, with no deadlock however large the messages).
   */
  sendrecv(sbuf: ArrayBufferView, dest: number, sendTag: number, rbuf: ArrayBufferView, source: number = ANY_SOURCE, recvTag: number = ANY_TAG): Promise<Status> {
    this.world.check('sendrecv');
    const sb = asBytes(sbuf, 'send buffer');
    checkPeer(dest, this.size, 'destination', false);
    checkTag(sendTag, false);
    const rb = asBytes(rbuf, 'receive buffer');
    checkPeer(source, this.size, 'source', true);
    checkTag(recvTag, true);
    const r = source === PROC_NULL ? nullRequest(KIND_RECV) : this.startRecv(rb, source, recvTag, this.p2pCtx, null);
    const s = dest === PROC_NULL ? nullRequest(KIND_SEND) : this.startSend(sb, dest, sendTag, this.p2pCtx, null);
    return bothDone(s, r);
  }

  /** Wait until a message matching (source, tag) is queued; it stays queued. */
  probe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<Status> {
    const p = this.startProbe(source, tag, false, 'probe');
    return source === PROC_NULL ? nullDone() : p.wait();
  }

  /** The Status of a queued message matching (source, tag), or undefined. */
  iprobe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Status | undefined {
    this.world.check('iprobe');
    checkPeer(source, this.size, 'source', true);
    checkTag(tag, true);
    if (source === PROC_NULL) return NULL_STATUS;
    const u = this.peekProgressing(source, tag);
    return u === null ? undefined : statusOf(u.src, u.tag, u.size);
  }

  /** Matched probe: wait for a message and take it out of matching; receive it with msg.recv(buf). */
  mprobe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<Message> {
    const p = this.startProbe(source, tag, true, 'mprobe');
    if (source === PROC_NULL) return Promise.resolve(new Message(this, PROC_NULL, ANY_TAG, 0, NO_PROC_TOKEN));
    return p.wait().then(() => {
      const u = p.found as Unexpected;
      return new Message(this, u.src, u.tag, u.size, u);
    });
  }

  /** Matched probe without waiting: a Message, or undefined when nothing matches now. */
  improbe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Message | undefined {
    this.world.check('improbe');
    checkPeer(source, this.size, 'source', true);
    checkTag(tag, true);
    if (source === PROC_NULL) return new Message(this, PROC_NULL, ANY_TAG, 0, NO_PROC_TOKEN);
    const u = this.peekProgressing(source, tag);
    if (u === null) return undefined;
    this.world.ctx.p2p.claim(this.p2pCtx, u);
    return new Message(this, u.src, u.tag, u.size, u);
  }

  /**
   * The queued message iprobe/improbe would report; when none is queued, the
   * polled rails (shared memory, ofi) are read once and it looks again: a
   * rank that only polls with iprobe must see a message sent to it (MPI's
   * progress rule), and those rails deliver only when read.
   */
  private peekProgressing(source: number, tag: number): Unexpected | null {
    const ctx = this.world.ctx;
    const u = ctx.p2p.peek(this.p2pCtx, source, tag);
    if (u !== null || !ctx.progress.pollSync()) return u;
    return ctx.p2p.peek(this.p2pCtx, source, tag);
  }

  /** A waiting probe (PROC_NULL: checked, and nothing waits). */
  private startProbe(source: number, tag: number, claim: boolean, what: string): Request {
    this.world.check(what);
    checkPeer(source, this.size, 'source', true);
    checkTag(tag, true);
    if (source === PROC_NULL) return nullRequest(KIND_PROBE);
    const p = new Request(KIND_PROBE, EMPTY);
    p.ctx = this.p2pCtx;
    p.matchSrc = source;
    p.matchTag = tag;
    p.claim = claim;
    this.world.track(p);
    this.world.ctx.p2p.waitProbe(p);
    return p;
  }

  /** @internal Receive a message claimed by mprobe/improbe. */
  receiveClaimed(buf: Uint8Array, token: unknown): Promise<Status> {
    this.world.check('Message.recv');
    if (token === NO_PROC_TOKEN) return nullDone();
    const r = new Request(KIND_RECV, buf);
    r.ctx = this.p2pCtx;
    this.world.track(r);
    this.world.ctx.p2p.recvClaimed(r, token as Unexpected);
    return r.wait();
  }

  /** Receive a message of any size: railcomm allocates the buffer. */
  recvBytes(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<{ data: Uint8Array; source: number; tag: number }> {
    return receiveWhole(this.mprobe(source, tag));
  }

  /** Send any structured-cloneable value (v8 serialisation). */
  sendObject(value: unknown, dest: number, tag = 0): Promise<Status> {
    this.world.check('sendObject');
    let bytes: Uint8Array;
    try {
      bytes = serialize(value);
    } catch (e) {
      throw new RailcommError(ErrorCode.INVALID_ARG, `sendObject: the value cannot be serialised (${(e as Error).message}); send plain data, typed arrays, Maps, Sets, Dates`, { cause: e });
    }
    return this.send(bytes, dest, tag);
  }

  recvObject(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<{ value: unknown; source: number; tag: number }> {
    return this.recvBytes(source, tag).then((m) => ({ value: m.source === PROC_NULL ? undefined : deserialize(m.data, () => `recvObject: the ${m.data.length}-byte message from rank ${m.source} with tag ${m.tag}`), source: m.source, tag: m.tag }));
  }

  /** A buffer in railcomm's shared pool; large sends from it need no staging copy. */
  alloc(bytes: number): Uint8Array {
    this.world.check('alloc');
    checkByteCount(bytes, 'alloc');
    try {
      // Large ones live in a segment peers on this host map (shm): their large sends are read once, no handshake.
      return this.world.ctx.allocShared(bytes) ?? new Uint8Array(new SharedArrayBuffer(bytes));
    } catch (e) {
      throw allocFailed('alloc', bytes, e);
    }
  }
}

/** recvBytes after its matched probe: a buffer of the message's size, and the message received into it. */
async function receiveWhole(probed: Promise<Message>): Promise<{ data: Uint8Array; source: number; tag: number }> {
  const msg = await probed;
  const data = new Uint8Array(msg.bytes);
  const st = await msg.recv(data);
  return { data, source: st.source, tag: st.tag };
}

/** sendrecv's completion: the send's failure cancels the receive (it must not fill rbuf later). */
async function bothDone(s: Request, r: Request): Promise<Status> {
  try {
    await s.wait();
  } catch (e) {
    r.cancel();
    throw e;
  }
  return r.wait();
}
