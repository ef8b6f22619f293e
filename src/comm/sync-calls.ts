// A communicator's synchronous point-to-point calls (comm.sendSync,
// recvSync, sendrecvSync) and the blocking point-to-point its synchronous
// collectives run on: MPI's blocking semantics at the call, no Request, no
// promise and no Status object per call on the fast paths (statuses repeat
// per source while tag and size do), the same fast paths as the async calls
// (so messages from one sender keep their order whichever call sent them).

import { asBytes } from '../core/bytes.js';
import { ANY_SOURCE, PROC_NULL } from '../proto/matching.js';
import { QUEUED } from '../proto/at-call.js';
import type { Request, Status } from '../proto/request.js';
import type { Communicator } from './communicator.js';
import type { World } from './world.js';
import type { PointToPoint } from '../proto/p2p.js';
import type { Progress } from '../proto/progress.js';
import { checkPeer, checkTag } from './checks.js';
import { NULL_STATUS } from './proc-null.js';
import { SyncEngine, StatusCache } from './sync.js';
import type { ScratchPool } from './coll/engine.js';
import type { SyncComm } from './coll/sync-p2p.js';
import { SyncCollectives } from './coll/sync-coll.js';
import { SIG_WORDS } from './coll/check.js';

/** What a communicator hands its synchronous calls (its private parts, once). */
export interface SyncHost {
  readonly comm: Communicator;
  readonly group: readonly number[];
  readonly p2pCtx: number;
  readonly collCtx: number;
  readonly scratch: ScratchPool;
  readonly checking: boolean;
  startSend(bytes: Uint8Array, dest: number, tag: number, ctx: number): Request;
  startRecv(bytes: Uint8Array, source: number, tag: number, ctx: number): Request;
  nextTag(): number;
  nextCheckedCall(): number;
  /** Nonblocking collectives of this communicator over point-to-point started and not settled. */
  collsInFlight(): number;
}

export class SyncCalls {
  private readonly h: SyncHost;
  private readonly engine: SyncEngine;
  // What every call reads, held here: each hop's path from a received frame to
  // the next send runs through these, and a chain of loads is time on it.
  private readonly world: World;
  private readonly p2p: PointToPoint;
  private readonly progress: Progress;
  private readonly group: readonly number[];
  private readonly rank: number;
  private readonly size: number;
  private readonly p2pCtx: number;
  private readonly sent = new StatusCache();
  private readonly received = new StatusCache();
  /** Every member's lane checked (ANY_SOURCE receives). */
  private allOk = false;
  readonly coll: SyncCollectives;

  constructor(h: SyncHost) {
    this.h = h;
    const comm = h.comm;
    this.engine = SyncEngine.of(comm.world);
    this.world = comm.world;
    this.p2p = comm.world.ctx.p2p;
    this.progress = comm.world.ctx.progress;
    this.group = h.group;
    this.rank = comm.rank;
    this.size = comm.size;
    this.p2pCtx = h.p2pCtx;
    let agree: Float64Array | null = null;
    this.coll = new SyncCollectives({
      rank: comm.rank, size: comm.size, world: comm.world, planner: comm.planner, scratch: h.scratch, checking: h.checking,
      get agreeBuffer() { return (agree ??= new Float64Array(SIG_WORDS * comm.size)); },
      nextTag: () => h.nextTag(),
      nextCheckedCall: () => h.nextCheckedCall(),
      comm: (tag, what) => this.collComm(tag, what),
      needAll: (what, asyncCall) => this.needAll(what, asyncCall),
      collsInFlight: () => h.collsInFlight(),
    });
  }

  private needAll(what: string, asyncCall: string): void {
    if (this.allOk) return;
    this.engine.needAll(this.h.group, what, asyncCall);
    this.allOk = true;
  }

  sendSync(buf: ArrayBufferView, dest: number, tag: number): Status {
    this.world.check('sendSync');
    const bytes = asBytes(buf, 'send buffer');
    checkPeer(dest, this.size, 'destination', false);
    checkTag(tag, false);
    if (dest === PROC_NULL) return NULL_STATUS;
    const w = this.group[dest]!;
    this.engine.need(w, dest, 'sendSync', 'await comm.send()');
    this.sendOn(bytes, w, dest, tag, this.p2pCtx, 'sendSync');
    return this.sent.get(this.rank, tag, bytes.length);
  }

  recvSync(buf: ArrayBufferView, source: number, tag: number): Status {
    this.world.check('recvSync');
    const bytes = asBytes(buf, 'receive buffer');
    checkPeer(source, this.size, 'source', true);
    checkTag(tag, true);
    if (source === PROC_NULL) return NULL_STATUS;
    return this.recvOn(bytes, source, tag, this.p2pCtx, 'recvSync');
  }

  sendrecvSync(sbuf: ArrayBufferView, dest: number, sendTag: number, rbuf: ArrayBufferView, source: number, recvTag: number): Status {
    const h = this.h, comm = h.comm;
    comm.world.check('sendrecvSync');
    const sb = asBytes(sbuf, 'send buffer');
    checkPeer(dest, comm.size, 'destination', false);
    checkTag(sendTag, false);
    const rb = asBytes(rbuf, 'receive buffer');
    checkPeer(source, comm.size, 'source', true);
    checkTag(recvTag, true);
    if (dest === PROC_NULL) return source === PROC_NULL ? NULL_STATUS : this.recvOn(rb, source, recvTag, h.p2pCtx, 'sendrecvSync');
    const w = h.group[dest]!;
    this.engine.need(w, dest, 'sendrecvSync', 'await comm.sendrecv()');
    // Both sides' lanes before anything is sent: a refused call sends nothing.
    if (source === ANY_SOURCE) this.needAll('sendrecvSync', 'await comm.sendrecv()');
    else if (source !== PROC_NULL) this.engine.need(h.group[source]!, source, 'sendrecvSync', 'await comm.sendrecv()');
    // The send starts without waiting: a large one moves while this rank waits for its receive.
    const ctx = comm.world.ctx;
    let s: Request | null = null;
    if (ctx.p2p.sendNow(sb, w, h.p2pCtx, comm.rank, sendTag)) ctx.progress.completedAtOnce();
    else s = h.startSend(sb, dest, sendTag, h.p2pCtx);
    let st: Status;
    try {
      st = source === PROC_NULL ? NULL_STATUS : this.recvOn(rb, source, recvTag, h.p2pCtx, 'sendrecvSync');
    } catch (e) {
      // The receive failed: the send still completes before the call returns (sbuf is the caller's again), as sendrecv's does.
      if (s !== null) try { this.engine.waitRequest(s, w, null, 'sendrecvSync', dest, sendTag); } catch { /* the receive's error is the one to report */ }
      throw e;
    }
    if (s !== null) this.engine.waitRequest(s, w, null, 'sendrecvSync', dest, sendTag);
    return st;
  }

  /** A blocking send of bytes to world rank w (communicator rank dest) on context ctxId. */
  private sendOn(bytes: Uint8Array, w: number, dest: number, tag: number, ctxId: number, what: string): void {
    if (this.p2p.sendNow(bytes, w, ctxId, this.rank, tag)) { this.progress.completedAtOnce(); return; }
    this.engine.waitRequest(this.h.startSend(bytes, dest, tag, ctxId), w, null, what, dest, tag);
  }

  /** A blocking receive on context ctxId: at the call when the message is (or comes) in order, else through a Request. */
  private recvOn(bytes: Uint8Array, source: number, tag: number, ctxId: number, what: string): Status {
    const atCall = this.p2p.atCall;
    let w = -1;
    if (source !== ANY_SOURCE) {
      w = this.group[source]!;
      this.engine.need(w, source, what, 'await comm.recv()');
    } else this.needAll(what, 'await comm.recv()');
    let got = atCall.recvNow(bytes, ctxId, source, tag);
    if (got === -1) got = this.engine.recvWait(bytes, ctxId, source, tag, w, this.group, what);
    if (got === QUEUED) {
      const r = this.h.startRecv(bytes, source, tag, ctxId);
      this.engine.waitRequest(r, w, source === ANY_SOURCE ? this.group : null, what, source, tag);
      return r.test()!;
    }
    this.progress.completedAtOnce();
    return this.received.get(atCall.gotSource, atCall.gotTag, got);
  }

  /** Blocking point-to-point on the collective context for one collective call (its tag). */
  private collComm(tag: number, what: string): SyncComm {
    const h = this.h;
    return {
      rank: h.comm.rank,
      size: h.comm.size,
      scratch: h.scratch,
      send: (b, peer) => { this.sendOn(b, h.group[peer]!, peer, tag, h.collCtx, what); },
      recv: (b, peer) => { this.recvOn(b, peer, tag, h.collCtx, what); },
      isend: (b, peer) => h.startSend(b, peer, tag, h.collCtx),
      wait: (r) => { this.engine.waitRequest(r, -1, h.group, what); },
    };
  }
}
