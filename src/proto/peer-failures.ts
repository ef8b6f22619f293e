// Peers that fail, as the context learns it: a rail endpoint that failed or
// that the peer closed (one lane of several fails over to the others), a rank
// the wire-up service saw die, and who is told (protocols, watchers).

import type { Rail, RailEndpoint } from '../rail/api.js';
import type { Params } from '../core/params.js';
import type { Logger } from '../core/log.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import { endpointId, jobOf, rankOf } from '../core/ids.js';
import type { LaunchInfo } from '../boot/launch-env.js';
import { ProtoEndpoint } from './endpoint.js';
import type { PointToPoint } from './p2p.js';
import type { RmaEngine } from './rma/engine.js';
import type { Lanes } from './lanes/lanes.js';
import { MultiLane } from './lanes/multi-lane.js';
import { channels } from './observe.js';

/** What failure handling needs of the context. */
export interface FailureHost {
  readonly params: Params;
  readonly launch: LaunchInfo;
  readonly log: Logger;
  readonly rails: readonly Rail[];
  readonly lanes: Lanes;
  readonly p2p: PointToPoint;
  readonly rma: RmaEngine;
  /** How a world index reads in messages (another job's rank as job:rank). */
  nameOf(world: number): string;
}

/** How long a peer's BYE may trail the wire-up service's word that it finalized (ms). */
const BYE_WAIT_MS = 2000;

export class PeerFailures {
  private readonly host: FailureHost;
  /** The context's endpoints by world index: a failure is remembered on one made here if need be. */
  private readonly endpoints: Array<ProtoEndpoint | undefined>;
  /** Whether the context closed: its own shutdown fails peers, which is no news to warn about. */
  private readonly isClosed: () => boolean;
  private readonly watchers = new Set<(world: number) => void>();

  constructor(host: FailureHost, endpoints: Array<ProtoEndpoint | undefined>, isClosed: () => boolean) {
    this.host = host;
    this.endpoints = endpoints;
    this.isClosed = isClosed;
  }

  /** The endpoint of a peer, made without starting a lookup when it is new (only a failure to remember). */
  private unresolvedEndpoint(world: number): ProtoEndpoint {
    let ep = this.endpoints[world];
    if (ep === undefined) {
      ep = new ProtoEndpoint(world, endpointId(this.host.launch.jobId, world), this.host.params.eagerCredits, this.host.params.sendBuffer);
      this.endpoints[world] = ep;
    }
    return ep;
  }

  /** Rank `world` died (the wire-up service says so): fail everything that involves it. */
  peerLost(world: number, why: string): void {
    if (this.isClosed() || world === this.host.launch.rank || !Number.isInteger(world) || world < 0 || world >= this.host.launch.size) return;
    const ep = this.unresolvedEndpoint(world);
    // What it sent before it died may still wait in a polled rail (a ring, a
    // completion queue) this rank has not read: deliver that first, as the shm
    // rail does when it finds a peer's process gone. (A message it saw complete
    // before exiting is then received, not failed.)
    this.drainPolledRails();
    this.failEndpoint(ep, new RailcommError(ErrorCode.PEER_FAILED, `rank ${world} died: ${why}`), false);
    for (const r of this.host.rails) r.peerDied?.(ep.id);
  }

  /**
   * Rank `world` finalized (the wire-up service says so). Its BYE, sent
   * before it told the service, normally came first. If not within
   * BYE_WAIT_MS (and this rank's own event loop was not what held it back):
   * with no connection to it, nothing it sent can still come, so receives
   * from it fail as after a BYE; with one, every lane to it was lost (its BYE
   * could not travel), and it fails, instead of leaving waits on it for ever.
   */
  peerFinalized(world: number): void {
    if (this.isClosed() || world === this.host.launch.rank || !Number.isInteger(world) || world < 0 || world >= this.host.launch.size) return;
    const settled = (): boolean => {
      const ep = this.endpoints[world];
      return this.isClosed() || (ep !== undefined && (ep.peerFinalized || ep.failure !== null));
    };
    // With a connection, the BYE travels behind the peer's last messages: give a slow lane longer.
    const connected = (): boolean => { const ep = this.endpoints[world]; return ep !== undefined && ep.lane !== null; };
    const wait = (): number => (connected() ? Math.max(BYE_WAIT_MS, 2 * this.host.params.laneTimeout) : BYE_WAIT_MS);
    const since = Date.now();
    const look = (ms: number): void => {
      const due = Date.now() + ms;
      // After the timer, once this turn's I/O ran (setImmediate): a BYE read in it counts.
      setTimeout(() => setImmediate(() => {
        if (settled()) return;
        if (Date.now() - due > ms / 2) { look(wait()); return; } // this loop was held: the BYE may be just behind
        this.drainPolledRails();
        if (settled()) return;
        if (!connected()) { this.host.p2p.finalizedWithoutBye(this.unresolvedEndpoint(world)); return; }
        if (Date.now() - since < wait()) { look(wait() - (Date.now() - since)); return; } // connected meanwhile
        const why = `rank ${world} finalized ${((Date.now() - since) / 1000).toFixed(1)} s ago, but its goodbye never reached this rank: every lane to it was lost`;
        this.failEndpoint(this.endpoints[world]!, new RailcommError(ErrorCode.PEER_FAILED, why), false);
      }), ms).unref();
    };
    if (!settled()) look(wait());
  }

  /** Deliver what waits unread in the polled rails (rings, completion queues) before judging a peer. */
  private drainPolledRails(): void {
    for (const r of this.host.rails) if (r.poll !== undefined) for (let i = 0; i < 1024 && r.poll(); i++) { /* deliver what waits */ }
  }

  /** A rail endpoint failed, or its peer closed it (graceful): the RailUpcalls.failed of every rail. */
  onRailFailed(lane: RailEndpoint, err: RailcommError, graceful: boolean): void {
    let ep = lane.owner as ProtoEndpoint | null;
    if (ep === null && !graceful && jobOf(lane.peer) === this.host.launch.jobId) {
      // A rail endpoint nobody bound yet failed (the peer told the rail it
      // cannot reach us): the peer is lost to this rank unless another lane
      // already carries it.
      const world = rankOf(lane.peer);
      if (world >= this.host.launch.size || world === this.host.launch.rank) return;
      ep = this.unresolvedEndpoint(world);
      if (ep.lane === null) this.failEndpoint(ep, err, false);
      return;
    }
    if (ep === null) return;
    if (ep.lane instanceof MultiLane) {
      const m = ep.lane;
      if (m.indexOf(lane) < 0) return;
      // A lane that failed, or that the peer closed on purpose before its BYE
      // came (it gave up on that lane: no heartbeat answer in time), is lost
      // alone while others live: its traffic moves to them. A peer that
      // finalized closes them all, after its BYE.
      if (!graceful && m.laneFailed(lane, err.message)) return;
      if (graceful && !ep.peerFinalized && m.laneFailed(lane, `closed by the peer (${err.message})`, true)) {
        void lane.close().catch(() => undefined); // our half of the close: the rail forgets it, a rejoin starts afresh
        return;
      }
      if (graceful) m.laneClosed(lane);
      // The peer's state first: shutdown gives up the failed lanes' rejoin
      // attempts, whose endpoints report that here again, at once, and must
      // find the peer finalized, not take it for failed.
      this.failEndpoint(ep, graceful ? err : m.lostError(), graceful);
      this.host.lanes.forget(m);
      m.shutdown();
      return;
    }
    if (ep.lane !== lane) return;
    this.failEndpoint(ep, err, graceful);
  }

  /** The peer is lost: what waits on it fails, and whoever watches failures hears it. */
  failEndpoint(ep: ProtoEndpoint, err: RailcommError, graceful: boolean): void {
    if (ep.failure !== null) return;
    const e = graceful ? new RailcommError(ErrorCode.PEER_FAILED, `${this.host.nameOf(ep.rank)} has finalized; it takes no more messages`, { cause: err }) : err;
    ep.failure = e;
    if (!graceful && !this.isClosed()) this.host.log.warn(`peer ${this.host.nameOf(ep.rank)} failed: ${err.message}`);
    if (channels.peerFailed.hasSubscribers) channels.peerFailed.publish({ rank: ep.rank, graceful, message: e.message });
    this.host.p2p.peerFailed(ep, e, graceful);
    this.host.rma.peerFailed(ep, e);
    for (const f of [...this.watchers]) f(ep.rank);
  }

  /**
   * Call fn with the world rank of each peer that fails from now on, until
   * the returned function is called: waits that sleep outside the protocol
   * (shared-memory collectives) learn at once instead of at their next look.
   */
  watchFailures(fn: (world: number) => void): () => void {
    this.watchers.add(fn);
    return () => { this.watchers.delete(fn); };
  }
}
