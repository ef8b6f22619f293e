// The engine under the synchronous calls (comm.sendSync, recvSync,
// sendrecvSync and the sync collectives, DESIGN section 4b): they complete at
// the call, so they work only where every lane involved progresses without
// the event loop (self, tbsm, shm, and ofi, whose completion queue is read by
// a plain call), and they wait by polling those rails themselves, then
// blocking on a rail's doorbell (ofi: its queue's wait fd), never by a promise. While
// one waits it delivers whatever arrives, so outstanding async requests move
// too (their continuations run once the caller yields). It checks its peers
// itself (the rail timers need the event loop: sync-liveness.ts; the wire-up
// service's reports it peeks at on the service's socket) and says once when a wait outlasts
// RAILCOMM_HANG_TIMEOUT. Nothing here allocates per call on the fast paths.

import { RailcommError, ErrorCode } from '../core/errors.js';
import type { Context } from '../proto/context.js';
import type { ProtoEndpoint } from '../proto/endpoint.js';
import type { PolledEndpoint, Rail } from '../rail/api.js';
import { PENDING, statusOf, type Request, type Status } from '../proto/request.js';
import { QUEUED, type QueueRail } from '../proto/at-call.js';
import type { World } from './world.js';
import { PeerWatch } from './sync-liveness.js';

/** How often a waiting call checks its peers, the clock for the hang report, and the tbsm channel (ms). */
const CHECK_MS = 100;
/** One blocking wait on a rail's doorbell at most (ms): a wake lost to a race costs no more. */
const BLOCK_MS = 1;
/** Polls of every rail that make one idle step when no single ring is watched (a power of two). */
const IDLE_TURNS = 512;
/** Idle steps between clock readings while a wait spins (a power of two): when its spin budget is spent. */
const SPIN_CHECK_STEPS = 16;
/** A clock reading not taken yet (a double, as readings are: see proto/progress.ts UNSET). */
const UNSET = -Infinity;

/** A rail's doorbell, as a synchronous wait blocks on it. */
interface Bell {
  /** Announce the sleep (senders ring from now on); the count to wait on. */
  prepare(): number;
  /** Block this thread until the count moves from `seen`, or ms pass. */
  wait(seen: number, ms: number): void;
}

/** The doorbell fields the ring rails expose (rail/shared/ring.ts Doorbell; ShmRail.native). */
interface RingBell {
  readonly sab: SharedArrayBuffer;
  readonly byteOffset: number;
  prepareSleep(): number;
}

/** A rail whose peers' frames come through a completion queue (caps.syncWait 'queue': ofi), and its wait. */
interface QueueBlock {
  blockSync(ms: number): void;
}
const queueRail = (r: Rail): boolean => r.caps.syncWait === 'queue' && typeof r.blockSync === 'function';

const engines = new WeakMap<World, SyncEngine>();

/** Statuses handed out by synchronous calls, kept per source while tag and size repeat (no object per call). */
export class StatusCache {
  private readonly bySource: Status[] = [];

  get(source: number, tag: number, bytes: number): Status {
    const c = this.bySource[source];
    if (c !== undefined && c.tag === tag && c.bytes === bytes) return c;
    return (this.bySource[source] = statusOf(source, tag, bytes));
  }
}

export class SyncEngine {
  readonly ctx: Context;
  private readonly world: World;
  private readonly watch: PeerWatch;
  /** Per world rank: 0 not looked at, 1 its lane progresses without the event loop. */
  private readonly laneOk: Uint8Array;
  private readonly bells = new Map<string, Bell>();
  private readonly anyBell: Bell | null;
  private firstQueueBell: Bell | null = null;
  private readonly channels: Array<{ pollChannel(): boolean }> = [];
  /** The rails that hold frames back until a run of JavaScript ends (Rail.flush). */
  private readonly holders: Rail[] = [];
  private selfLane: { poll?(): boolean } | null = null;
  /** The current wait (synchronous calls never nest): when it began (its first idle step), its next check, whether its hang was said. */
  private since = UNSET;
  private nextCheck = UNSET;
  private hangSaid = false;
  private turns = 0;
  /** Idle steps of the current wait. */
  private steps = 0;
  /** Whether the current wait's spin budget (RAILCOMM_SPIN_US) is spent: it blocks. */
  private blocking = false;
  private readonly spinMs: number;
  /** What this wait found dead (world rank and why), or null. */
  private lost: string | null = null;

  static of(world: World): SyncEngine {
    let e = engines.get(world);
    if (e === undefined) { e = new SyncEngine(world); engines.set(world, e); }
    return e;
  }

  private constructor(world: World) {
    this.world = world;
    this.ctx = world.ctx;
    const ctx = this.ctx;
    this.watch = new PeerWatch(ctx);
    this.laneOk = new Uint8Array(ctx.launch.size);
    this.spinMs = ctx.progress.spinBudgetMs;
    for (const r of ctx.rails) {
      const bell = (r as { bell?: RingBell }).bell;
      if (bell !== undefined && (r.component === 'tbsm' || r.component === 'shm')) {
        const native = (r as { native?: { futexWait(sab: SharedArrayBuffer, off: number, expected: number, us: number): void } }).native;
        this.bells.set(r.component, r.component === 'shm' && native !== undefined ? futexBell(bell, native) : threadBell(bell));
      }
      // A completion queue's bell is that rail's own (ofi: one per provider), named by the rail.
      if (queueRail(r)) { const b = queueBell(r as QueueBlock); this.bells.set(r.name, b); this.firstQueueBell ??= b; }
      if (typeof r.flush === 'function') this.holders.push(r);
      const ch = r as unknown as { pollChannel?(): boolean };
      if (typeof ch.pollChannel === 'function') this.channels.push(ch as { pollChannel(): boolean });
    }
    this.anyBell = this.bells.get('shm') ?? this.bells.get('tbsm') ?? this.firstQueueBell;
  }

  // ---- lanes -----------------------------------------------------------------

  /**
   * World rank w is reached over a lane that progresses without the event
   * loop (binding one now where the launch says which: sync calls cannot wait
   * for the wire-up lookup), or ERR_NO_RAIL saying which rail and what to use.
   */
  need(w: number, commRank: number, what: string, asyncCall: string): void {
    if (this.laneOk[w] === 1) return;
    const ep = this.ctx.bindLocal(w);
    const lane = ep.lane;
    if (lane === null) {
      if (ep.failure !== null) throw ep.failure;
      const rails = this.ctx.rails.map((r) => r.name);
      const queued = this.ctx.rails.find(queueRail);
      if (queued !== undefined) {
        throw new RailcommError(ErrorCode.NO_RAIL, `${what}: rank ${commRank} (world rank ${w}) has no lane yet: its ${queued.component} address is looked up on the event loop, which a synchronous call does not run; exchange one message with it through ${asyncCall} (or any async call, e.g. await comm.barrier()) first, then ${what} works over ${queued.component}`);
      }
      if (!this.ctx.rails.some((r) => r.component === 'tbsm' || r.component === 'shm')) {
        throw new RailcommError(ErrorCode.NO_RAIL, `${what}: rank ${commRank} (world rank ${w}) is reached over none of this rank's rails that progress without the event loop: it has ${rails.join(', ')} (RAILCOMM_RAILS), and synchronous calls need ranks that share memory (self, tbsm, shm) or the ofi rail; use ${asyncCall} for it`);
      }
      throw new RailcommError(ErrorCode.NO_RAIL, `${what}: rank ${commRank} (world rank ${w}) has no rail yet that progresses without the event loop: it is neither a thread of this process nor, as the launch tells, on this host, and its address is still being looked up; use ${asyncCall} for it (once one message went through, a peer on this host is reached over shm and ${what} works)`);
    }
    if (lane.rail.caps.syncWait === undefined) {
      throw new RailcommError(ErrorCode.NO_RAIL, `${what}: rank ${commRank} (world rank ${w}) is reached over ${lane.rail.name}, which progresses only on the event loop; synchronous calls need ranks that share memory (self, tbsm, shm) or the ofi rail: use ${asyncCall} for it`);
    }
    this.laneOk[w] = 1;
  }

  /** need() for every member of a group (an ANY_SOURCE receive, a collective). */
  needAll(group: readonly number[], what: string, asyncCall: string): void {
    for (let i = 0; i < group.length; i++) this.need(group[i]!, i, what, asyncCall);
  }

  // ---- waiting ---------------------------------------------------------------

  /**
   * A receive's wait at the call, after recvNow found nothing: the source's
   * ring watched alone a moment at a time (at-call.ts recvAtCall: its own message
   * taken straight into buf), every rail between, until it arrived. Returns
   * its size (gotSource, gotTag in p2p), or QUEUED when only a posted Request
   * may take what matched (rendezvous, too large) or the source failed.
   */
  recvWait(buf: Uint8Array, ctxId: number, src: number, tag: number, w: number, group: readonly number[], what: string): number {
    const ctx = this.ctx;
    const p2p = ctx.p2p;
    const progress = ctx.progress;
    const lane = w >= 0 ? ctx.polledLane(w) : null;
    const ep = w >= 0 ? ctx.existingEndpoint(w) : undefined;
    // A source over a completion queue (ofi: no rings to watch): its rail is polled alone a moment at a time.
    const queued = lane === null && ep !== undefined && ep.lane !== null && ep.lane.rail.caps.syncWait === 'queue' ? ep.lane.rail : null;
    const rail = queued !== null && queued.poll !== undefined ? queued as QueueRail : null;
    this.begin();
    progress.syncing = true;
    try {
      for (;;) {
        let got = lane !== null ? p2p.atCall.recvAtCall(buf, ctxId, src, tag, lane, progress)
          : rail !== null ? p2p.atCall.recvAtCallOn(buf, ctxId, src, tag, ep!, rail, this.blocking ? 1 : undefined) : -1;
        if (got !== -1) return got;
        this.pollAll();
        got = p2p.atCall.recvNow(buf, ctxId, src, tag);
        if (got !== -1) return got;
        if (ep !== undefined && ep.failure !== null) return QUEUED;
        this.idle(lane, rail !== null, w, group, what, src, tag);
        // An ANY_SOURCE receive fails when a member dies while it waits (as a posted one would).
        if (w < 0 && this.lost !== null) throw new RailcommError(ErrorCode.PEER_FAILED, `${what} from ANY_SOURCE: ${this.lost}`);
      }
    } finally {
      progress.syncing = false;
      if (this.toldKv) this.told();
    }
  }

  /** Wait until r settles (any kind: send, receive, probe); throws its error. */
  waitRequest(r: Request, w: number, group: readonly number[] | null, what: string, src = -1, tag = -1): void {
    if (r.state !== PENDING) { if (r.error !== null) throw r.error; return; }
    const lane = w >= 0 ? this.ctx.polledLane(w) : null;
    this.begin();
    while (r.state === PENDING) {
      if (this.pollAll()) continue;
      this.idle(lane, false, w, group, what, src, tag);
    }
    if (this.toldKv) this.told();
    if (r.error !== null) throw r.error;
  }

  private begin(): void {
    this.lost = null;
    this.since = UNSET;
    this.hangSaid = false;
    this.turns = 0;
    this.steps = 0;
    this.blocking = false;
    // What a rail holds back until this run of JavaScript ends (udp's packed datagrams) goes now: a wait runs no microtasks.
    const rails = this.holders;
    for (let i = 0; i < rails.length; i++) rails[i]!.flush!();
  }

  /** Every polled rail once, and the self lane; true if anything happened. */
  private pollAll(): boolean {
    let any = this.ctx.progress.pollSync();
    const self = this.selfLane ?? this.findSelf();
    if (self !== null && self.poll !== undefined && self.poll()) any = true;
    return any;
  }

  private findSelf(): { poll?(): boolean } | null {
    const lane = this.ctx.existingEndpoint(this.ctx.worldRank)?.lane ?? null;
    if (lane !== null) this.selfLane = lane as { poll?(): boolean };
    return lane as { poll?(): boolean } | null;
  }

  /**
   * Nothing arrived this pass. Counted (a clock reading allocates on Node 20,
   * and under load every wait gets here): every IDLE_TURNS passes over all
   * rails, or every brief wait on the source's ring or ofi rail (9-200 us
   * each, by machine), is one idle step. From the first step the clock is
   * read every SPIN_CHECK_STEPS steps until the spin budget is spent; then
   * each step blocks on the doorbell a moment. Each step runs what shared-memory
   * collectives of this rank left aside (Progress.stepAsides). Every 8 steps the tbsm channel
   * is read (rings new peers announce); every 64 the clock: every CHECK_MS
   * the peers are checked, and the wait says once when it outlasts
   * RAILCOMM_HANG_TIMEOUT.
   */
  private idle(lane: PolledEndpoint | null, brief: boolean, w: number, group: readonly number[] | null, what: string, src: number, tag: number): void {
    // A pass that was a brief wait (on a ring, or an ofi source's rail) is a step;
    // once the spin budget is spent, every pass blocks (when there is a doorbell to block on).
    if (lane === null && !brief && (!this.blocking || this.anyBell === null) && (++this.turns & (IDLE_TURNS - 1)) !== 0) return;
    const k = ++this.steps;
    // A shared-memory collective of this rank waiting on a phase moves on meanwhile (its peers may wait for it).
    this.ctx.progress.stepAsides();
    if ((k & 7) === 0) for (let i = 0; i < this.channels.length; i++) this.channels[i]!.pollChannel();
    if ((k & 63) === 0) this.look(w, group, what, src, tag);
    if (!this.blocking && (k === 1 || (k & (SPIN_CHECK_STEPS - 1)) === 0)) this.blocking = this.spinSpent();
    if (this.blocking) this.block(lane, w);
  }

  /**
   * Whether the current wait has spun its budget since its first idle step.
   * Timed, not counted: a step's polls took 0.1-0.2 ms on one machine and
   * 9 us on a faster one, where a budget of 200 steps (meant as 20 ms) was
   * spent in under 2 ms and a rank slept at each preemption of its peer.
   */
  private spinSpent(): boolean {
    if (this.spinMs <= 0) return true;
    const now = performance.now();
    if (this.since === UNSET) { this.since = now; return false; }
    return now - this.since >= this.spinMs;
  }

  /** The clock, every 64 idle steps: when the wait began (if spinSpent did not say), the peers, the hang report. */
  private look(w: number, group: readonly number[] | null, what: string, src: number, tag: number): void {
    const now = performance.now();
    if (this.since === UNSET) { this.since = now; this.nextCheck = now; }
    if (now < this.nextCheck) return;
    this.nextCheck = now + CHECK_MS;
    this.checkPeers(w, group);
    if (!this.hangSaid) this.hangSaid = this.sayHang(now - this.since, w, group, what, src, tag);
  }


  /** Block on the rail doorbell of world rank w's lane (any rail's for a wait on several) for BLOCK_MS at most. */
  private block(lane: PolledEndpoint | null, w: number): void {
    const rail = lane !== null ? lane.rail : w >= 0 ? this.ctx.existingEndpoint(w)?.lane?.rail : undefined;
    const bell = lane !== null ? this.bellOf(lane.rail) ?? null : rail !== undefined ? this.bellOf(rail) ?? this.anyBell : this.anyBell;
    if (bell === null) return;
    const seen = bell.prepare();
    // A frame published before the announcement: take it instead of sleeping.
    // (The announcement stays: a sender that sees it rings once, harmlessly.)
    if (this.pollAll()) return;
    this.ctx.p2p.atCall.syncBlocks++;
    bell.wait(seen, BLOCK_MS);
  }

  /** The bell a wait on rail rings: its completion queue's (caps.syncWait 'queue'), else its component's ring doorbell. */
  private bellOf(rail: Rail): Bell | undefined {
    return this.bells.get(rail.caps.syncWait === 'queue' ? rail.name : rail.component);
  }

  /** A peer the wait depends on died (seen from here, without the event loop): fail it, so the wait ends with ERR_PEER_FAILED. */
  private checkPeers(w: number, group: readonly number[] | null): void {
    this.serviceReports(w, group);
    if (w >= 0) { this.checkPeer(w); return; }
    if (group === null) return;
    for (let i = 0; i < group.length; i++) this.checkPeer(group[i]!);
  }

  /**
   * Ranks the wire-up service reported dead while this wait held the event
   * loop (peeked at on its socket: the loop reads them later as usual): the
   * only word of a peer on another host that died without its connection
   * failing here.
   */
  private serviceReports(w: number, group: readonly number[] | null): void {
    const kv = this.world.kv;
    if (kv === null || kv.peekLost === undefined) return;
    const ctx = this.ctx;
    for (const { rank, why } of kv.peekLost()) {
      if (rank === ctx.worldRank || rank < 0 || rank >= ctx.launch.size) continue;
      const ep = ctx.existingEndpoint(rank);
      if (ep !== undefined && ep.failure !== null) continue;
      // What it sent before it died is delivered first.
      for (let i = 0; i < 64 && this.pollAll(); i++) { /* drain */ }
      if (ctx.existingEndpoint(rank)?.failure != null) continue;
      ctx.peerLost(rank, why);
      if (rank === w || (w < 0 && group !== null && group.includes(rank))) this.lost = `world rank ${rank} died: ${why}`;
    }
  }

  private checkPeer(w: number): void {
    const ctx = this.ctx;
    if (w === ctx.worldRank) return;
    const ep: ProtoEndpoint | undefined = ctx.existingEndpoint(w);
    if (ep !== undefined && ep.failure !== null) return;
    const why = this.watch.dead(w);
    if (why === null) {
      // A peer no pid or exit flag tells about (another host): its lane probes it.
      if (ep !== undefined && ep.lane !== null) ep.lane.probe?.();
      return;
    }
    // What it sent before it died is delivered first (a BYE says it finalized, a cleaner error).
    for (let i = 0; i < 64 && this.pollAll(); i++) { /* drain */ }
    for (let i = 0; i < this.channels.length; i++) this.channels[i]!.pollChannel();
    const f = ctx.existingEndpoint(w)?.failure;
    if (f !== undefined && f !== null) return;
    ctx.peerLost(w, why);
    this.lost = `world rank ${w} died: ${why}`;
  }

  /** The hang report of a synchronous wait; true once nothing more needs saying (said, or the report is off). */
  private sayHang(forMs: number, w: number, group: readonly number[] | null, what: string, src: number, tag: number): boolean {
    const t = this.ctx.params.hangTimeout;
    if (t <= 0) return true;
    if (forMs < t) return false;
    const ctx = this.ctx;
    const from = w >= 0 ? `rank ${src} (world rank ${w})` : group !== null ? 'ANY_SOURCE' : 'its peers';
    const mine = `${what} from ${from}${tag >= 0 ? ` tag ${tag}` : tag === -1 ? '' : ' tag ANY_TAG'}: waiting at the call (a synchronous call: this rank runs no timers or I/O until it returns)`;
    const pending = [mine, ...this.world.hangWaits().map((x) => x.what)];
    ctx.log.warn(`rank ${ctx.worldRank}: no operation completed for ${Math.round(forMs)} ms (RAILCOMM_HANG_TIMEOUT=${t}; the job goes on); waiting on:\n  ${pending.join('\n  ')}`);
    // Under railcomm run the launcher gathers reports into one picture; the socket write goes out at once.
    const kv = this.world.kv as { hangReport?(report: string): void } | null;
    if (kv?.hangReport !== undefined) {
      kv.hangReport(JSON.stringify({ rank: ctx.worldRank, state: 'waiting', forMs: Math.round(forMs), timeoutMs: t, waits: [{ peer: w >= 0 ? w : 'any', what: mine }] }));
      this.toldKv = true;
    }
    return true;
  }

  /** The launcher heard this rank wait: it hears it move again once the wait ended. */
  private told(): void {
    this.toldKv = false;
    const kv = this.world.kv as { hangReport?(report: string): void } | null;
    kv?.hangReport?.(JSON.stringify({ rank: this.ctx.worldRank, state: 'moving', forMs: 0, timeoutMs: this.ctx.params.hangTimeout, waits: [] }));
  }
  private toldKv = false;
}

function threadBell(b: RingBell): Bell {
  const a = new Int32Array(b.sab, b.byteOffset, 2);
  return {
    prepare: () => b.prepareSleep(),
    wait: (seen, ms) => { Atomics.wait(a, 0, seen, ms); },
  };
}

/** ofi: no count to wait on; the rail blocks on its queue's wait fd (or sleeps a moment without one). */
function queueBell(rail: QueueBlock): Bell {
  return {
    prepare: () => 0,
    wait: (_seen, ms) => { rail.blockSync(ms); },
  };
}

/** Processes: Atomics.wait does not reach across processes; the rail's doorbell is a futex. */
function futexBell(b: RingBell, native: { futexWait(sab: SharedArrayBuffer, off: number, expected: number, us: number): void }): Bell {
  return {
    prepare: () => b.prepareSleep(),
    wait: (seen, ms) => { native.futexWait(b.sab, b.byteOffset, seen, ms * 1000); },
  };
}
