// The protocol context: LCP's seven initialisation steps (configuration,
// component availability, layout filtering, device query, device filtering,
// rail opening, capabilities -> protocol tables), then protocol endpoints made
// on demand, each resolved through wire-up the first time a peer is used.
// Steps 2 to 5 are in rail-select.ts, 6 and 7 in rail-open.ts; other jobs'
// ranks in inter-job.ts, failed peers in peer-failures.ts, stats in context-report.ts.

import type { PolledEndpoint, Rail, RailEndpoint, RailEnv, RailUpcalls } from '../rail/api.js';
import { resolveParams, type ParamOptions, type Params } from '../core/params.js';
import { log as rootLog, type Logger, type LogLevel } from '../core/log.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import { endpointId, jobOf, rankOf } from '../core/ids.js';
import { newJobKey } from '../core/auth.js';
import type { LaunchInfo } from '../boot/launch-env.js';
import type { KeyValueStore } from '../boot/kv.js';
import { AmRegistry } from './am.js';
import { ProtoEndpoint, rndvThresholdOf, thresholdsFor } from './endpoint.js';
import { PointToPoint } from './p2p.js';
import { RmaEngine } from './rma/engine.js';
import { loadNative } from '../native/addon.js';
import { bindRank } from '../native/bind.js';
import { channels } from './observe.js';
import { Progress } from './progress.js';
import { Lanes } from './lanes/lanes.js';
import { MultiLane } from './lanes/multi-lane.js';
import { hostCpus, type HostCpus } from '../core/host-cpus.js';
import { chooseComponents, pickDevices, whyNoRail } from './rail-select.js';
import { openRails } from './rail-open.js';
import { INTER_JOB_RAILS, InterJobs } from './inter-job.js';
import { PeerFailures } from './peer-failures.js';
import { contextStats, printProtoInfo } from './context-report.js';

export interface InitStep {
  step: number;
  title: string;
  lines: string[];
}

export interface ContextOptions {
  params?: ParamOptions;
  launch: LaunchInfo;
  kv: KeyValueStore | null;
  /** Keep every component regardless of layout (for `railcomm info`). */
  probeAll?: boolean;
}

export class Context {
  readonly params: Params;
  readonly launch: LaunchInfo;
  readonly self: bigint;
  readonly log: Logger;
  readonly report: InitStep[] = [];
  readonly rails: Rail[] = [];
  readonly am = new AmRegistry();
  readonly p2p: PointToPoint;
  readonly rma: RmaEngine;
  readonly lanes: Lanes;
  readonly progress: Progress;
  private readonly kv: KeyValueStore | null;
  private readonly endpoints: Array<ProtoEndpoint | undefined> = [];
  private closed = false;
  /** The environment the rails were opened with (rails opened later for other jobs get the same). */
  private railEnv: RailEnv | null = null;
  /** Other jobs' ranks (ports, spawn): their aliases, keys and endpoints. */
  private readonly inter: InterJobs;
  private readonly failures: PeerFailures;

  private constructor(opts: ContextOptions, params: Params) {
    this.params = params;
    this.launch = opts.launch;
    this.kv = opts.kv;
    this.self = endpointId(opts.launch.jobId, opts.launch.rank);
    this.inter = new InterJobs(this, this.endpoints, (ep, lane) => this.bind(ep, lane));
    this.failures = new PeerFailures(this, this.endpoints, () => this.closed);
    this.log = rootLog;
    this.log.setLevel(params.log as LogLevel);
    if (opts.launch.size > 1) this.log.setPrefix(`railcomm ${opts.launch.rank}`);
    this.p2p = new PointToPoint(this, this.am);
    this.progress = new Progress(this.oversubscribed ? 0 : params.spinUs);
    this.rma = new RmaEngine(this, this.am, this.progress);
    this.lanes = new Lanes({
      laneFailed: (ep) => this.p2p.rndv.laneFailed(ep),
      drain: (ep) => { this.p2p.drain(ep); this.rma.laneReady(ep); },
      busy: (ep) => ep.sendsActive.size > 0 || ep.recvsActive.size > 0 || ep.hasPending,
    }, this.am, params, this.log);
  }

  /** More ranks on this host than CPUs (core/host-cpus.ts): spinning would steal the CPU ranks need to compute. */
  get oversubscribed(): boolean {
    return this.launch.localSize > this.hostCpus.cpus;
  }

  private readonly hostCpus: HostCpus = hostCpus();

  get worldRank(): number { return this.launch.rank; }
  get eagerLimit(): number { return this.params.eagerLimit; }
  get singleCopy(): boolean { return this.params.shmSingleCopy; }
  /**
   * World indices in use: this job's ranks, then the aliases of other jobs'
   * ranks (the protocol layer checks claimed sources against it; a merged
   * communicator has more ranks than this job).
   */
  get worldSize(): number { return this.inter.worldSize; }
  get jobSize(): number { return this.launch.size; }

  static async create(opts: ContextOptions): Promise<Context> {
    // Step 1: configuration from init() options, then RAILCOMM_* variables, then defaults.
    const params = resolveParams(opts.params ?? {});
    const ctx = new Context(opts, params);
    const say = (step: number, title: string, lines: string[]): void => {
      ctx.report.push({ step, title, lines });
      for (const l of lines) ctx.log.debug(`init step ${step} (${title}): ${l}`);
    };
    say(1, 'load configuration', [
      `launcher: ${opts.launch.launcher} (${opts.launch.why}); rank ${opts.launch.rank} of ${opts.launch.size}, ${opts.launch.localSize} on this host`,
      ...(opts.launch.wireup !== undefined ? [`wire-up: ${opts.launch.wireup}`] : []),
      `progress: ${ctx.oversubscribed ? `no spinning (${opts.launch.localSize} ranks on ${ctx.hostCpus.cpus} CPUs, from ${ctx.hostCpus.from})` : `polls ${params.spinUs} us after the last activity while requests are outstanding (${opts.launch.localSize} ranks on ${ctx.hostCpus.cpus} CPUs, from ${ctx.hostCpus.from})`}`,
      ...(params.bind === 'core' ? [bindRank(loadNative(), opts.launch.localRank, opts.launch.localSize)] : []),
      `eager limit ${params.eagerLimit} B, rendezvous from ${params.rndvThreshold} B (the shared-memory rails from their own crossover) in ${params.rndvChunk} B chunks, eager credits ${params.eagerCredits} B per peer`,
    ]);

    // Steps 2 to 5: the components and devices that get a rail.
    const picked = pickDevices(chooseComponents(opts, params, ctx.log, say), opts, params, say);

    // Step 6: open rails (rail-open.ts, step 7 and the wire-up fence too), with these upcalls.
    const upcalls: RailUpcalls = {
      am: ctx.am.table,
      ready: (ep) => { const pe = ep.owner as ProtoEndpoint | null; if (pe) ctx.p2p.drain(pe); },
      failed: (ep, err, graceful) => ctx.failures.onRailFailed(ep, err, graceful),
      accepted: (ep) => ctx.onAccepted(ep),
      activity: () => ctx.progress.activity(),
      waitingOn: (ep) => { const pe = ep.owner as ProtoEndpoint | null; return pe !== null && (ctx.p2p.waitsOn(pe) || ctx.rma.waitsOn(pe)); },
    };
    const env: RailEnv = {
      self: ctx.self, jobId: opts.launch.jobId, jobKey: opts.launch.jobKey || newJobKey(),
      params, log: ctx.log, upcalls,
      hostPeers: Math.max(0, opts.launch.localSize - opts.launch.threads),
      threadRanks: opts.launch.threads,
      // Connected jobs (ports, spawn): the key both jobs derived for the pair.
      keyFor: (job) => ctx.inter.keyFor(job),
    };
    ctx.railEnv = env;
    // A failure from here on (a rail that cannot open, a wire-up that times
    // out) must not leave open rails behind: shm segments would outlive us.
    try {
      await openRails(ctx, picked, env, opts.launch, ctx.kv, params, say);
    } catch (err) {
      await ctx.close().catch(() => { /* the original error matters */ });
      throw err;
    }
    // The wire-up service sees ranks die, also those this rank never talked to.
    ctx.kv?.onPeerLost?.((rank, why) => ctx.peerLost(rank, why));
    // ...and finalize: a rank waiting on one whose BYE cannot come (never connected, or every lane lost) learns it.
    ctx.kv?.onPeerFinalized?.((rank) => ctx.failures.peerFinalized(rank));
    // A rank called comm.abort() under a launcher that will not stop the job (rank 0's service): end this rank too.
    ctx.kv?.onJobAbort?.((rank, code) => {
      process.stderr.write(`railcomm: rank ${ctx.worldRank}: rank ${rank} called abort(${code}); exiting with code ${code}\n`);
      // Rank 0 hosts the service: give its messages to the other ranks a moment to leave.
      if (rank !== ctx.worldRank) setTimeout(() => process.exit(code), ctx.worldRank === 0 ? 200 : 0);
    });
    // Windows between processes of this host map each other's memory where the shm rail runs.
    if (ctx.rails.some((r) => r.component === 'shm')) ctx.rma.segments = loadNative();
    return ctx;
  }

  /** comm.alloc: a large buffer in memory the peers can map (a rail's registered segment), or null. */
  allocShared(bytes: number): Uint8Array | null {
    if (!this.params.shmSingleCopy) return null;
    for (const r of this.rails) {
      // Below the rail's rendezvous threshold its messages go through its ring: a segment would not be read.
      if (r.allocShared === undefined || bytes < rndvThresholdOf(r.caps, this.params)) continue;
      const b = r.allocShared(bytes);
      if (b !== null) return b;
    }
    return null;
  }

  // ---- endpoints ---------------------------------------------------------

  endpointFor(world: number): ProtoEndpoint {
    let ep = this.endpoints[world];
    if (ep !== undefined) return ep;
    if (world >= this.launch.size && this.inter.isAlias(world)) return this.inter.aliasEndpoint(world);
    if (!Number.isInteger(world) || world < 0 || world >= this.launch.size) {
      throw new RailcommError(ErrorCode.RANK, `rank ${world} is outside this job (size ${this.launch.size})`);
    }
    ep = new ProtoEndpoint(world, endpointId(this.launch.jobId, world), this.params.eagerCredits, this.params.sendBuffer);
    this.endpoints[world] = ep;
    if (world === this.launch.rank) {
      const selfRail = this.rails.find((r) => r.component === 'self');
      if (selfRail === undefined) throw new RailcommError(ErrorCode.NO_RAIL, 'no self rail is open');
      this.bind(ep, selfRail.endpoint(this.self, 'self'));
    } else {
      this.resolve(ep);
    }
    return ep;
  }

  /** The lane to a peer on a rail that progress polls (a receive may wait for it at the call), or null. */
  polledLane(world: number): PolledEndpoint | null {
    const ep = this.endpoints[world];
    return ep !== undefined && ep.polled ? ep.lane as PolledEndpoint : null;
  }

  /**
   * The synchronous calls' wire-up (they cannot wait for the lookup, which
   * needs the event loop): bind the peer now when the launch says which
   * shared-memory rail reaches it (a thread of this process: tbsm; every rank
   * on this host: shm, whose inbox name follows from the rank). The endpoint
   * either way (its lane stays null when neither applies and the lookup has
   * not answered yet).
   */
  bindLocal(world: number): ProtoEndpoint {
    const ep = this.endpointFor(world);
    // Another job's rank is reached over the network only (ports and spawn).
    if (ep.lane !== null || ep.failure !== null || world >= this.launch.size) return ep;
    const { threads, threadBase, localSize, size } = this.launch;
    const thread = threads >= 2 && world >= threadBase && world < threadBase + threads;
    const rail = this.rails.find((r) => r.component === (thread ? 'tbsm' : localSize >= size ? 'shm' : ''));
    if (rail !== undefined) this.bind(ep, rail.endpoint(ep.id, ''));
    return ep;
  }

  existingEndpoint(world: number): ProtoEndpoint | undefined {
    return this.endpoints[world];
  }

  *allEndpoints(): Iterable<ProtoEndpoint> {
    for (const ep of this.endpoints) if (ep !== undefined) yield ep;
  }

  private bind(ep: ProtoEndpoint, lane: RailEndpoint): void {
    lane.owner = ep;
    ep.lane = lane;
    ep.multi = lane instanceof MultiLane;
    ep.polled = lane.poll !== undefined && lane.peek !== undefined && lane.takePeeked !== undefined;
    ep.th = thresholdsFor(lane.rail.caps, this.params);
    if (lane instanceof MultiLane) {
      // Rendezvous chunks fit every lane that may carry them.
      for (const l of lane.lanes) ep.th.chunk = Math.min(ep.th.chunk, l.rail.caps.amZcopyMax);
    }
    ep.resolving = false;
    if (this.params.protoInfo) printProtoInfo(this.launch.rank, ep);
    if (channels.protocol.hasSubscribers) channels.protocol.publish({ rank: ep.rank, rail: lane.rail.name, thresholds: ep.th });
    this.p2p.drain(ep);
    this.rma.laneReady(ep);
  }

  /** Look the peer's rail addresses up (wire-up) and pick the best common rail. */
  private resolve(ep: ProtoEndpoint): void {
    if (this.kv === null) {
      ep.failure = new RailcommError(ErrorCode.NO_RAIL, `rank ${ep.rank} cannot be reached: this rank was not started by a launcher`);
      return;
    }
    ep.resolving = true;
    this.kv.get(`rails/${ep.rank}`, this.params.connectTimeout).then((text) => {
      if (ep.failure !== null || ep.lane instanceof MultiLane) return;
      const raw = JSON.parse(text) as Record<string, string | string[]>;
      const addrs: Record<string, string[]> = {};
      for (const [k, v] of Object.entries(raw)) addrs[k] = Array.isArray(v) ? v : [v];
      const plans = this.lanes.plan(this.rails, addrs);
      if (plans.length === 0) {
        if (ep.lane !== null) return;
        this.failures.failEndpoint(ep, new RailcommError(ErrorCode.NO_RAIL, `no rail reaches rank ${ep.rank}: it offers ${Object.keys(addrs).join(', ') || 'nothing'}, this rank has ${this.rails.map((r) => r.component).join(', ')}${whyNoRail(this.rails, addrs)}`), false);
        return;
      }
      // The peer connected to us first: its lane stays, made one of several
      // only when the plan has it (a shared-memory peer whose inbox name is
      // gone by now still has its ring; it is no network lane).
      const bound = ep.lane;
      if (bound !== null && (plans.length === 1 || !plans.some((p) => p.rail.rail === bound.rail))) return;
      if (plans.length === 1) {
        // One lane (the common case): the rail endpoint itself, nothing in between.
        this.bind(ep, plans[0]!.rail.rail.endpoint(ep.id, plans[0]!.address));
        return;
      }
      this.bind(ep, this.lanes.multi(ep, plans, bound));
    }).catch((err: unknown) => {
      // The peer may have connected to us meanwhile: then the lookup did not matter.
      if (ep.lane !== null) return;
      this.failures.failEndpoint(ep, new RailcommError(ErrorCode.PEER_FAILED, `cannot look up how to reach rank ${ep.rank}: ${(err as Error)?.message ?? String(err)}`, { cause: err }), false);
    });
  }

  /** Rank `world` died (the wire-up service says so): fail everything that involves it. */
  peerLost(world: number, why: string): void {
    this.failures.peerLost(world, why);
  }

  private onAccepted(lane: RailEndpoint): void {
    // Another job's rank: its alias, once a port or spawn connected the jobs.
    const rank = jobOf(lane.peer) === this.launch.jobId ? rankOf(lane.peer) : this.inter.worldOf(lane.peer);
    if (rank < 0 || rank >= this.inter.worldSize) return;
    const ep = this.endpointFor(rank);
    // Frames on any of its lanes reach the peer's endpoint.
    lane.owner = ep;
    if (ep.lane === null) this.bind(ep, lane);
    else if (ep.lane === lane) this.p2p.drain(ep);
    else if (ep.lane instanceof MultiLane && ep.lane.accepted(lane)) this.p2p.drain(ep);
    if (channels.connect.hasSubscribers) channels.connect.publish({ rank, rail: lane.rail.name });
  }

  /**
   * Call fn with the world rank of each peer that fails from now on, until
   * the returned function is called: waits that sleep outside the protocol
   * (shared-memory collectives) learn at once instead of at their next look.
   */
  watchFailures(fn: (world: number) => void): () => void {
    return this.failures.watchFailures(fn);
  }

  /** Counters per rail and per peer (for --stats and tests). */
  stats(): Record<string, unknown> {
    return contextStats(this, this.endpoints);
  }

  /** Run fn when finalize() starts (before it waits for sends): tell peers that wait on this rank. */
  atFinalize(fn: () => void): void {
    this.finalizers.push(fn);
  }
  private readonly finalizers: Array<() => void> = [];

  /** finalize() starts: no more operations; peers learn it (BYE, shared collectives' flags). */
  beginFinalize(): void {
    for (const r of this.rails) r.beginFinalize?.();
    this.p2p.beginFinalize();
    for (const f of this.finalizers.splice(0)) f();
  }

  /** Run fn when this context closes (finalize): native resources of layers above, such as doorbell threads. */
  atClose(fn: () => void): void {
    this.closers.push(fn);
  }
  private readonly closers: Array<() => void> = [];


  // ---- other jobs (ports, spawn): inter-job.ts ------------------------------

  /** Rails that reach ranks of other jobs. */
  static readonly INTER_JOB_RAILS: readonly string[] = INTER_JOB_RAILS;

  /**
   * Open what another job needs to reach this rank (ports, spawn): a rail of
   * an inter-job component (tcp unless RAILCOMM_RAILS names udp only) on every
   * device, loopback included, unless one is open there already. A job of one
   * rank, or of threads, opened none at init.
   */
  async openInterJobRails(): Promise<void> {
    if (this.closed || this.railEnv === null) return;
    await this.inter.openRails(this.railEnv);
  }

  /** For railcomm info: how this rank would reach other jobs. */
  interJobSummary(): string { return this.inter.interJobSummary(); }

  /** This rank's addresses on the rails that reach other jobs (component -> addresses). */
  interJobAddresses(): Record<string, string[]> { return this.inter.interJobAddresses(); }

  /** Rails (tcp, udp) accept connections from ranks of `job`, which prove `key`. */
  addPairKey(job: number, key: string): void { this.inter.addPairKey(job, key); }

  /**
   * World indices for another job's members, in order: an id seen before keeps
   * its alias unless that one was detached (disconnect), then it gets a new one.
   */
  addAliases(members: ReadonlyArray<{ id: bigint; addrs: Record<string, string[]> }>): number[] {
    return this.inter.addAliases(members);
  }

  /** The 64-bit id (job << 32 | rank) of a world index: this job's rank or an alias. */
  idOf(world: number): bigint { return this.inter.idOf(world); }

  /** How a world index reads in messages: `rank N` in this job, `rank job:rank` in another. */
  nameOf(world: number): string { return this.inter.nameOf(world); }

  /**
   * After disconnect: the other job's ranks no longer concern this one. What
   * is still posted for them fails (ERR_PEER_FAILED, disconnected), their
   * lanes close once what was sent went out, and their later failures say nothing.
   */
  detachAliases(worlds: readonly number[], why: string): void { this.inter.detachAliases(worlds, why); }

  /** Connected jobs and the traffic with them (stats, railcomm info). */
  connectedJobs(): Array<{ job: number; ranks: number; detached: number; msgsSent: number; bytesSent: number; msgsRecv: number; bytesRecv: number }> {
    return this.inter.connectedJobs();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const f of this.closers.splice(0)) f();
    this.lanes.close();
    for (const r of this.rails) await r.close();
    this.progress.dispose();
  }
}
