// Fetching small rendezvous messages ahead of their receives. A sender out of
// eager credits announces even small messages (RTS): the announcement is how
// the receiver may take them in any order, so no receive waits behind the
// credit. But taken one by one, each costs a round trip. So the receiver
// spends the credit its receives free on fetching queued small announcements
// (CTS into a buffer of its own, many at once) instead of returning it to the
// sender: the unexpected queue holds at most the credit limit either way, and
// a flood of small messages drains at the speed of the data, not of round trips.

import { Request, KIND_RECV, COMPLETE } from '../request.js';
import type { ProtoEndpoint } from '../endpoint.js';
import type { Unexpected } from '../unexpected.js';
import type { Rendezvous } from './rendezvous.js';
import { EAGER_OVERHEAD } from '../wire.js';

export interface PrefetchHost {
  readonly rndv: Rendezvous;
  /** Hand a message (its data now here) to the receive that matched it. */
  deliver(req: Request, u: Unexpected): void;
  /** Credit `n` bytes back (the message was dropped unreceived). */
  returnCredit(ep: ProtoEndpoint, n: number): void;
}

export class Prefetch {
  private readonly host: PrefetchHost;
  /** Announcements fetched ahead (--stats; a double from the start). */
  fetched = -0;

  constructor(host: PrefetchHost) {
    this.host = host;
  }

  /** An announcement no receive matched: fetch it when credit allows (small ones only). */
  offer(ep: ProtoEndpoint, u: Unexpected, eagerLimit: number): void {
    // Only ring announcements: single-copy ones (RGET, a segment, device memory) are read, not fetched.
    if (u.size === 0 || u.size > eagerLimit || u.remote !== 0n || u.segment !== -1) return;
    ep.toFetch.push(u);
    this.run(ep);
  }

  /** Spend what ep is owed on fetching its oldest queued announcements; the rest goes back as credit. */
  run(ep: ProtoEndpoint): void {
    const q = ep.toFetch;
    while (ep.toFetchHead < q.length) {
      const u = q[ep.toFetchHead]!;
      // Matched (its receive asked for it) or dropped since: nothing to fetch.
      if (u.list === null) { ep.toFetchHead++; continue; }
      const cost = u.size + EAGER_OVERHEAD;
      if (ep.owed < cost || ep.failure !== null) break;
      ep.toFetchHead++;
      ep.owed -= cost;
      this.fetch(ep, u);
    }
    if (ep.toFetchHead > 1024 && ep.toFetchHead * 2 > q.length) { q.splice(0, ep.toFetchHead); ep.toFetchHead = 0; }
    if (ep.toFetchHead === q.length && q.length > 0) { q.length = 0; ep.toFetchHead = 0; }
  }

  private fetch(ep: ProtoEndpoint, u: Unexpected): void {
    const buf = Buffer.allocUnsafe(u.size);
    const r = new Request(KIND_RECV, buf);
    u.fetching = buf;
    r.found = u;
    r.onSettled(this.done);
    this.fetched++;
    this.host.rndv.accept(r, ep, u.sendId, u.size, u.src, u.tag, 0n, -1, u.finWanted);
  }

  /** A receive matched u: true when u is being fetched (the receive gets it once it is here). */
  matched(req: Request, u: Unexpected): boolean {
    if (u.fetching === null) return false;
    u.waiting = req;
    return true;
  }

  /** A fetch settled: the message is now like an eager one (or its receive fails as the fetch did). */
  private readonly done = (r: Request): void => {
    const u = r.found as Unexpected;
    const buf = u.fetching!;
    u.fetching = null;
    const w = u.waiting;
    u.waiting = null;
    if (r.state !== COMPLETE) { w?.fail(r.error!); return; }
    u.data = buf;
    if (w !== null) this.host.deliver(w, u);
    // Dropped from its queue meanwhile (finalize, a broken collective): nobody will take it.
    else if (u.list === null) this.host.returnCredit(u.ep, u.size + EAGER_OVERHEAD);
  };
}
