// The Communicator: MPI-style point-to-point on a group of ranks (DESIGN
// section 4). It checks arguments, translates communicator ranks to world
// ranks, and hands the work to the protocol layer.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { asBytes } from '../core/bytes.js';
import { ANY_SOURCE, ANY_TAG } from '../proto/matching.js';
import { Request, KIND_PROBE, KIND_RECV, KIND_SEND, type Status } from '../proto/request.js';
import type { Unexpected } from '../proto/p2p.js';
import { checkRank, checkSignal, checkTag } from './checks.js';
import { Message, type ClaimedReceiver } from './message.js';
import { deserialize, serialize, type World } from './world.js';

export interface RequestOptions {
  signal?: AbortSignal;
}

const EMPTY = new Uint8Array(0);

export class Communicator implements ClaimedReceiver {
  readonly rank: number;
  readonly size: number;
  /** @internal */ readonly world: World;
  /** World rank of each rank of this communicator. */
  private readonly group: readonly number[];
  private readonly p2pCtx: number;
  private readonly collCtx: number;
  private collSeq = 0;

  /** @internal */
  constructor(world: World, group: readonly number[], rank: number, p2pCtx: number, collCtx: number) {
    this.world = world;
    this.group = group;
    this.rank = rank;
    this.size = group.length;
    this.p2pCtx = p2pCtx;
    this.collCtx = collCtx;
    world.ctx.p2p.registerContext(p2pCtx, group);
    world.ctx.p2p.registerContext(collCtx, group);
  }

  // ---- point-to-point ----------------------------------------------------

  /** Send buf to dest. Resolves once buf may be reused (eager: at once; large: once the receiver took it). */
  send(buf: ArrayBufferView, dest: number, tag = 0): Promise<Status> {
    return this.isend(buf, dest, tag).wait();
  }

  /** Receive into buf from source (or ANY_SOURCE) with tag (or ANY_TAG). */
  recv(buf: ArrayBufferView, source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<Status> {
    return this.irecv(buf, source, tag).wait();
  }

  isend(buf: ArrayBufferView, dest: number, tag = 0, opts?: RequestOptions): Request {
    this.world.check('isend');
    const bytes = asBytes(buf, 'send buffer');
    checkRank(dest, this.size, 'destination', false);
    checkTag(tag, false);
    const signal = checkSignal(opts);
    return this.startSend(bytes, dest, tag, this.p2pCtx, signal);
  }

  irecv(buf: ArrayBufferView, source: number = ANY_SOURCE, tag: number = ANY_TAG, opts?: RequestOptions): Request {
    this.world.check('irecv');
    const bytes = asBytes(buf, 'receive buffer');
    checkRank(source, this.size, 'source', true);
    checkTag(tag, true);
    const signal = checkSignal(opts);
    return this.startRecv(bytes, source, tag, this.p2pCtx, signal);
  }

  private startSend(bytes: Uint8Array, dest: number, tag: number, ctx: number, signal: AbortSignal | null): Request {
    const r = new Request(KIND_SEND, bytes);
    r.ctx = ctx;
    r.source = this.rank;
    r.tag = tag;
    this.world.track(r);
    if (signal !== null) r.bindSignal(signal);
    this.world.ctx.p2p.isend(r, this.group[dest]!);
    return r;
  }

  private startRecv(bytes: Uint8Array, source: number, tag: number, ctx: number, signal: AbortSignal | null): Request {
    const r = new Request(KIND_RECV, bytes);
    r.ctx = ctx;
    r.matchSrc = source;
    r.matchTag = tag;
    this.world.track(r);
    this.world.ctx.p2p.irecv(r, source === ANY_SOURCE ? -1 : this.group[source]!);
    if (signal !== null) r.bindSignal(signal);
    return r;
  }

  /** Wait until a message matching (source, tag) is queued; it stays queued. */
  async probe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<Status> {
    const p = this.startProbe(source, tag, false, 'probe');
    return p.wait();
  }

  /** The Status of a queued message matching (source, tag), or undefined. */
  iprobe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Status | undefined {
    this.world.check('iprobe');
    checkRank(source, this.size, 'source', true);
    checkTag(tag, true);
    const u = this.world.ctx.p2p.peek(this.p2pCtx, source, tag);
    return u === null ? undefined : { source: u.src, tag: u.tag, bytes: u.size };
  }

  /** Matched probe: wait for a message and take it out of matching; receive it with msg.recv(buf). */
  async mprobe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<Message> {
    const p = this.startProbe(source, tag, true, 'mprobe');
    await p.wait();
    const u = p.found as Unexpected;
    return new Message(this, u.src, u.tag, u.size, u);
  }

  /** Matched probe without waiting: a Message, or undefined when nothing matches now. */
  improbe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Message | undefined {
    this.world.check('improbe');
    checkRank(source, this.size, 'source', true);
    checkTag(tag, true);
    const p2p = this.world.ctx.p2p;
    const u = p2p.peek(this.p2pCtx, source, tag);
    if (u === null) return undefined;
    p2p.claim(this.p2pCtx, u);
    return new Message(this, u.src, u.tag, u.size, u);
  }

  private startProbe(source: number, tag: number, claim: boolean, what: string): Request {
    this.world.check(what);
    checkRank(source, this.size, 'source', true);
    checkTag(tag, true);
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
    const r = new Request(KIND_RECV, buf);
    r.ctx = this.p2pCtx;
    this.world.track(r);
    this.world.ctx.p2p.recvClaimed(r, token as Unexpected);
    return r.wait();
  }

  /** Receive a message of any size: railcomm allocates the buffer. */
  async recvBytes(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<{ data: Uint8Array; source: number; tag: number }> {
    const msg = await this.mprobe(source, tag);
    const data = new Uint8Array(msg.bytes);
    const st = await msg.recv(data);
    return { data, source: st.source, tag: st.tag };
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

  async recvObject(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<{ value: unknown; source: number; tag: number }> {
    const m = await this.recvBytes(source, tag);
    return { value: deserialize(m.data), source: m.source, tag: m.tag };
  }

  /** A buffer in railcomm's shared pool; large sends from it need no staging copy. */
  alloc(bytes: number): Uint8Array {
    this.world.check('alloc');
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RailcommError(ErrorCode.INVALID_ARG, `alloc(${String(bytes)}): expected a byte count >= 0`);
    return new Uint8Array(new SharedArrayBuffer(bytes));
  }

  // ---- collectives (the collectives issue replaces this) -----------------

  /** Every rank waits until all ranks of the communicator have entered (dissemination algorithm). */
  async barrier(): Promise<void> {
    this.world.check('barrier');
    const seq = this.collSeq++;
    const n = this.size;
    const token = EMPTY;
    for (let k = 1, round = 0; k < n; k <<= 1, round++) {
      const tag = ((seq & 0x3ffffff) << 5 | round) & 0x7fffffff;
      const to = (this.rank + k) % n;
      const from = (this.rank - k + n) % n;
      const rr = this.startRecv(token, from, tag, this.collCtx, null);
      const sr = this.startSend(token, to, tag, this.collCtx, null);
      await sr.wait();
      await rr.wait();
    }
  }

  /** Complete outstanding sends, close every rail, release every handle. Idempotent. */
  finalize(): Promise<void> {
    return this.world.finalize();
  }

  /** Counters per rail and per peer. */
  stats(): Record<string, unknown> {
    return this.world.ctx.stats();
  }
}

export { ANY_SOURCE, ANY_TAG, KIND_RECV };
