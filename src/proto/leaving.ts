// Leaving, the point-to-point side: a rank's finalize (what waits unmatched
// is refused or dropped and reported, every peer gets a BYE after its last
// message), a peer's BYE (receives that only it could match fail), and
// collective contexts broken by a member's failure (what waits fails, the
// other members are told with a REVOKE). MPI makes an unreceived message the
// user's error: it is reported, never a hang. Split from p2p.ts, which keeps
// the BYE and REVOKE handlers (their place in a peer's ordered stream).

import { RailcommError, ErrorCode } from '../core/errors.js';
import { nextSeq } from '../core/seq.js';
import { KIND_PROBE, type Request } from './request.js';
import type { ProtoEndpoint } from './endpoint.js';
import type { ControlSender } from './control.js';
import type { ContextState } from './context-state.js';
import type { P2pHost } from './p2p.js';
import {
  AM_BYE, AM_CTS, AM_REVOKE, BYE_HDR, CTS_HDR, CTS_REFUSED_BROKEN, CTS_REFUSED_FINALIZED, EAGER_OVERHEAD, REVOKE_HDR,
  encodeCts, encodeRevoke, encodeU32,
} from './wire.js';

/** What leaving needs from the point-to-point protocol. */
export interface LeavingHost {
  readonly host: P2pHost;
  readonly contexts: ReadonlyMap<number, ContextState>;
  readonly out: ControlSender;
  /** An eager message's credit goes back to its sender. */
  returnCredit(ep: ProtoEndpoint, n: number): void;
  /** Rendezvous receives that can no longer complete fail with err. */
  failAllRecvs(err: RailcommError): void;
}

export class Leaving {
  private readonly p: LeavingHost;
  /** This rank called finalize(): no receive will be posted any more. */
  finalizing = false;
  /** Messages dropped unreceived, per sender, not reported yet: [count, eager bytes]. */
  private readonly dropped = new Map<number, [number, number]>();
  /** Every message dropped unreceived (--stats). */
  droppedUnreceived = 0;

  constructor(p: LeavingHost) {
    this.p = p;
  }

  /**
   * Start finalizing: what is queued unmatched can never be received, so
   * its senders are told (a rendezvous send fails there instead of waiting
   * for ever) and its eager bytes dropped; every peer is told with a BYE, so
   * its receives from us that nothing we sent matches fail.
   */
  beginFinalize(): void {
    if (this.finalizing) return;
    this.finalizing = true;
    for (const st of this.p.contexts.values()) this.dropUnmatched(st, false);
    this.reportDiscarded('finalize(): ');
    const host = this.p.host;
    for (const ep of host.allEndpoints()) {
      if (ep.rank === host.worldRank || ep.failure !== null) continue;
      ep.byeOwed = true;
      this.sendBye(ep);
    }
  }

  /** A BYE once nothing waits in front of it: it takes the next sequence number, after every message sent. */
  sendBye(ep: ProtoEndpoint): void {
    if (ep.lane === null || ep.failure !== null || ep.hasPending) return;
    ep.byeOwed = false;
    encodeU32(this.p.out.view, ep.txSeq);
    ep.txSeq = nextSeq(ep.txSeq);
    this.p.out.send(ep, AM_BYE, BYE_HDR);
  }

  /** Everything the peer sent before it finalized has arrived: receives waiting for it alone can never match. */
  onBye(ep: ProtoEndpoint): void {
    ep.peerFinalized = true;
    for (const st of this.p.contexts.values()) {
      if (st.group === null) continue;
      const commRank = st.group.indexOf(ep.rank);
      if (commRank < 0) continue;
      for (const r of st.queues.postedFor(commRank, false)) { st.queues.removePosted(r); r.fail(finalizedBeforeSending(ep.rank, r)); }
      st.probes = st.probes.filter((p) => {
        if (p.matchSrc !== commRank) return true;
        p.fail(finalizedBeforeSending(ep.rank, p));
        return false;
      });
    }
  }

  /** Mark a collective context broken and fail what waits in it; false if it already was. */
  breakContext(st: ContextState, err: RailcommError): boolean {
    if (st.broken !== null) return false;
    st.broken = err;
    for (const r of [...st.queues.allPosted()]) { st.queues.removePosted(r); r.fail(err); }
    this.dropUnmatched(st, true);
    return true;
  }

  /** Tell the other members of a collective context that `failed` is gone (they may not know it). */
  revoke(ctx: number, st: ContextState, failed: number): void {
    const host = this.p.host;
    for (const w of st.group!) {
      if (w === failed || w === host.worldRank) continue;
      const m = host.endpointFor(w);
      if (m.failure !== null || m.peerFinalized) continue;
      encodeRevoke(this.p.out.view, ctx, failed);
      this.p.out.send(m, AM_REVOKE, REVOKE_HDR);
    }
  }

  /**
   * Empty a context's unexpected queue that no receive can ever take
   * (finalizing, or a broken collective): rendezvous senders are refused,
   * eager bytes dropped (counted per peer for the warning).
   */
  private dropUnmatched(st: ContextState, broken: boolean): void {
    for (const u of [...st.queues.allArrived()]) {
      st.queues.removeArrived(u);
      // (One being fetched was asked for already: dropped once it is here, rndv/prefetch.ts.)
      if (u.fetching !== null) this.countDropped(u.ep.rank, u.size);
      else if (u.data === null) this.refuse(u.ep, u.sendId, broken);
      else this.discard(u.ep, u.size);
    }
  }

  /** Refuse a rendezvous announcement: the sender fails that send instead of waiting. */
  refuse(ep: ProtoEndpoint, sendId: number, broken: boolean): void {
    encodeCts(this.p.out.view, sendId, 0, broken ? CTS_REFUSED_BROKEN : CTS_REFUSED_FINALIZED, ep.takeOwed());
    this.p.out.send(ep, AM_CTS, CTS_HDR);
    this.countDropped(ep.rank, 0);
  }

  /** Drop an eager message no receive can take; its credit goes back. */
  discard(ep: ProtoEndpoint, len: number): void {
    this.p.returnCredit(ep, len + EAGER_OVERHEAD);
    this.countDropped(ep.rank, len);
  }

  private countDropped(rank: number, bytes: number): void {
    this.droppedUnreceived++;
    const d = this.dropped.get(rank);
    if (d === undefined) this.dropped.set(rank, [1, bytes]);
    else { d[0]++; d[1] += bytes; }
    // Reported in batches: a flood during finalize is one line per sender, not one per message.
    if (this.dropped.size === 1 && d === undefined && !this.finalizing) queueMicrotask(() => this.reportDiscarded(''));
  }

  private reportDiscarded(prefix: string): void {
    for (const [rank, [n, bytes]] of this.dropped) {
      this.p.host.log.warn(`${prefix}${n} message${n === 1 ? '' : 's'} from rank ${rank} (${bytes} eager bytes) will never be received: ` +
        `this rank ${this.finalizing ? 'finalized' : 'left a broken collective'} first; every message must be received before finalize() (MPI)`);
    }
    this.dropped.clear();
  }

  /** finalize(): receives and probes that can no longer complete fail with err; what was dropped meanwhile is reported. */
  failAllWaiting(err: RailcommError): void {
    this.reportDiscarded('finalize(): ');
    for (const st of this.p.contexts.values()) {
      for (const r of [...st.queues.allPosted()]) { st.queues.removePosted(r); r.fail(err); }
      for (const p of st.probes) p.fail(err);
      st.probes = [];
    }
    this.p.failAllRecvs(err);
  }
}

/** A receive or probe that waited for a peer which finalized without sending it a match. */
export function finalizedBeforeSending(rank: number, r: Request): RailcommError {
  return new RailcommError(ErrorCode.PEER_FAILED, `rank ${rank} called finalize() without sending a message that matches this ${r.kind === KIND_PROBE ? 'probe' : 'receive'} (tag ${r.matchTag < 0 ? 'ANY_TAG' : r.matchTag})`);
}
