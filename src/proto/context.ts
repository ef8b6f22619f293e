// The protocol context: LCP's seven initialisation steps (configuration,
// component availability, layout filtering, device query, device filtering,
// rail opening, capabilities -> protocol tables), then protocol endpoints made
// on demand, each resolved through wire-up the first time a peer is used.

import type { Component, Device, PolledEndpoint, Rail, RailEndpoint, RailEnv, RailUpcalls } from '../rail/api.js';
import { COMPONENTS } from '../rail/components.js';
import { resolveParams, type ParamOptions, type Params } from '../core/params.js';
import { log as rootLog, type Logger, type LogLevel } from '../core/log.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import { endpointId, formatId, jobOf, rankOf } from '../core/ids.js';
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

function globToRegExp(g: string): RegExp {
  return new RegExp('^' + g.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$');
}

/** Another job's rank as this rank knows it (ports, spawn). */
interface Alias {
  readonly id: bigint;
  addrs: Record<string, string[]>;
  /** Disconnected: its failures no longer concern this job. */
  detached: boolean;
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

  private constructor(opts: ContextOptions, params: Params) {
    this.params = params;
    this.launch = opts.launch;
    this.kv = opts.kv;
    this.self = endpointId(opts.launch.jobId, opts.launch.rank);
    this.nextAlias = opts.launch.size;
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
  get worldSize(): number { return this.nextAlias; }

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

    // Step 2: which components this build can use.
    const usable: Component[] = [];
    const l2: string[] = [];
    for (const c of COMPONENTS) {
      const a = c.available();
      l2.push(`${c.name}: ${a.ok ? 'available' : 'unavailable'} (${a.why})`);
      if (a.ok) usable.push(c);
    }
    say(2, 'component availability', l2);

    // Step 3: filter by job layout and by RAILCOMM_RAILS.
    const wanted = params.rails.split(',').map((s) => s.trim()).filter(Boolean);
    for (const w of wanted) {
      if (!COMPONENTS.some((c) => c.name === w)) {
        throw new RailcommError(ErrorCode.INVALID_ARG, `RAILCOMM_RAILS names '${w}', which this build does not have; known rails: ${COMPONENTS.map((c) => c.name).join(', ')}`);
      }
    }
    const l3: string[] = [];
    const layoutOk = (c: Component): string | null => {
      if (opts.probeAll) return null;
      if (c.reach === 'self') return null;
      if (opts.launch.size === 1) return 'a world of one rank needs only self';
      if (c.reach === 'process' && opts.launch.threads < 2) return 'no other rank is a thread of this process';
      if (c.reach !== 'process' && opts.launch.threads >= opts.launch.size) return 'every rank is a thread of this process';
      if (c.reach === 'host' && opts.launch.localSize <= opts.launch.threads) return 'no other process of this job on this host';
      return null;
    };
    const chosen = usable.filter((c) => {
      if (wanted.length > 0 && !wanted.includes(c.name) && c.reach !== 'self') { l3.push(`${c.name}: dropped (not in RAILCOMM_RAILS=${params.rails})`); return false; }
      if (c.optIn === true && !wanted.includes(c.name) && !opts.probeAll) { l3.push(`${c.name}: dropped (opt-in: name it in RAILCOMM_RAILS)`); return false; }
      const why = layoutOk(c) ?? (opts.probeAll ? null : c.fits?.(params, Math.max(0, opts.launch.localSize - opts.launch.threads)) ?? null);
      if (why !== null) {
        l3.push(`${c.name}: dropped (${why})`);
        // Not a layout choice but a surprise the user should hear about.
        if (c.fits !== undefined && layoutOk(c) === null) ctx.log.warn(`${c.name} rail not used: ${why}`);
        return false;
      }
      l3.push(`${c.name}: kept`);
      return true;
    });
    say(3, 'filter components by layout', l3);

    // Step 4: devices of the remaining components.
    const devices = new Map<Component, Device[]>();
    const l4: string[] = [];
    for (const c of chosen) {
      const ds = c.queryDevices(params);
      devices.set(c, ds);
      l4.push(`${c.name}: ${ds.map((d) => `${d.name}${d.address ? ' ' + d.address : ''} (${d.kind})`).join(', ') || 'none'}`);
      // railcomm info: what each of an opt-in component's devices offers (ofi: caps, MR mode, progress, wait object).
      if (opts.probeAll && c.optIn === true) {
        for (const d of ds) if (d.notes) l4.push(`  ${c.name} ${d.name}: ${d.notes}`);
        for (const line of c.report?.() ?? []) l4.push(`  ${c.name}: ${line}`);
      }
    }
    say(4, 'query devices', l4);

    // Step 5: filter devices by name: one rail per component, but tcp and udp
    // across hosts take every network device (one lane per NIC, lanes/).
    const picked: Array<[Component, Device]> = [];
    const l5: string[] = [];
    const oneHost = opts.launch.localSize === opts.launch.size;
    for (const [c, ds] of devices) {
      let pool = ds;
      // udp picks its device the same way (and honours the same device globs).
      if (c.name === 'tcp' || c.name === 'udp') {
        const globs = params.tcpDevices.split(',').map((s) => s.trim()).filter(Boolean);
        if (globs.length > 0) {
          const res = globs.map(globToRegExp);
          pool = ds.filter((d) => res.some((r) => r.test(d.name)));
          if (pool.length === 0) throw new RailcommError(ErrorCode.NO_RAIL, `RAILCOMM_TCP_DEVICES=${params.tcpDevices} matches none of this host's devices (${ds.map((d) => d.name).join(', ')})`);
        } else if (oneHost) {
          pool = ds.filter((d) => d.kind === 'loopback');
        } else {
          // Across hosts: a rail on every network device (each a lane to the
          // peers in its subnet: two NICs, two lanes); first the device that
          // carries our connection to the wire-up service, which routes to
          // the job's network when no subnet is shared.
          const via = opts.kv?.localAddress()?.replace(/^::ffff:/, '');
          const net = ds.filter((d) => d.kind === 'network');
          const routed = net.filter((d) => d.address === via);
          pool = [...routed, ...net.filter((d) => d.address !== via)];
          if (routed.length > 0) l5.push(`${c.name}: ${routed[0]!.name} carries the connection to the wire-up service (${via})`);
        }
        if (pool.length === 0) pool = ds.slice(0, 1);
        // One rail per device: two addresses of one interface are not two paths.
        const names = new Set<string>();
        pool = pool.filter((d) => !names.has(d.name) && names.add(d.name) !== undefined);
      } else if (c.name === 'ofi') {
        // The first provider (libfabric's order, or RAILCOMM_OFI_PROVIDERS'): on one
        // host its loopback domain; across hosts, like tcp, its domain on the device
        // that carries the connection to the wire-up service, else not loopback.
        const provider = ds[0]?.name.split('/')[0];
        const mine = ds.filter((d) => d.name.split('/')[0] === provider);
        const via = opts.kv?.localAddress()?.replace(/^::ffff:/, '');
        const routed = !oneHost && via !== undefined ? mine.filter((d) => d.address === via) : [];
        pool = oneHost ? mine.filter((d) => d.kind === 'loopback') : routed.length > 0 ? routed : mine.filter((d) => d.kind !== 'loopback');
        if (routed.length > 0) l5.push(`${c.name}: ${routed[0]!.name} carries the connection to the wire-up service (${via})`);
        if (pool.length === 0) pool = mine.length > 0 ? mine : ds;
        pool = pool.slice(0, 1);
      } else {
        pool = pool.slice(0, 1);
      }
      if (pool.length === 0) { l5.push(`${c.name}: no usable device`); continue; }
      for (const d of pool) {
        picked.push([c, d]);
        l5.push(`${c.name}: ${d.name}${d.address ? ' ' + d.address : ''}${oneHost && (c.name === 'tcp' || c.name === 'udp') ? ' (all ranks on this host)' : ''}`);
      }
    }
    say(5, 'filter devices', l5);

    // Step 6: open rails.
    const upcalls: RailUpcalls = {
      am: ctx.am.table,
      ready: (ep) => { const pe = ep.owner as ProtoEndpoint | null; if (pe) ctx.p2p.drain(pe); },
      failed: (ep, err, graceful) => ctx.onRailFailed(ep, err, graceful),
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
      keyFor: (job) => ctx.pairKeys.get(job) ?? null,
    };
    ctx.railEnv = env;
    // A failure from here on (a rail that cannot open, a wire-up that times
    // out) must not leave open rails behind: shm segments would outlive us.
    try {
      const l6: string[] = [];
      for (const [c, d] of picked) {
        const rail = await c.open(d, env);
        ctx.rails.push(rail);
        if (rail.poll !== undefined && rail.sleep !== undefined) {
          const r = rail as Required<Pick<Rail, 'poll' | 'sleep'>> & Pick<Rail, 'settle'>;
          ctx.progress.addPoller({ poll: () => r.poll(), sleep: (w) => r.sleep(w), settle: () => r.settle?.() });
        }
        l6.push(`${rail.name}: open at ${rail.address()}`);
      }
      say(6, 'open rails', l6);

      // Step 7: capabilities -> protocol tables.
      const l7: string[] = [];
      for (const r of ctx.rails) {
        const t = thresholdsFor(r.caps, params);
        const c = r.caps;
        l7.push(`${r.name}: ${c.reliable ? 'reliable' : 'unreliable'}, ${c.ordered ? 'ordered' : 'unordered'}, put ${c.put ? 'yes' : 'no'}, get ${c.get ? 'yes' : 'no'}, atomics ${c.atomics ? 'yes' : 'no'}, ~${c.latencyUs} us, ~${c.bandwidthMBps} MB/s; ` +
          `short <= ${t.short} B, eager <= ${t.eager} B, zero-copy eager <= ${t.zcopy} B (a blocking send complete at the call <= ${t.now} B), rendezvous above in ${t.chunk} B chunks`);
      }
      say(7, 'rail capabilities and protocol tables', l7);

      if (ctx.kv !== null) {
        // Every rail's address, by component (one rank may have several tcp rails: one per device).
        const addrs: Record<string, string[]> = {};
        for (const r of ctx.rails) if (r.component !== 'self') (addrs[r.component] ??= []).push(r.address());
        await ctx.kv.put(`rails/${opts.launch.rank}`, JSON.stringify(addrs));
        if (opts.launch.launcher === 'railcomm') {
          await ctx.kv.fence(); // railcomm run stops a job whose rank died before this
        } else {
          // No launcher of ours watches the job: a rank that never arrives must not hang the others.
          const ms = params.connectTimeout;
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new RailcommError(ErrorCode.BOOT,
              `rank ${opts.launch.rank}: not all ${opts.launch.size} ranks reached the wire-up within ${ms} ms (RAILCOMM_CONNECT_TIMEOUT); ${opts.launch.wireup?.startsWith('PMIx') === true
                ? 'every rank the launcher started must call init()'
                : 'start every rank with the same MASTER_ADDR:MASTER_PORT, the same RAILCOMM_JOB_KEY, and distinct ranks'}`)), ms);
          });
          try { await Promise.race([ctx.kv.fence(), late]); } finally { clearTimeout(timer); }
        }
      }
    } catch (err) {
      await ctx.close().catch(() => { /* the original error matters */ });
      throw err;
    }
    // The wire-up service sees ranks die, also those this rank never talked to.
    ctx.kv?.onPeerLost?.((rank, why) => ctx.peerLost(rank, why));
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
    if (world >= this.launch.size && this.aliases.has(world)) return this.aliasEndpoint(world);
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
    if (this.params.protoInfo) this.printProtoInfo(ep);
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
        this.failEndpoint(ep, new RailcommError(ErrorCode.NO_RAIL, `no rail reaches rank ${ep.rank}: it offers ${Object.keys(addrs).join(', ') || 'nothing'}, this rank has ${this.rails.map((r) => r.component).join(', ')}${whyNoRail(this.rails, addrs)}`), false);
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
      this.failEndpoint(ep, new RailcommError(ErrorCode.PEER_FAILED, `cannot look up how to reach rank ${ep.rank}: ${(err as Error)?.message ?? String(err)}`, { cause: err }), false);
    });
  }

  /** The endpoint of a peer, made without starting a lookup when it is new (only a failure to remember). */
  private unresolvedEndpoint(world: number): ProtoEndpoint {
    let ep = this.endpoints[world];
    if (ep === undefined) {
      ep = new ProtoEndpoint(world, endpointId(this.launch.jobId, world), this.params.eagerCredits, this.params.sendBuffer);
      this.endpoints[world] = ep;
    }
    return ep;
  }

  /** Rank `world` died (the wire-up service says so): fail everything that involves it. */
  peerLost(world: number, why: string): void {
    if (this.closed || world === this.launch.rank || !Number.isInteger(world) || world < 0 || world >= this.launch.size) return;
    const ep = this.unresolvedEndpoint(world);
    // What it sent before it died may still wait in a polled rail (a ring, a
    // completion queue) this rank has not read: deliver that first, as the shm
    // rail does when it finds a peer's process gone. (A message it saw complete
    // before exiting is then received, not failed.)
    for (const r of this.rails) if (r.poll !== undefined) for (let i = 0; i < 1024 && r.poll(); i++) { /* deliver what waits */ }
    this.failEndpoint(ep, new RailcommError(ErrorCode.PEER_FAILED, `rank ${world} died: ${why}`), false);
    for (const r of this.rails) r.peerDied?.(ep.id);
  }

  private onAccepted(lane: RailEndpoint): void {
    // Another job's rank: its alias, once a port or spawn connected the jobs.
    const rank = jobOf(lane.peer) === this.launch.jobId ? rankOf(lane.peer) : this.aliasOf.get(lane.peer) ?? -1;
    if (rank < 0 || rank >= this.nextAlias) return;
    const ep = this.endpointFor(rank);
    // Frames on any of its lanes reach the peer's endpoint.
    lane.owner = ep;
    if (ep.lane === null) this.bind(ep, lane);
    else if (ep.lane === lane) this.p2p.drain(ep);
    else if (ep.lane instanceof MultiLane && ep.lane.accepted(lane)) this.p2p.drain(ep);
    if (channels.connect.hasSubscribers) channels.connect.publish({ rank, rail: lane.rail.name });
  }

  private onRailFailed(lane: RailEndpoint, err: RailcommError, graceful: boolean): void {
    let ep = lane.owner as ProtoEndpoint | null;
    if (ep === null && !graceful && jobOf(lane.peer) === this.launch.jobId) {
      // A rail endpoint nobody bound yet failed (the peer told the rail it
      // cannot reach us): the peer is lost to this rank unless another lane
      // already carries it.
      const world = rankOf(lane.peer);
      if (world >= this.launch.size || world === this.launch.rank) return;
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
      this.lanes.forget(m);
      m.shutdown();
      this.failEndpoint(ep, graceful ? err : m.lostError(), graceful);
      return;
    }
    if (ep.lane !== lane) return;
    this.failEndpoint(ep, err, graceful);
  }

  private failEndpoint(ep: ProtoEndpoint, err: RailcommError, graceful: boolean): void {
    if (ep.failure !== null) return;
    const e = graceful ? new RailcommError(ErrorCode.PEER_FAILED, `${this.nameOf(ep.rank)} has finalized; it takes no more messages`, { cause: err }) : err;
    ep.failure = e;
    if (!graceful && !this.closed) this.log.warn(`peer ${this.nameOf(ep.rank)} failed: ${err.message}`);
    if (channels.peerFailed.hasSubscribers) channels.peerFailed.publish({ rank: ep.rank, graceful, message: e.message });
    this.p2p.peerFailed(ep, e, graceful);
    this.rma.peerFailed(ep, e);
    for (const f of [...this.failureWatchers]) f(ep.rank);
  }

  /**
   * Call fn with the world rank of each peer that fails from now on, until
   * the returned function is called: waits that sleep outside the protocol
   * (shared-memory collectives) learn at once instead of at their next look.
   */
  watchFailures(fn: (world: number) => void): () => void {
    this.failureWatchers.add(fn);
    return () => { this.failureWatchers.delete(fn); };
  }
  private readonly failureWatchers = new Set<(world: number) => void>();

  private printProtoInfo(ep: ProtoEndpoint): void {
    const t = ep.th;
    const lane = ep.lane!;
    const m = lane instanceof MultiLane ? lane : null;
    const eager = m === null ? lane.rail.name : m.lanes.filter((l) => l.eager).map((l) => l.rail.name).join(' + ');
    const rail = eager;
    let rndv = `on ${lane.rail.name}`;
    if (m !== null) {
      const rl = m.lanes.filter((l) => l.rndv);
      const total = rl.reduce((a, l) => a + l.weight, 0);
      rndv = rl.map((l) => `${Math.round((l.weight / total) * 100)}% on ${l.rail.name}`).join(', ');
      const standby = m.lanes.filter((l) => !l.eager && !l.rndv).map((l) => l.rail.name);
      if (standby.length > 0) rndv += `; standing by: ${standby.join(', ')}`;
    }
    const rows = [
      `  0 .. ${t.short} B: short (inline) on ${rail}`,
      `  ${t.short + 1} .. ${t.eager} B: eager copy on ${rail}`,
      `  ${t.eager + 1} .. ${t.zcopy} B: zero-copy eager on ${rail}${t.now > t.eager ? ` (a blocking send up to ${t.now} B copied at the call)` : ''}`,
      `  ${t.zcopy + 1} B ..: rendezvous, ${t.chunk} B chunks ${m === null ? rndv : `striped: ${rndv}`}`,
    ];
    process.stderr.write(`[railcomm ${this.launch.rank}] protocols to rank ${ep.rank}:\n${rows.join('\n')}\n`);
  }

  /** Counters per rail and per peer (for --stats and tests). */
  stats(): Record<string, unknown> {
    const rails: Record<string, Record<string, number>> = {};
    for (const r of this.rails) rails[r.name] = r.counters.snapshot();
    const peers: Record<string, Record<string, number>> = {};
    for (const ep of this.endpoints) {
      if (ep === undefined || ep.lane === null) continue;
      const p: Record<string, unknown> = ep.lane.counters.snapshot();
      if (ep.lane instanceof MultiLane) { p['lanes'] = ep.lane.laneStats(); p['resends'] = ep.lane.resends + 0; }
      if (ep.laneRx !== null) p['duplicatesDropped'] = ep.laneRx.duplicates;
      // Another job's rank as job:rank (a world index past this job means nothing to a reader).
      peers[ep.rank < this.launch.size ? String(ep.rank) : formatId(ep.id)] = p as Record<string, number>;
    }
    // Connected jobs (ports, spawn) by job id: their ranks and the traffic with them.
    const jobs: Record<string, Record<string, number>> = {};
    for (const { job, ...j } of this.connectedJobs()) jobs[String(job)] = j;
    return { rank: this.launch.rank, rails, peers, ...(Object.keys(jobs).length > 0 ? { jobs } : {}), protocol: this.p2p.snapshot(), singleCopy: this.p2p.ipcStates(), ...(this.p2p.device.used ? { cuda: this.p2p.device.snapshot() } : {}) };
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

  // ---- other jobs (ports, spawn): aliases -----------------------------------
  // Another job's ranks get world indices past this job's (size ..), so that
  // groups, matching, rendezvous, multirail and failures work on them as on
  // any peer. An alias stands for a 64-bit endpoint id (job << 32 | rank) and
  // the rail addresses the roots exchanged; it is resolved from those, not
  // through the wire-up service, and only over the rails that reach another
  // job (tcp, udp: shm and tbsm name their segments and peers per job).

  private readonly aliases = new Map<number, Alias>();
  private readonly aliasOf = new Map<bigint, number>();
  /** The next alias (this job's size at first: set in the constructor). */
  private nextAlias: number;
  /** Key per connected job, both sides derived from a port's secret and both job ids (RailEnv.keyFor). */
  private readonly pairKeys = new Map<number, string>();

  /** Rails that reach ranks of other jobs. */
  static readonly INTER_JOB_RAILS: readonly string[] = ['tcp', 'udp'];

  /**
   * Open what another job needs to reach this rank (ports, spawn): a rail of
   * an inter-job component (tcp unless RAILCOMM_RAILS names udp only) on every
   * device, loopback included, unless one is open there already. A job of one
   * rank, or of threads, opened none at init.
   */
  async openInterJobRails(): Promise<void> {
    if (this.closed || this.railEnv === null) return;
    const kinds = this.interKinds();
    if (kinds.length === 0) throw new RailcommError(ErrorCode.NO_RAIL, `RAILCOMM_RAILS=${this.params.rails} names no rail that reaches another job: add tcp (or udp)`);
    const globs = this.params.tcpDevices.split(',').map((g) => g.trim()).filter(Boolean).map(globToRegExp);
    for (const c of COMPONENTS) {
      if (!kinds.includes(c.name) || !c.available().ok) continue;
      const names = new Set<string>();
      for (const d of c.queryDevices(this.params)) {
        if (names.has(d.name) || (globs.length > 0 && !globs.some((r) => r.test(d.name)))) continue;
        names.add(d.name);
        if (this.rails.some((r) => r.component === c.name && r.device.name === d.name)) continue;
        this.rails.push(await c.open(d, this.railEnv));
        this.log.debug(`opened ${c.name} on ${d.name} for other jobs`);
      }
    }
  }

  /**
   * The rails other jobs are reached on: tcp (one ordered stream per pair,
   * whose end tells at once that a rank died), or those of tcp and udp that
   * RAILCOMM_RAILS names.
   */
  private interKinds(): readonly string[] {
    const wanted = this.params.rails.split(',').map((s) => s.trim()).filter(Boolean);
    return wanted.length === 0 ? ['tcp'] : Context.INTER_JOB_RAILS.filter((c) => wanted.includes(c));
  }

  /** For railcomm info: how this rank would reach other jobs. */
  interJobSummary(): string {
    const kinds = this.interKinds();
    if (kinds.length === 0) return `none: RAILCOMM_RAILS=${this.params.rails} names neither tcp nor udp, so openPort, accept, connect and spawn fail with ERR_NO_RAIL`;
    return `over ${kinds.join(' and ')} on every device${this.params.tcpDevices !== '' ? ` matching RAILCOMM_TCP_DEVICES=${this.params.tcpDevices}` : ''}, opened when a port, accept, connect or spawn first needs it (loopback between jobs on one host); connected jobs show under 'jobs' in --stats and comm.stats(), their ranks as job:rank under 'peers'`;
  }

  private interRails(): Rail[] {
    const kinds = this.interKinds();
    return this.rails.filter((r) => kinds.includes(r.component));
  }

  /** This rank's addresses on the rails that reach other jobs (component -> addresses). */
  interJobAddresses(): Record<string, string[]> {
    const addrs: Record<string, string[]> = {};
    for (const r of this.interRails()) (addrs[r.component] ??= []).push(r.address());
    return addrs;
  }

  /** Rails (tcp, udp) accept connections from ranks of `job`, which prove `key`. */
  addPairKey(job: number, key: string): void {
    if (job === this.launch.jobId) throw new RailcommError(ErrorCode.BOOT, `the other job has this job's id (${job}): two jobs with one id cannot be told apart; start them separately (railcomm run gives each a random id)`);
    this.pairKeys.set(job, key);
  }

  /**
   * World indices for another job's members, in order: an id seen before keeps
   * its alias unless that one was detached (disconnect), then it gets a new one.
   */
  addAliases(members: ReadonlyArray<{ id: bigint; addrs: Record<string, string[]> }>): number[] {
    return members.map((m) => {
      const old = this.aliasOf.get(m.id);
      if (old !== undefined && this.aliases.get(old)?.detached === false) {
        this.aliases.get(old)!.addrs = m.addrs;
        return old;
      }
      const w = this.nextAlias++;
      this.aliases.set(w, { id: m.id, addrs: m.addrs, detached: false });
      this.aliasOf.set(m.id, w);
      return w;
    });
  }

  /** The 64-bit id (job << 32 | rank) of a world index: this job's rank or an alias. */
  idOf(world: number): bigint {
    return world < this.launch.size ? endpointId(this.launch.jobId, world) : this.aliases.get(world)?.id ?? -1n;
  }

  /** How a world index reads in messages: `rank N` in this job, `rank job:rank` in another. */
  nameOf(world: number): string {
    const a = world >= this.launch.size ? this.aliases.get(world) : undefined;
    return a === undefined ? `rank ${world}` : `rank ${formatId(a.id)} (job:rank, another job)`;
  }

  /**
   * After disconnect: the other job's ranks no longer concern this one. What
   * is still posted for them fails (ERR_PEER_FAILED, disconnected), their
   * lanes close once what was sent went out, and their later failures say nothing.
   */
  detachAliases(worlds: readonly number[], why: string): void {
    for (const w of worlds) {
      const a = this.aliases.get(w);
      if (a === undefined || a.detached) continue;
      a.detached = true;
      if (this.aliasOf.get(a.id) === w) this.aliasOf.delete(a.id);
      const ep = this.endpoints[w];
      if (ep === undefined) continue;
      if (ep.failure === null) {
        const e = new RailcommError(ErrorCode.PEER_FAILED, `${this.nameOf(w)}: ${why}`);
        ep.failure = e;
        this.p2p.peerFailed(ep, e, true);
        this.rma.peerFailed(ep, e);
      }
      const lane = ep.lane;
      if (lane instanceof MultiLane) { this.lanes.forget(lane); lane.shutdown(); }
      else if (lane !== null) void lane.close().catch(() => undefined);
    }
  }

  /** Connected jobs and the traffic with them (stats, railcomm info). */
  connectedJobs(): Array<{ job: number; ranks: number; detached: number; msgsSent: number; bytesSent: number; msgsRecv: number; bytesRecv: number }> {
    const jobs = new Map<number, { job: number; ranks: number; detached: number; msgsSent: number; bytesSent: number; msgsRecv: number; bytesRecv: number }>();
    for (const [w, a] of this.aliases) {
      const job = jobOf(a.id);
      let j = jobs.get(job);
      if (j === undefined) { j = { job, ranks: 0, detached: 0, msgsSent: 0, bytesSent: 0, msgsRecv: 0, bytesRecv: 0 }; jobs.set(job, j); }
      if (a.detached) j.detached++; else j.ranks++;
      const c = this.endpoints[w]?.lane?.counters.snapshot() as Record<string, number> | undefined;
      if (c !== undefined) {
        j.msgsSent += c['msgsSent'] ?? 0; j.bytesSent += c['bytesSent'] ?? 0;
        j.msgsRecv += c['msgsRecv'] ?? 0; j.bytesRecv += c['bytesRecv'] ?? 0;
      }
    }
    return [...jobs.values()];
  }

  /** An alias's endpoint: resolved at once from the addresses its job's root sent, over the inter-job rails. */
  private aliasEndpoint(world: number): ProtoEndpoint {
    const a = this.aliases.get(world)!;
    const ep = new ProtoEndpoint(world, a.id, this.params.eagerCredits, this.params.sendBuffer);
    this.endpoints[world] = ep;
    if (a.detached) {
      ep.failure = new RailcommError(ErrorCode.PEER_FAILED, `${this.nameOf(world)}: its job was disconnected`);
      return ep;
    }
    const plans = this.lanes.plan(this.interRails(), a.addrs);
    if (plans.length === 0) {
      ep.failure = new RailcommError(ErrorCode.NO_RAIL, `no rail reaches ${this.nameOf(world)}: it offers ${Object.entries(a.addrs).map(([k, v]) => `${k} ${v.join(' ')}`).join(', ') || 'nothing'}, this rank has ${this.interRails().map((r) => r.name).join(', ') || 'no tcp or udp rail'}${whyNoRail(this.interRails(), a.addrs)}`);
      return ep;
    }
    this.bind(ep, plans.length === 1 ? plans[0]!.rail.rail.endpoint(ep.id, plans[0]!.address) : this.lanes.multi(ep, plans, null));
    return ep;
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

/** Why the rails that share a component with the peer's addresses do not reach them: '' or '; ofi: why, ...'. */
function whyNoRail(rails: readonly Rail[], addrs: Readonly<Record<string, readonly string[]>>): string {
  const why: string[] = [];
  for (const r of rails) {
    if (r.whyNot === undefined) continue;
    for (const address of addrs[r.component] ?? []) {
      const w = r.whyNot(address);
      if (w !== null && !why.includes(`${r.component}: ${w}`)) why.push(`${r.component}: ${w}`);
    }
  }
  return why.length === 0 ? '' : `; ${why.join('; ')}`;
}
