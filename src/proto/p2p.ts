// Tagged point-to-point over active messages: short / eager / zero-copy eager
// datapaths chosen by size per lane, matching with MPI ordering, eager credits
// that bound the unexpected queue, probes, cancellation and the failure of
// everything that waits on a dead peer. Rendezvous (and its single-copy
// variants) lives in rndv/; the blocking receive's fast paths in at-call.ts;
// finalize, a peer's BYE and broken collectives in leaving.ts; what waits,
// for the hang report, in p2p-waits.ts; a failed peer's waits in p2p-failed.ts;
// probes in probes.ts; frames that came before their turn in early.ts.

import type { AmHandler, RailEndpoint, RxFrame } from '../rail/api.js';
import { NO_RESOURCE } from '../rail/api.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import type { HangWait } from './hang.js';
import { nextSeq } from '../core/seq.js';
import { Request, KIND_PROBE, KIND_SEND, PENDING, type Canceller } from './request.js';
import { ProtoEndpoint, type PendingOp } from './endpoint.js';
import type { AmRegistry } from './am.js';
import { ControlSender } from './control.js';
import { Unexpected } from './unexpected.js';
import { Rendezvous, truncated } from './rndv/rendezvous.js';
import { SingleCopy } from './rndv/single-copy.js';
import { Prefetch } from './rndv/prefetch.js';
import { DeviceRndv } from './rndv/device.js';
import { AM_RTS_DEV } from './cuda-wire.js';
import { AM_RTS_RDMA, AM_RTS_RGET, AM_RTS_SEG, rgetAddress, rtsSegmentId, rtsSegmentOffset } from './ipc-wire.js';
import { RdmaRndv } from './rndv/rdma.js';
import {
  AM_BYE, AM_CREDIT, AM_EAGER, AM_REVOKE, AM_RTS, CREDIT_HDR, EAGER_HDR, EAGER_OVERHEAD,
  encodeMatchHeader, encodeU32, hdrCredits, hdrCtx, hdrSeq, hdrSrc, hdrTag, readU32, revokeCtx, revokeFailed, rtsSendId, rtsSize,
} from './wire.js';
import { newContextState, type ContextState } from './context-state.js';
import { Leaving, finalizedBeforeSending } from './leaving.js';
import { cancelProbe, checkProbes, probeSender, startProbe } from './probes.js';
import { copyOf, singleLane, stashEarly } from './early.js';
import { AtCall, copyOut, EMPTY_BUF } from './at-call.js';
import { collectUnexpected, collectWaits, waitsOn as waitsOnPeer, type P2pWaitsView } from './p2p-waits.js';
import type { P2pHost } from './p2p-host.js';
import { failPeer } from './p2p-failed.js';
import { ReachOut } from './reach-out.js';
import { p2pSnapshot, type P2pSnapshot } from './p2p-stats.js';

export { Unexpected };

export type { P2pHost } from './p2p-host.js';

const KEEP_FOR_CREDIT = 4; // explicit CREDIT once a quarter of the window is owed

/** eagerNow's answers. */
const EAGER_SENT = 0, EAGER_NO_CREDIT = 1, EAGER_FULL = 2, EAGER_FAILED = 3;

export class PointToPoint implements Canceller {
  private readonly host: P2pHost;
  private readonly contexts = new Map<number, ContextState>();
  private readonly out = new ControlSender();
  private readonly scratch = this.out.scratch;
  private readonly scratchView = this.out.view;
  private readonly reach: ReachOut;
  readonly rndv: Rendezvous;
  private readonly singleCopy: SingleCopy;
  private readonly prefetch: Prefetch;
  /** Device (GPU) memory: rendezvous by CUDA IPC, direct copy or pinned staging (rndv/device.ts). */
  readonly device: DeviceRndv;
  /** Rendezvous by remote read on rails with native one-sided operations (rndv/rdma.ts). */
  readonly rdma: RdmaRndv;
  /** Finalize, a peer's BYE, collective contexts a failure broke (leaving.ts). */
  private readonly leaving: Leaving;
  /** The blocking receive at the call (its fast paths: at-call.ts). */
  readonly atCall: AtCall = new AtCall(this);
  /** What p2p-waits.ts reads for the hang report and keepalive checks. */
  private readonly waitsView: P2pWaitsView;
  /** Counted protocol errors from peers (bad ids, out-of-range data). */
  protocolErrors = 0;
  private readonly startSendFn = (ep: ProtoEndpoint, r: Request): PendingOp | null => this.startSend(ep, r);

  constructor(host: P2pHost, am: AmRegistry) {
    this.host = host;
    const lied = { peerLied: (rep: RailEndpoint, why: string): void => this.peerLied(rep, why) };
    this.rndv = new Rendezvous({ endpointFor: (w) => host.endpointFor(w), ...lied }, am, this.out);
    this.singleCopy = new SingleCopy({ get singleCopy() { return host.singleCopy; }, ...lied }, am, this.out, this.rndv);
    this.rndv.singleCopy = this.singleCopy;
    this.device = new DeviceRndv({ params: host.params, atClose: (fn) => host.atClose?.(fn), ...lied }, am, this.out, this.rndv);
    this.singleCopy.device = this.device;
    this.rdma = new RdmaRndv({ get rdmaMin() { return host.params?.rdmaRgetMin ?? 0; }, ...lied }, this.out, this.rndv);
    this.singleCopy.rdma = this.rdma;
    this.prefetch = new Prefetch(this);
    this.reach = new ReachOut(host, (ep) => {
      encodeU32(this.scratchView, ep.takeOwed());
      this.out.send(ep, AM_CREDIT, CREDIT_HDR);
    });
    this.leaving = new Leaving({
      host, contexts: this.contexts, out: this.out,
      returnCredit: (ep, n) => this.returnCredit(ep, n),
      failAllRecvs: (err) => this.rndv.failAllRecvs(err),
    });
    this.waitsView = { host, contexts: this.contexts, rndv: this.rndv };
    am.register(AM_EAGER, 'eager', this.matchedHandler(AM_EAGER));
    am.register(AM_RTS, 'rts', this.matchedHandler(AM_RTS));
    am.register(AM_CREDIT, 'credit', this.creditHandler);
    am.register(AM_RTS_RGET, 'rts-rget', this.matchedHandler(AM_RTS_RGET));
    am.register(AM_RTS_SEG, 'rts-seg', this.matchedHandler(AM_RTS_SEG));
    am.register(AM_RTS_DEV, 'rts-dev', this.matchedHandler(AM_RTS_DEV));
    am.register(AM_RTS_RDMA, 'rts-rdma', this.matchedHandler(AM_RTS_RDMA));
    am.register(AM_BYE, 'bye', this.byeHandler);
    am.register(AM_REVOKE, 'revoke', this.revokeHandler);
  }

  registerContext(ctx: number, group: readonly number[], collective: boolean): void {
    const st = this.state(ctx);
    st.group = group;
    st.collective = collective;
  }

  /** @internal (AtCallHost) */
  state(ctx: number): ContextState {
    // Consecutive messages mostly share a context: one Map lookup saved per message.
    if (ctx === this.lastCtx) return this.lastState!;
    let s = this.contexts.get(ctx);
    if (s === undefined) {
      s = newContextState();
      this.contexts.set(ctx, s);
    }
    this.lastCtx = ctx;
    this.lastState = s;
    return s;
  }
  private lastCtx = -1;
  private lastState: ContextState | null = null;

  // ---- sending -----------------------------------------------------------

  /** Start a send of req.buf to world rank `dest`; req.source/tag/ctx are set by the caller. */
  isend(req: Request, dest: number): void {
    const ep = this.host.endpointFor(dest);
    if (ep.failure !== null) { req.fail(ep.failure); return; }
    req.peerWorld = dest;
    // The size at the call: what the send completes with, and what a send that starts later checks its buffer still holds.
    req.bytes = req.buf.length;
    if (ep.lane === null || ep.hasPending) {
      // It must queue (peer not resolved yet, or sends ahead of it wait for
      // the rail): an eager-sized send still completes now, from a copy.
      ep.deferSend(req.bytes <= this.host.eagerLimit && req.dev === null && ep.mayHold(req.bytes) ? this.detachEager(req, ep) : req);
      return;
    }
    const blocked = this.startSend(ep, req);
    if (blocked !== null) ep.pushOp(blocked);
  }

  /**
   * The blocking send's fast path: an eager-sized message that the lane takes
   * at once is sent and complete here, with no Request, no loop hold and no
   * progress pass (each cost more than the ring write on the shared-memory
   * rails, where this also takes zero-copy sizes: th.now). Returns false,
   * having changed nothing, whenever it must go the general way: no lane yet,
   * sends queued ahead, a failed peer, a larger size, no eager credits left,
   * or a rail with no room.
   */
  sendNow(buf: Uint8Array, dest: number, ctx: number, source: number, tag: number): boolean {
    const ep = this.host.endpointFor(dest);
    if (ep.lane === null || ep.failure !== null || ep.hasPending || buf.length > ep.th.now) return false;
    return this.eagerNow(ep, buf, ctx, source, tag) === EAGER_SENT;
  }

  /**
   * An eager-sized message onto the lane (there is one) as a copy, if the
   * receiver has credit for it and the rail takes it now: EAGER_SENT, with
   * its sequence number and credit spent. Otherwise nothing changed:
   * EAGER_NO_CREDIT, or EAGER_FULL when the rail had no room.
   */
  private eagerNow(ep: ProtoEndpoint, buf: Uint8Array, ctx: number, source: number, tag: number): number {
    const len = buf.length;
    const cost = len + EAGER_OVERHEAD;
    // Empty messages always go: they cost the receiver a queue entry only.
    if (len !== 0 && (len > ep.th.zcopy || ep.credits < cost)) return EAGER_NO_CREDIT;
    const owed = ep.owed;
    encodeMatchHeader(this.scratchView, ctx, source, tag, ep.txSeq, ep.takeOwed());
    if (ep.lane!.sendCopy(AM_EAGER, this.scratch, EAGER_HDR, len > 0 ? buf : null) === NO_RESOURCE) {
      ep.owed = owed;
      return EAGER_FULL;
    }
    // The rail failed the peer while taking it (a ring it could not create):
    // the message did not go, and the send must say so, not complete.
    if (ep.failure !== null) return EAGER_FAILED;
    ep.txSeq = nextSeq(ep.txSeq);
    ep.credits -= cost;
    return EAGER_SENT;
  }

  /** Put the first piece of a send on the lane; returns the op that found no resource, if any. */
  private startSend(ep: ProtoEndpoint, userReq: Request): PendingOp | null {
    if (userReq.state !== PENDING) return null;
    // Device memory always announces (rndv/device.ts): its buf holds no bytes to send eagerly.
    if (userReq.dev !== null) { const seq = ep.txSeq; ep.txSeq = nextSeq(seq); return this.rndv.announce(ep, userReq, seq); }
    let req = userReq;
    const lane = ep.lane!;
    const len = req.buf.length;
    if (len !== req.bytes) { detachedBeforeStart(req, ep.rank); return null; }
    const cost = len + EAGER_OVERHEAD;
    const eager = len <= ep.th.eager ? this.eagerNow(ep, req.buf, req.ctx, req.source, req.tag) : EAGER_NO_CREDIT;
    if (eager === EAGER_SENT) {
      req.complete(req.source, req.tag, len);
      return null;
    }
    if (eager === EAGER_FAILED) { req.fail(ep.failure!); return null; }
    // The rail is full and this peer already holds all the completed sends
    // RAILCOMM_SEND_BUFFER allows: this one waits for room, not completed.
    if (eager === EAGER_FULL && !ep.mayHold(len)) return ProtoEndpoint.deferred(req);
    const seq = ep.txSeq;
    ep.txSeq = nextSeq(seq);
    const v = this.scratchView;
    if (eager === EAGER_FULL) {
      // The rail is full (a ring the receiver has not drained, a socket past
      // its high-water mark): an eager send never waits for the receiver, so
      // a tracked copy takes its place (finalize waits for it) and it completes.
      ep.credits -= cost;
      encodeMatchHeader(v, req.ctx, req.source, req.tag, seq, ep.takeOwed());
      const copy = this.detachEager(req, ep);
      return ProtoEndpoint.op(AM_EAGER, this.scratch, EAGER_HDR, len > 0 ? copy.buf : null, false, copy);
    }
    if (len > ep.th.eager && len <= ep.th.zcopy && ep.credits >= cost) {
      ep.credits -= cost;
      encodeMatchHeader(v, req.ctx, req.source, req.tag, seq, ep.takeOwed());
      req.railPending++;
      req.progressBytes = len;
      const st = lane.sendZcopy(AM_EAGER, this.scratch, EAGER_HDR, req.buf, req);
      if (st === NO_RESOURCE) return ProtoEndpoint.op(AM_EAGER, this.scratch, EAGER_HDR, req.buf, true, req);
      return null;
    }
    if (len <= ep.th.eager && ep.mayHold(len)) {
      // Out of eager credits: the receiver already holds enough of our unmatched
      // data. An eager-sized send still completes at once (it never waits for
      // the receiver): a copy of the bytes goes by rendezvous instead, unless
      // this peer holds all the copies RAILCOMM_SEND_BUFFER allows: then the
      // send itself waits for the receiver, as MPI's standard mode may.
      req = this.detachEager(req, ep);
    }
    // Rendezvous: announce, and wait for the receiver to match and ask for the
    // data, or to read it itself (RGET) when the peer agreed to (asked here first).
    return this.rndv.announce(ep, req, seq);
  }

  /**
   * Complete an eager-sized send now and return a request that carries a copy
   * of its bytes in its place (watched like the original, so finalize waits for it).
   */
  private detachEager(req: Request, ep: ProtoEndpoint): Request {
    if (req.state !== PENDING) return req;
    const len = req.buf.byteLength;
    const copy = new Request(KIND_SEND, Buffer.from(req.buf));
    copy.ctx = req.ctx; copy.source = req.source; copy.tag = req.tag; copy.peerWorld = req.peerWorld; copy.bytes = len;
    req.watcher?.track(copy);
    ep.hold(copy);
    req.complete(req.source, req.tag, len);
    return copy;
  }

  /** The lane can take sends again, or was just resolved. */
  drain(ep: ProtoEndpoint): void {
    ep.drain(this.startSendFn);
    if (ep.byeOwed) this.leaving.sendBye(ep);
  }

  // ---- receiving ---------------------------------------------------------

  /** Post a receive for (src, tag) in comm rank terms; req.ctx is set. */
  irecv(req: Request, srcWorld: number): void {
    const st = this.state(req.ctx);
    if (st.broken !== null) { req.fail(st.broken); return; }
    req.canceller = this;
    const u = st.queues.post(req);
    if (u !== null) { this.deliverTo(req, u); return; }
    if (srcWorld < 0) {
      const gone = this.reach.all(st);
      if (gone !== null) { st.queues.removePosted(req); req.fail(gone); }
      return;
    }
    // Nothing queued from it, and it can never send again: fail now.
    const ep = this.reach.outsider(srcWorld) ? this.reach.one(srcWorld) : this.host.existingEndpoint(srcWorld);
    if (ep === undefined) return;
    if (ep.failure !== null) { st.queues.removePosted(req); req.fail(ep.failure); }
    else if (ep.peerFinalized) { st.queues.removePosted(req); req.fail(finalizedBeforeSending(ep.rank, req)); }
  }

  /** A receive matched an unexpected message. */
  deliver(req: Request, u: Unexpected): void {
    this.deliverTo(req, u);
  }

  private deliverTo(req: Request, u: Unexpected): void {
    const ep = u.ep;
    if (u.data === null && this.prefetch.matched(req, u)) return;
    if (u.data !== null) {
      this.returnCredit(ep, u.size + EAGER_OVERHEAD);
      if (u.size > req.buf.byteLength) { req.fail(truncated(u.size, req.buf, u.src, u.tag)); return; }
      if (u.size > 0) req.buf.set(u.data);
      req.complete(u.src, u.tag, u.size);
      return;
    }
    this.rndv.accept(req, ep, u.sendId, u.size, u.src, u.tag, u.remote, u.segment, u.finWanted);
  }

  /** Single-copy negotiation state per peer rank (--stats): whether it reads us (tx), we read it (rx). */
  ipcStates(): Record<string, { tx: string; rx: string; tries: number; rgets: number; fallbacks: number }> {
    return this.singleCopy.states();
  }

  cancel(r: Request): boolean {
    const st = this.contexts.get(r.ctx);
    if (st === undefined) return false;
    if (r.kind === KIND_PROBE) return cancelProbe(st, r);
    return st.queues.removePosted(r);
  }

  // ---- probes ------------------------------------------------------------

  /** The unexpected message a receive (src, tag) would take now, if any. */
  peek(ctx: number, src: number, tag: number): Unexpected | null {
    return this.state(ctx).queues.findArrived(src, tag);
  }

  /** Remove a message from matching (matched probe). */
  claim(ctx: number, u: Unexpected): void {
    this.state(ctx).queues.removeArrived(u);
  }

  /** Wait for a message (src, tag); probe.found receives it, claimed when probe.claim (probes.ts). */
  waitProbe(probe: Request): void {
    const st = this.state(probe.ctx);
    const world = probeSender(st, probe);
    // From another job's rank (recvBytes and recvObject probe first): reached as a receive reaches it.
    if (world === undefined) {
      const gone = this.reach.all(st);
      if (gone !== null && st.queues.findArrived(probe.matchSrc, probe.matchTag) === null) { probe.fail(gone); return; }
    } else if (this.reach.outsider(world)) this.reach.one(world);
    startProbe(st, probe, world !== undefined ? this.host.existingEndpoint(world) : undefined, this);
  }

  /** Receive a message taken out of matching by a matched probe. */
  recvClaimed(req: Request, u: Unexpected): void {
    this.deliverTo(req, u);
  }

  // ---- active-message handlers --------------------------------------------

  private owner(rep: RailEndpoint): ProtoEndpoint {
    return rep.owner as ProtoEndpoint;
  }

  /**
   * EAGER and RTS carry a match header and a per-peer sequence number: check
   * the order (a message that overtook another waits), then match.
   */
  private matchedHandler(am: number): AmHandler {
    return {
      recv: (rep, rx) => {
        const ep = this.owner(rep);
        const bad = this.checkMatchHeader(ep, rx.view, rx.hdrOff);
        if (bad !== null) { this.peerLied(rep, bad); return; }
        ep.credits += hdrCredits(rx.view, rx.hdrOff);
        if (!ep.rx.inOrder(hdrSeq(rx.view, rx.hdrOff))) {
          // An ordered rail never reorders: a gap means a broken stream, not a late message (one lane).
          if (rep.rail.caps.ordered && singleLane(ep)) { this.peerLied(rep, `sequence number ${hdrSeq(rx.view, rx.hdrOff)}, expected ${ep.rx.expected}`); return; }
          this.early(ep, am, rx, hdrSeq(rx.view, rx.hdrOff));
          return;
        }
        this.onMatched(ep, am, rx.view, rx.hdrOff, rx.buf, rx.words, rx.payOff, rx.payLen);
        if (ep.rx.waiting > 0) this.replayEarly(ep);
      },
    };
  }

  /** Why a match header from this peer cannot be true, or null. */
  private checkMatchHeader(ep: ProtoEndpoint, v: DataView, o: number): string | null {
    const src = hdrSrc(v, o);
    const group = this.state(hdrCtx(v, o)).group;
    if (group !== null ? group[src] !== ep.rank : src >= this.host.worldSize) {
      return `message claims source rank ${src} on context ${hdrCtx(v, o)}, but comes from world rank ${ep.rank}`;
    }
    return null;
  }

  /** A peer sent something that cannot be true: count it and drop its connection (DESIGN section 8). */
  peerLied(rep: RailEndpoint, why: string): void {
    this.protocolErrors++;
    rep.abort(why);
  }

  private onMatched(ep: ProtoEndpoint, am: number, v: DataView, o: number, buf: Buffer, words: Int32Array | null, payOff: number, payLen: number): void {
    if (am === AM_BYE) this.leaving.onBye(ep);
    else if (am === AM_EAGER) this.onEager(ep, hdrCtx(v, o), hdrSrc(v, o), hdrTag(v, o), buf, words, payOff, payLen);
    else if (am === AM_RTS_DEV) this.onRts(ep, hdrCtx(v, o), hdrSrc(v, o), hdrTag(v, o), rtsSendId(v, o), rtsSize(v, o), 0n, this.device.arrivedRts(ep, v, o, rtsSendId(v, o)));
    else if (am === AM_RTS_RDMA) this.onRts(ep, hdrCtx(v, o), hdrSrc(v, o), hdrTag(v, o), rtsSendId(v, o), rtsSize(v, o), 0n, this.rdma.arrivedRts(ep, v, o, rtsSendId(v, o)));
    else if (am === AM_RTS_SEG) this.onRts(ep, hdrCtx(v, o), hdrSrc(v, o), hdrTag(v, o), rtsSendId(v, o), rtsSize(v, o), BigInt(rtsSegmentOffset(v, o)), rtsSegmentId(v, o));
    else this.onRts(ep, hdrCtx(v, o), hdrSrc(v, o), hdrTag(v, o), rtsSendId(v, o), rtsSize(v, o), am === AM_RTS_RGET ? rgetAddress(v, o) : 0n, -1);
  }

  private onEager(ep: ProtoEndpoint, ctx: number, src: number, tag: number, buf: Buffer, words: Int32Array | null, off: number, len: number): void {
    const st = this.state(ctx);
    const r = st.queues.matchPosted(src, tag);
    if (r !== null) {
      this.returnCredit(ep, len + EAGER_OVERHEAD);
      if (len > r.buf.length) { r.fail(truncated(len, r.buf, src, tag)); return; }
      copyOut(ep, buf, words, off, len, r.buf);
      r.complete(src, tag, len);
      return;
    }
    if (this.atCall.buf !== null && this.atCall.offer(ep, ctx, src, tag, buf, words, off, len)) return;
    if (this.leaving.finalizing || st.broken !== null) { this.leaving.discard(ep, len); return; }
    const u = new Unexpected(ep, src, tag, copyOf(buf, off, len), len, 0);
    st.queues.pushArrived(u);
    if (st.probes.length > 0) checkProbes(st, u);
  }

  private onRts(ep: ProtoEndpoint, ctx: number, src: number, tag: number, sendId: number, size: number, remote: bigint, segment: number): void {
    const st = this.state(ctx);
    const r = st.queues.matchPosted(src, tag);
    const finWanted = ep.laneRx !== null && ep.laneRx.delivering;
    if (r !== null) { this.rndv.accept(r, ep, sendId, size, src, tag, remote, segment, finWanted); return; }
    // A rendezvous the receive waiting at the call matches: that receive is posted and takes it from the queue.
    if (this.atCall.buf !== null) this.atCall.closeFor(ctx, src, tag);
    if (this.leaving.finalizing || st.broken !== null) { this.leaving.refuse(ep, sendId, st.broken !== null); return; }
    const u = new Unexpected(ep, src, tag, null, size, sendId);
    u.remote = remote;
    u.segment = segment;
    u.finWanted = finWanted;
    st.queues.pushArrived(u);
    if (st.probes.length > 0) checkProbes(st, u);
    if (u.list !== null) this.prefetch.offer(ep, u, this.host.eagerLimit);
  }

  private early(ep: ProtoEndpoint, am: number, rx: RxFrame, seq: number): void {
    if (!stashEarly(ep, am, rx, seq)) this.protocolErrors++;
  }

  private replayEarly(ep: ProtoEndpoint): void {
    for (let m = ep.rx.next(); m !== undefined; m = ep.rx.next()) {
      const v = new DataView(m.hdr.buffer, m.hdr.byteOffset, m.hdr.byteLength);
      const p = m.payload ?? EMPTY_BUF;
      this.onMatched(ep, m.am, v, 0, p, null, 0, p.length);
    }
  }

  private readonly creditHandler: AmHandler = {
    recv: (rep, rx) => {
      this.owner(rep).credits += readU32(rx.view, rx.hdrOff);
    },
  };

  returnCredit(ep: ProtoEndpoint, n: number): void {
    ep.owed += n;
    // Queued small announcements from this peer first: fetched with this credit, they need no round trip each.
    if (ep.toFetchHead < ep.toFetch.length) this.prefetch.run(ep);
    if (ep.owed * KEEP_FOR_CREDIT >= ep.creditLimit && ep.lane !== null) {
      encodeU32(this.scratchView, ep.takeOwed());
      this.out.send(ep, AM_CREDIT, CREDIT_HDR);
    }
  }

  // ---- failures ----------------------------------------------------------

  /** The peer finalized and no BYE will come (peer-failures.ts peerFinalized): as if it had. */
  finalizedWithoutBye(ep: ProtoEndpoint): void {
    this.leaving.onBye(ep);
  }

  /**
   * A peer is gone. Everything that waits on it fails; when it failed (not a
   * graceful finalize), pending ANY_SOURCE receives of communicators that
   * contain it fail too.
   */
  peerFailed(ep: ProtoEndpoint, err: RailcommError, graceful: boolean): void {
    failPeer(this, this.contexts, this.leaving, ep, err, graceful);
  }

  // ---- leaving: finalize, a peer's BYE, broken collectives (leaving.ts) ----

  /** This rank called finalize(): what waits unmatched is refused or dropped, every peer gets a BYE. */
  beginFinalize(): void {
    this.leaving.beginFinalize();
  }

  /** finalize(): receives and probes that can no longer complete fail with err. */
  failAllWaiting(err: RailcommError): void {
    this.leaving.failAllWaiting(err);
  }

  private readonly byeHandler: AmHandler = {
    recv: (rep, rx) => {
      const ep = this.owner(rep);
      const seq = readU32(rx.view, rx.hdrOff);
      if (!ep.rx.inOrder(seq)) {
        if (rep.rail.caps.ordered && singleLane(ep)) { this.peerLied(rep, `BYE with sequence number ${seq}, expected ${ep.rx.expected}`); return; }
        this.early(ep, AM_BYE, rx, seq);
        return;
      }
      this.leaving.onBye(ep);
      if (ep.rx.waiting > 0) this.replayEarly(ep);
    },
  };

  private readonly revokeHandler: AmHandler = {
    recv: (rep, rx) => {
      const from = this.owner(rep).rank;
      const ctx = revokeCtx(rx.view, rx.hdrOff);
      const failed = revokeFailed(rx.view, rx.hdrOff);
      if (failed >= this.host.worldSize) { this.peerLied(rep, `revoke names rank ${failed}, beyond the job`); return; }
      const st = this.state(ctx);
      this.leaving.breakContext(st, new RailcommError(ErrorCode.PEER_FAILED,
        `rank ${failed} failed (reported by rank ${from}): a collective on this communicator cannot finish`));
    },
  };

  // ---- what waits (p2p-waits.ts) ---------------------------------------------


  /** What this rank waits for, each with the world rank it depends on (hang report; rare). */
  waits(out: HangWait[]): void {
    collectWaits(this.waitsView, out);
  }

  /** Messages that arrived and wait for a receive (hang report, after every rank's own waits; rare). */
  unexpectedWaits(out: HangWait[]): void {
    collectUnexpected(this.waitsView, out);
  }

  /** Whether this rank waits on the peer (rails' keepalive checks; rare). */
  waitsOn(ep: ProtoEndpoint): boolean {
    return waitsOnPeer(this.waitsView, ep);
  }

  /** Counts for `railcomm info`, stats and hang reports. */
  snapshot(): P2pSnapshot {
    return p2pSnapshot(this, this.contexts, this.singleCopy);
  }
}

/** A send that started after the call (its peer was being connected, or earlier sends waited) found its buffer detached or resized. */
function detachedBeforeStart(req: Request, world: number): void {
  req.fail(new RailcommError(ErrorCode.INVALID_ARG, `the send buffer was detached or resized before its ${req.bytes}-byte message (tag ${req.tag}) to world rank ${world} could start; nothing was sent`));
}
