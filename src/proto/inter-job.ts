// Other jobs' ranks (ports, spawn) as this rank knows them: world indices
// past this job's (aliases), the keys of connected jobs, the rails that reach
// them and the endpoints resolved from the addresses their roots sent.

import type { Rail, RailEndpoint, RailEnv } from '../rail/api.js';
import { COMPONENTS } from '../rail/components.js';
import type { Params } from '../core/params.js';
import type { Logger } from '../core/log.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import { endpointId, formatId, jobOf } from '../core/ids.js';
import type { LaunchInfo } from '../boot/launch-env.js';
import { ProtoEndpoint } from './endpoint.js';
import type { PointToPoint } from './p2p.js';
import type { RmaEngine } from './rma/engine.js';
import type { Lanes } from './lanes/lanes.js';
import { MultiLane } from './lanes/multi-lane.js';
import { globToRegExp, whyNoRail } from './rail-select.js';

/** Rails that reach ranks of other jobs. */
export const INTER_JOB_RAILS: readonly string[] = ['tcp', 'udp'];

/** What the inter-job part needs of the context. */
export interface InterJobHost {
  readonly params: Params;
  readonly launch: LaunchInfo;
  readonly log: Logger;
  /** The open rails: inter-job rails opened later are added here. */
  readonly rails: Rail[];
  readonly lanes: Lanes;
  readonly p2p: PointToPoint;
  readonly rma: RmaEngine;
}

/** Another job's rank as this rank knows it (ports, spawn). */
interface Alias {
  readonly id: bigint;
  addrs: Record<string, string[]>;
  /** Disconnected: its failures no longer concern this job. */
  detached: boolean;
}

// Another job's ranks get world indices past this job's (size ..), so that
// groups, matching, rendezvous, multirail and failures work on them as on
// any peer. An alias stands for a 64-bit endpoint id (job << 32 | rank) and
// the rail addresses the roots exchanged; it is resolved from those, not
// through the wire-up service, and only over the rails that reach another
// job (tcp, udp: shm and tbsm name their segments and peers per job).
export class InterJobs {
  private readonly host: InterJobHost;
  /** The context's endpoints by world index: an alias's goes there when first used. */
  private readonly endpoints: Array<ProtoEndpoint | undefined>;
  /** The context's bind: a lane for an endpoint. */
  private readonly bind: (ep: ProtoEndpoint, lane: RailEndpoint) => void;
  private readonly aliases = new Map<number, Alias>();
  private readonly aliasOf = new Map<bigint, number>();
  /**
   * World indices in use, the next alias: this job's size at first. A plain
   * field: Context.worldSize reads it where a message's claimed source is checked.
   */
  worldSize: number;
  /** Key per connected job, both sides derived from a port's secret and both job ids (RailEnv.keyFor). */
  private readonly pairKeys = new Map<number, string>();

  constructor(host: InterJobHost, endpoints: Array<ProtoEndpoint | undefined>, bind: (ep: ProtoEndpoint, lane: RailEndpoint) => void) {
    this.host = host;
    this.endpoints = endpoints;
    this.bind = bind;
    this.worldSize = host.launch.size;
  }

  /** Whether a world index is an alias (another job's rank). */
  isAlias(world: number): boolean {
    return this.aliases.has(world);
  }

  /** The alias of another job's rank by its id, or -1 (not connected, or detached). */
  worldOf(id: bigint): number {
    return this.aliasOf.get(id) ?? -1;
  }

  /** The key both jobs derived for the pair, or null (RailEnv.keyFor). */
  keyFor(job: number): string | null {
    return this.pairKeys.get(job) ?? null;
  }

  /**
   * Open what another job needs to reach this rank (ports, spawn): a rail of
   * an inter-job component (tcp unless RAILCOMM_RAILS names udp only) on every
   * device, loopback included, unless one is open there already. A job of one
   * rank, or of threads, opened none at init.
   */
  async openRails(env: RailEnv): Promise<void> {
    const kinds = this.interKinds();
    if (kinds.length === 0) throw new RailcommError(ErrorCode.NO_RAIL, `RAILCOMM_RAILS=${this.host.params.rails} names no rail that reaches another job: add tcp (or udp)`);
    const globs = this.host.params.tcpDevices.split(',').map((g) => g.trim()).filter(Boolean).map(globToRegExp);
    for (const c of COMPONENTS) {
      if (!kinds.includes(c.name) || !c.available().ok) continue;
      const names = new Set<string>();
      for (const d of c.queryDevices(this.host.params)) {
        if (names.has(d.name) || (globs.length > 0 && !globs.some((r) => r.test(d.name)))) continue;
        names.add(d.name);
        if (this.host.rails.some((r) => r.component === c.name && r.device.name === d.name)) continue;
        this.host.rails.push(await c.open(d, env));
        this.host.log.debug(`opened ${c.name} on ${d.name} for other jobs`);
      }
    }
  }

  /**
   * The rails other jobs are reached on: tcp (one ordered stream per pair,
   * whose end tells at once that a rank died), or those of tcp and udp that
   * RAILCOMM_RAILS names.
   */
  private interKinds(): readonly string[] {
    const wanted = this.host.params.rails.split(',').map((s) => s.trim()).filter(Boolean);
    return wanted.length === 0 ? ['tcp'] : INTER_JOB_RAILS.filter((c) => wanted.includes(c));
  }

  /** For railcomm info: how this rank would reach other jobs. */
  interJobSummary(): string {
    const kinds = this.interKinds();
    if (kinds.length === 0) return `none: RAILCOMM_RAILS=${this.host.params.rails} names neither tcp nor udp, so openPort, accept, connect and spawn fail with ERR_NO_RAIL`;
    return `over ${kinds.join(' and ')} on every device${this.host.params.tcpDevices !== '' ? ` matching RAILCOMM_TCP_DEVICES=${this.host.params.tcpDevices}` : ''}, opened when a port, accept, connect or spawn first needs it (loopback between jobs on one host); connected jobs show under 'jobs' in --stats and comm.stats(), their ranks as job:rank under 'peers'`;
  }

  private interRails(): Rail[] {
    const kinds = this.interKinds();
    return this.host.rails.filter((r) => kinds.includes(r.component));
  }

  /** This rank's addresses on the rails that reach other jobs (component -> addresses). */
  interJobAddresses(): Record<string, string[]> {
    const addrs: Record<string, string[]> = {};
    for (const r of this.interRails()) (addrs[r.component] ??= []).push(r.address());
    return addrs;
  }

  /** Rails (tcp, udp) accept connections from ranks of `job`, which prove `key`. */
  addPairKey(job: number, key: string): void {
    if (job === this.host.launch.jobId) throw new RailcommError(ErrorCode.BOOT, `the other job has this job's id (${job}): two jobs with one id cannot be told apart; start them separately (railcomm run gives each a random id)`);
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
      const w = this.worldSize++;
      this.aliases.set(w, { id: m.id, addrs: m.addrs, detached: false });
      this.aliasOf.set(m.id, w);
      return w;
    });
  }

  /** The 64-bit id (job << 32 | rank) of a world index: this job's rank or an alias. */
  idOf(world: number): bigint {
    return world < this.host.launch.size ? endpointId(this.host.launch.jobId, world) : this.aliases.get(world)?.id ?? -1n;
  }

  /** How a world index reads in messages: `rank N` in this job, `rank job:rank` in another. */
  nameOf(world: number): string {
    const a = world >= this.host.launch.size ? this.aliases.get(world) : undefined;
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
        this.host.p2p.peerFailed(ep, e, true);
        this.host.rma.peerFailed(ep, e);
      }
      const lane = ep.lane;
      if (lane instanceof MultiLane) { this.host.lanes.forget(lane); lane.shutdown(); }
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
  aliasEndpoint(world: number): ProtoEndpoint {
    const a = this.aliases.get(world)!;
    const ep = new ProtoEndpoint(world, a.id, this.host.params.eagerCredits, this.host.params.sendBuffer);
    this.endpoints[world] = ep;
    if (a.detached) {
      ep.failure = new RailcommError(ErrorCode.PEER_FAILED, `${this.nameOf(world)}: its job was disconnected`);
      return ep;
    }
    const plans = this.host.lanes.plan(this.interRails(), a.addrs);
    if (plans.length === 0) {
      ep.failure = new RailcommError(ErrorCode.NO_RAIL, `no rail reaches ${this.nameOf(world)}: it offers ${Object.entries(a.addrs).map(([k, v]) => `${k} ${v.join(' ')}`).join(', ') || 'nothing'}, this rank has ${this.interRails().map((r) => r.name).join(', ') || 'no tcp or udp rail'}${whyNoRail(this.interRails(), a.addrs)}`);
      return ep;
    }
    this.bind(ep, plans.length === 1 ? plans[0]!.rail.rail.endpoint(ep.id, plans[0]!.address) : this.host.lanes.multi(ep, plans, null));
    return ep;
  }
}
