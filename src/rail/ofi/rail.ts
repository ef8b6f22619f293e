// The ofi rail: one libfabric RDM endpoint on one provider/domain. Frames land
// in pre-posted receive slots and are delivered from the completion queue,
// which this rail reads when progress polls it; asleep, it waits on the
// queue's wait fd through libuv where the provider has one, else looks at the
// queue on a timer. Peers on this host are watched for liveness; memory is
// registered for native one-sided operations (rma.ts's keys).

import type { Device, Rail, RailCaps, RailEnv, RailMemory, RailRemoteKey, RxFrame } from '../api.js';
import { SummedTrafficCounters } from '../../core/counters.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { jobOf, rankOf } from '../../core/ids.js';
import { hostKey } from '../../core/host.js';
import { cleanupOnSignal } from '../../core/signal-cleanup.js';
import { readValue } from '../../proto/rma/apply.js';
import { FI_OP, FI_TYPE, nativeAtomicCount, packKey, unpackKey, type OfiRemoteKey } from './rma.js';
import { EV_DONE, EV_ERROR, EV_RECV, EVENT_WORDS, type OfiBinding, type OfiInfo, type OfiOpened } from './native.js';
import { OfiEndpoint } from './endpoint.js';
import { OpTable } from './ops.js';
import { RX_COUNT, nativeAtomicsOff, ofiCaps, openEndpoint, remoteWakes, whyNotReach } from './open.js';
import { describeOfiRail } from './describe.js';
import { closeMayCrash } from './close-hazard.js';
import { completionError, controlFrame } from './peers.js';
import {
  AM_CONTROL, FRAME_HEAD, HEAD_PAYLOAD_MAX, HEADER_MAX, decodeAddress, encodeAddress,
  headAm, headFlags, headHdrLen, headJob, headPayLen, headRank, headSeq,
} from './wire.js';

const EVENTS = 256;
/** How often peers on this host are checked for life (ms). */
const LIVENESS_MS = 500;
/**
 * Timer looks at a queue without a wait fd (shm, udp;ofi_rxd): every ms for
 * the first 200 looks of quiet, then every 4 ms, after about 10 s every 16 ms:
 * a first message after a long sleep waits up to that, and a rank waiting 5 s
 * in recv used 3% of a core with 1 ms looks for a second, about 1% with these.
 * A look that finds peers' one-sided operations served (the binding's
 * remoteActivity) is not quiet: shm's fast writes leave a notice in this
 * rank's queue of 1024 entries, and a writer finding it full waits for the
 * next look (1,024 puts take about 2 ms, less than a 4 ms look apart).
 */
const tickDelay = (idle: number): number => (idle < 200 ? 1 : idle < 2500 ? 4 : 16);

export class OfiRail implements Rail {
  readonly name: string;
  readonly component = 'ofi';
  readonly device: Device;
  readonly caps: RailCaps;
  readonly counters = new SummedTrafficCounters(() => this.endpoints.values());
  readonly env: RailEnv;
  readonly b: OfiBinding;
  readonly info: OfiInfo;
  readonly provider: string;
  /**
   * Rendezvous by remote read (proto/rndv/rdma.ts), on every provider. On
   * sockets it was off for a while: one CI run under load hung with a read
   * outstanding, and the same suite later hung streaming too, from a shut TCP
   * receive window (env-defaults.ts FI_SOCKETS_MAX_BUF_SZ). With that fixed,
   * reads passed the stress that found it (bench/ofi/sockets-stress.sh,
   * bench/RESULTS.md).
   */
  readonly rendezvousReads = true;
  readonly h: number;
  readonly opened: OfiOpened;
  readonly rank: number;
  readonly job: number;
  readonly ops = new OpTable<OfiEndpoint>();
  /** Frame head and AM header of the send being made, and a payload of up to HEAD_PAYLOAD_MAX bytes behind them (sendHead). */
  readonly head: Uint8Array = new Uint8Array(FRAME_HEAD + HEADER_MAX + HEAD_PAYLOAD_MAX);
  readonly headView = new DataView(this.head.buffer);
  /** A fetching atomic's operand and compare value. */
  readonly operand: Uint8Array = new Uint8Array(16);
  readonly operandView = new DataView(this.operand.buffer);
  /** Whether sends may gather the payload from the caller's memory (iov limit >= 2). */
  readonly gathers: boolean;
  readonly blocked = new Set<OfiEndpoint>();
  /** Endpoints whose sends found no connection, until their retry is due (endpoint.ts awaitConnection). */
  readonly retrying = new Set<OfiEndpoint>();
  private readonly endpoints = new Map<bigint, OfiEndpoint>();
  private readonly byRank: Array<OfiEndpoint | undefined> = [];
  private readonly events = new Int32Array((EVENTS + 1) * EVENT_WORDS);
  /** Per receive slot: 1 while its frame waits for its turn (the binding posts it again once cleared). */
  private readonly hold = new Int32Array(RX_COUNT);
  /**
   * Per sender rank: the seq of the frame to deliver next, and frames that came
   * early (seq -> slot and length, kept in their slot; or a copy of the frame,
   * once half the slots are held: the posted buffers must not run out, and
   * rendezvous messages of tcp;ofi_rxm complete far out of order).
   */
  private readonly rxNext: number[] = [];
  private readonly early: Array<Map<number, number | Buffer> | undefined> = [];
  private heldSlots = 0;
  private readonly rxBuf: Buffer;
  private readonly rxView: DataView;
  private readonly rx: RxFrame;
  private readonly myAddress: string;
  private readonly host: string;
  private readonly liveness: NodeJS.Timeout;
  private readonly waits: boolean;
  private wake: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private idleTicks = 0;
  private polling = false;
  private closed = false;
  /** How many times the last poll read the queue in its first call (poll(reads) stops early once something came). */
  readsMade = 0;
  /** close() began: peers going away now is expected (their errors are not worth a warning). */
  closing = false;
  /** finalize() began (beginFinalize): a peer that cannot be reached now finalized first. */
  finalizing = false;
  /** Whether this provider's close can crash once a peer was dropped mid-operation (close-hazard.ts); and whether one was. */
  private readonly closeHazard: boolean;
  private leftOpen = false;
  /** Peers' one-sided operations served here wake this rank's progress (open.ts remoteWakes). */
  private readonly remoteWakes: boolean;
  /** Native atomics refused on this provider, emulated there (open.ts nativeAtomicsOff says which and why). */
  private readonly atomicsOff: boolean;
  private readonly valueWords = new Int32Array(2);
  private readonly valueView = new DataView(this.valueWords.buffer);

  constructor(device: Device, env: RailEnv, b: OfiBinding, info: OfiInfo) {
    this.device = device;
    this.env = env;
    this.b = b;
    this.info = info;
    this.provider = info.provider;
    this.name = `ofi:${info.provider}/${info.domain}`;
    this.rank = rankOf(env.self);
    this.job = jobOf(env.self);
    this.host = hostKey();
    this.opened = openEndpoint(env, b, info, this.rank);
    this.h = this.opened.handle;
    b.setEvents(this.h, this.events, this.hold);
    b.setHead(this.h, this.head);
    this.rxBuf = Buffer.from(this.opened.rx);
    this.rxView = new DataView(this.opened.rx);
    this.rx = { buf: this.rxBuf, view: this.rxView, hdrOff: 0, hdrLen: 0, payOff: 0, payLen: 0, placed: null, words: null };
    this.gathers = this.opened.iovLimit >= 2;
    this.atomicsOff = nativeAtomicsOff(info.provider, this.opened);
    this.remoteWakes = remoteWakes(info.provider);
    this.closeHazard = closeMayCrash(info.provider, b.runtime ?? b.headers);
    this.caps = ofiCaps(this.opened, info, device, this.gathers);
    this.myAddress = encodeAddress({ provider: info.provider, domain: info.domain, host: this.host, pid: process.pid, name: this.opened.name, ctx: this.opened.context });
    if (this.opened.contexts > 1) env.log.debug(`ofi (${this.provider}): context ${this.opened.context} of a scalable endpoint of ${this.opened.contexts}, shared with this process's other thread ranks`);
    this.waits = b.watch(this.h, this.onReadable);
    if (!this.waits) env.log.debug(`ofi (${this.provider}): its completion queue has no wait fd (${env.params.ofiWaitFd ? 'the provider offers none' : 'RAILCOMM_OFI_WAIT_FD=0'}): an idle rank looks at it on a timer (every 1-16 ms)`);
    this.liveness = setInterval(this.everyHalfSecond, LIVENESS_MS);
    this.liveness.unref();
    this.sweep();
    // A rank that exits without finalize, or is stopped by a signal, still closes
    // its endpoint: the shm provider's /dev/shm file goes with it.
    process.once('exit', this.onExit);
    this.releaseOnSignal = cleanupOnSignal(this.onExit);
  }

  private readonly releaseOnSignal: () => void;

  private readonly onExit = (): void => {
    if (this.closed) return;
    this.closed = true;
    this.b.close(this.h);
  };

  address(): string {
    return this.myAddress;
  }

  /** Why this rank's endpoint cannot reach a peer's address (open.ts whyNotReach), or null. */
  whyNot(address: string): string | null {
    return whyNotReach(decodeAddress(address), this.provider, this.opened.contexts, this.host, this.device.kind);
  }

  /** fi_getname bytes of a peer's address and its context (-1: a plain endpoint), if it is one of this provider's. */
  nameOf(address: string): { name: Buffer; ctx: number } | null {
    const a = decodeAddress(address);
    return a !== null && a.provider === this.provider ? { name: a.name, ctx: a.ctx } : null;
  }

  endpoint(peer: bigint, address: string): OfiEndpoint {
    let ep = this.endpoints.get(peer);
    if (ep === undefined) {
      const a = decodeAddress(address);
      ep = new OfiEndpoint(this, peer, address, a !== null && a.host === this.host && a.pid !== process.pid ? a.pid : 0);
      this.endpoints.set(peer, ep);
      if (jobOf(peer) === this.job) this.byRank[rankOf(peer)] = ep;
    } else if (ep.address === '' && address !== '') {
      ep.address = address;
    }
    return ep;
  }

  // ---- progress -----------------------------------------------------------

  /**
   * Read the completion queue: deliver frames, complete and fail operations;
   * true if anything happened. reads > 1: while it is empty, the binding reads
   * it again up to that many times before it returns (a synchronous receive's spin).
   */
  poll(reads = 1): boolean {
    this.readsMade = reads;
    if (this.closed || this.polling) return false;
    this.polling = true;
    let any = false;
    try {
      const b = this.b, ev = this.events;
      for (let round = 0; round < 4; round++) {
        const n = b.poll(this.h, round === 0 ? reads : 1);
        if (round === 0 && n >= 0) this.readsMade = ev[6]!;
        // Peers' one-sided operations served in this poll (where they need this rank's progress,
        // open.ts remoteWakes): activity too, so a waiting rank keeps polling while they flow.
        if (ev[7] !== 0) any = true;
        if (n <= 0) {
          if (ev[1]! > 0) any = true;
          break;
        }
        any = true;
        const freed = ev[1]!;
        for (let i = 0; i < n; i++) {
          const o = (i + 1) * EVENT_WORDS;
          const type = ev[o]!;
          if (type === EV_RECV) this.received(ev[o + 1]!, ev[o + 2]!);
          else if (type === EV_DONE) this.ops.complete(ev[o + 1]! >>> 0, ev[o + 4] === 6 || ev[o + 4] === 7 ? this.decode(o) : null);
          else if (type === EV_ERROR) completionError(this, ev, o, this.endpoints);
        }
        if (freed > 0 && this.blocked.size > 0 && this.roomy()) this.redrive();
        if (n < EVENTS) break;
      }
      if (!any && this.blocked.size > 0 && ev[2] === 0 && this.roomy()) this.redrive();
      if (this.retrying.size > 0) this.retryDue();
      if (this.ops.draining.size > 0) this.ops.drainDue(Date.now());
    } finally {
      this.polling = false;
    }
    if (any) this.idleTicks = 0;
    return any;
  }

  /** A fetching atomic's old value, from event words o+2, o+3, for the engine's type. */
  private decode(o: number): (type: number) => number | bigint {
    this.valueWords[0] = this.events[o + 2]!;
    this.valueWords[1] = this.events[o + 3]!;
    return this.readValue;
  }
  private readonly readValue = (type: number): number | bigint => readValue(this.valueView, 0, type);

  /** Both transmit pools have an entry free (a blocked sender may need either). */
  private roomy(): boolean {
    return this.events[4]! > 0 && this.events[5]! > 0;
  }

  /**
   * For the hang report: operations the provider has not completed, frames
   * kept out of order, senders waiting for room or for a connection (by
   * rank), as of the last poll; null when there is none of these.
   */
  describeState(): string | null {
    return describeOfiRail({
      name: this.name, events: this.events, opsWaiting: this.ops.count, badFrames: this.counters.badFrames,
      early: this.early, rxNext: this.rxNext, heldSlots: this.heldSlots, blocked: this.blocked, retrying: this.retrying,
    });
  }

  /** Senders whose connection retry is due: the layer above tries them again. */
  private retryDue(): void {
    const now = Date.now();
    for (const ep of this.retrying) if (ep.retryAt <= now) ep.retryNow();
  }

  /** Senders that found no room: the layer above tries them again. */
  private redrive(): void {
    for (const ep of [...this.blocked]) {
      this.blocked.delete(ep);
      if (!ep.failed) this.env.upcalls.ready(ep);
    }
  }

  /** A frame arrived in slot: delivered now if it is its sender's next, else kept in its slot until its turn. */
  private received(slot: number, len: number): void {
    const off = slot * this.opened.rxSlot;
    const v = this.rxView;
    if (len < FRAME_HEAD) { this.counters.badFrames++; return; }
    if (headJob(v, off) !== this.job) { this.counters.refused++; return; }
    const rank = headRank(v, off);
    const seq = headSeq(v, off);
    const next = this.rxNext[rank] ?? 0;
    if (seq !== next) {
      // Early (within half the sequence space ahead): kept; else a stale duplicate.
      if (((seq - next) >>> 0) >= 0x80000000) { this.counters.badFrames++; return; }
      let m = this.early[rank];
      if (m === undefined) { m = new Map(); this.early[rank] = m; }
      if (this.heldSlots < RX_COUNT >> 1) {
        m.set(seq, len * RX_COUNT + slot);
        this.hold[slot] = 1;
        this.heldSlots++;
      } else {
        m.set(seq, Buffer.from(this.rxBuf.subarray(off, off + len)));
      }
      return;
    }
    this.rxNext[rank] = (next + 1) >>> 0;
    this.frame(this.rxBuf, v, off, len, rank);
    const m = this.early[rank];
    if (m === undefined || m.size === 0) return;
    for (let s = (next + 1) >>> 0, k = m.get(s); k !== undefined; s = (s + 1) >>> 0, k = m.get(s)) {
      m.delete(s);
      this.rxNext[rank] = (s + 1) >>> 0;
      if (typeof k === 'number') {
        const held = k % RX_COUNT;
        this.hold[held] = 0;
        this.heldSlots--;
        const at = held * this.opened.rxSlot;
        // The slot must still hold that frame: a provider that wrote into a slot it did not own is caught here, not delivered.
        if (headSeq(v, at) !== s || headRank(v, at) !== rank) {
          this.broken(rank, `receive slot ${held} no longer holds its frame #${s} (the provider wrote into a slot it did not own)`);
          return;
        }
        this.frame(this.rxBuf, v, at, Math.floor(k / RX_COUNT), rank);
      } else {
        this.frame(k, new DataView(k.buffer, k.byteOffset, k.byteLength), 0, k.byteLength, rank);
      }
    }
  }

  /** A sender's stream is broken (a malformed frame, a kept frame changed in its slot): the peer fails, never a wrong delivery; from a peer never heard, only counted. */
  private broken(rank: number, why: string): void {
    const ep = this.byRank[rank];
    if (ep !== undefined && ep.heard) ep.abort(why);
    else this.counters.badFrames++;
  }

  /** Deliver one frame (at off of buf: a receive slot, or a copy of an early one), its turn come. */
  private frame(buf: Buffer, v: DataView, off: number, len: number, rank: number): void {
    const am = headAm(v, off);
    const hdrLen = headHdrLen(v, off);
    const payLen = headPayLen(v, off);
    if (FRAME_HEAD + hdrLen + payLen !== len || hdrLen > HEADER_MAX) {
      this.broken(rank, `a frame of ${len} bytes says it holds ${hdrLen} header and ${payLen} payload bytes`);
      return;
    }
    const ep = this.byRank[rank];
    if (am === AM_CONTROL) { controlFrame(this, this.host, ep, rank, buf, headFlags(v, off), off + FRAME_HEAD, hdrLen, payLen); return; }
    if (ep === undefined || !ep.heard || ep.failed) { this.counters.refused++; return; }
    const h = this.env.upcalls.am[am];
    if (h === undefined) { ep.abort(`unknown active message id ${am}`); return; }
    const rx = this.rx;
    if (rx.buf !== buf) { rx.buf = buf; rx.view = v; }
    rx.hdrOff = off + FRAME_HEAD; rx.hdrLen = hdrLen;
    rx.payOff = rx.hdrOff + hdrLen; rx.payLen = payLen;
    if (rx.placed !== null) rx.placed = null;
    ep.counters.msgsRecv++; ep.counters.bytesRecv += payLen;
    if (h.place !== undefined && payLen > 0) {
      const target = h.place(ep, rx);
      if (target === null) return;
      buf.copy(target, 0, rx.payOff, rx.payOff + payLen);
      rx.placed = target;
    }
    h.recv(ep, rx);
  }

  /** Progress polled us and found nothing: hand nothing back (no rings here). */
  settle(): void { /* nothing consumed is held */ }

  /**
   * Arm a wake-up: the completion queue's wait fd (fi_trywait first), else a
   * timer that looks at the queue (backing off while nothing comes). false
   * when something already waits.
   */
  sleep(wake: () => void): boolean {
    if (this.closed) return true;
    this.wake = wake;
    if (this.waits) {
      if (this.b.arm(this.h)) return true;
      this.wake = null;
      return false;
    }
    if (this.b.pending(this.h) > 0) { this.wake = null; return false; }
    if (this.timer === null) {
      this.timer = setTimeout(this.tick, tickDelay(this.idleTicks));
      this.timer.unref();
    }
    return true;
  }

  /**
   * A synchronous call's wait (comm/sync.ts), which runs no event loop: at
   * most ms on the queue's wait fd, or a short sleep where there is none.
   */
  blockSync(ms: number): void {
    if (!this.closed) this.b.block(this.h, ms);
  }

  private readonly onReadable = (): void => {
    const w = this.wake;
    this.wake = null;
    if (w !== null) w();
  };

  private readonly tick = (): void => {
    this.timer = null;
    if (this.closed || this.wake === null) return;
    this.idleTicks++;
    // Looking is progress too: a provider that needs it (manual progress) serves one-sided operations here.
    // Peers' one-sided operations served by the look: progress takes over where they need this
    // rank's progress (open.ts remoteWakes); on shm the look just comes again in a ms.
    if (this.b.pending(this.h) > 0) { this.idleTicks = 0; this.onReadable(); return; }
    if (this.b.remoteActivity(this.h)) {
      this.idleTicks = 0;
      if (this.remoteWakes) { this.onReadable(); return; }
    }
    this.timer = setTimeout(this.tick, tickDelay(this.idleTicks));
    this.timer.unref();
  };

  /** finalize() began: from now on a peer that refuses a send finalized first (endpoint.ts sendFailed). */
  beginFinalize(): void {
    this.finalizing = true;
  }

  // ---- peers ----------------------------------------------------------------

  /** A peer was added: libfabric may open descriptors for it soon (connections), which children must not inherit. */
  newPeer(): void {
    this.sweep();
    setTimeout(() => this.sweep(), 100).unref();
    setTimeout(() => this.sweep(), 1000).unref();
  }

  private sweep(): void {
    if (!this.closed) this.b.cloexec();
  }

  forget(ep: OfiEndpoint): void {
    this.blocked.delete(ep);
    // Frames it sent that wait for their turn will never have it: their slots go back.
    if (jobOf(ep.peer) !== this.job) return;
    const m = this.early[rankOf(ep.peer)];
    if (m === undefined) return;
    for (const k of m.values()) if (typeof k === 'number') { this.hold[k % RX_COUNT] = 0; this.heldSlots--; }
    m.clear();
  }

  /**
   * A peer was dropped (endpoint.ts fail): its connection may hold an
   * operation half done for good. Where closing it then can crash inside
   * libfabric (close-hazard.ts), the endpoint is left open at close, to the
   * process's exit.
   */
  peerDropped(): void {
    // Peers gone while this rank finalizes (they finalized first) leave no half-done read.
    if (!this.closeHazard || this.leftOpen || this.closed || this.closing) return;
    this.leftOpen = true;
    this.b.abandonAtClose(this.h);
    this.env.log.debug(`ofi (${this.provider}): a peer was dropped; this endpoint stays open at close, to the process's exit (libfabric ${this.b.runtime ?? this.b.headers} can crash closing a connection with a read half received)`);
  }

  /** A rank the wire-up service saw die: its operations fail (the layer above fails its requests). */
  peerDied(peer: bigint): void {
    const ep = this.endpoints.get(peer);
    if (ep !== undefined && !ep.failed) ep.fail('the wire-up service saw it die', false);
  }

  private readonly everyHalfSecond = (): void => {
    this.checkPeers();
    // A rank with nothing outstanding has no wake-up armed here, and the
    // providers act on what peers sent only when this rank reads its queue:
    // a peer's connection request, its messages and its BYE would wait,
    // while the peer's finalize waits 2 s for them and then closes (libfabric
    // 1.17's shm then crashes this rank's first read of the queue, mapping
    // the region of a peer that is gone; tcp;ofi_rxm and udp;ofi_rxd lost
    // the message). So an idle rank reads it every LIVENESS_MS too.
    if (this.wake === null && !this.closed) while (this.poll()) { /* deliver */ }
  };

  private checkPeers(): void {
    for (const ep of this.endpoints.values()) {
      if (ep.alive()) continue;
      // What it sent before it died is delivered first.
      while (this.poll()) { /* drain */ }
      ep.fail(`its process ${ep.pid} is gone`, false);
    }
  }

  // ---- native one-sided operations ----------------------------------------------

  /** Max elements of one native atomic for the engine's type and op (0: emulate). */
  atomicCount(type: number, op: number, fetch: boolean): number {
    return this.atomicsOff ? 0 : nativeAtomicCount(this.opened.atomics, type, op, fetch);
  }

  fiType(type: number): number { return FI_TYPE[type]!; }
  fiOp(op: number): number { return FI_OP[op]!; }

  registerMemory(bytes: Uint8Array): RailMemory | null {
    if (this.closed || bytes.byteLength === 0) return null;
    const reg = this.b.regMr(this.h, bytes);
    return {
      packed: packKey(reg.base, reg.key, this.opened.virtAddr),
      release: () => { if (!this.closed) this.b.deregMr(this.h, reg.id); },
    };
  }

  unpackRemoteKey(packed: Uint8Array): OfiRemoteKey | null {
    const k = this.closed ? null : unpackKey(packed);
    return k === null ? null : { rail: this.name, index: this.b.remote(this.h, k.base, k.key), base: k.base };
  }

  dropRemoteKey(key: RailRemoteKey): void {
    if (!this.closed) this.b.dropRemote(this.h, (key as OfiRemoteKey).index);
  }

  /** An errno from the binding, as text. */
  fiError(r: number): string {
    return `${this.b.strerror(-r)} (libfabric error ${-r})`;
  }

  // ---- close -------------------------------------------------------------------

  /**
   * Finalize: every peer we talked to hears BYE, operations still in flight
   * finish (or 2 s pass), then the binding closes endpoint, queues,
   * registrations, domain and fabric in that order.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closing = true;
    // BYEs that came in first: those peers are gone, and a BYE to them might never complete (udp;ofi_rxd waits for an ack).
    while (this.poll()) { /* deliver */ }
    await Promise.all([...this.endpoints.values()].map((ep) => ep.close()));
    const deadline = Date.now() + 2000;
    while (this.b.inFlight(this.h) > 0 && Date.now() < deadline) {
      this.poll();
      await new Promise((r) => setImmediate(r));
    }
    this.closed = true;
    process.off('exit', this.onExit);
    this.releaseOnSignal();
    clearInterval(this.liveness);
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null; }
    this.wake = null;
    this.ops.failAll(new RailcommError(ErrorCode.FINALIZED, `ofi (${this.provider}): the rail closed with this operation in flight`));
    this.b.close(this.h);
  }
}

export { sepContexts } from './open.js';
export type { OfiRemoteKey } from './rma.js';
