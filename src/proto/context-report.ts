// What a protocol context tells about itself: the protocols chosen per peer
// (RAILCOMM_PROTO_INFO) and the counters per rail, per peer and per connected
// job (--stats, comm.stats()). Cold paths, split from context.ts.

import type { Rail } from '../rail/api.js';
import { formatId } from '../core/ids.js';
import type { LaunchInfo } from '../boot/launch-env.js';
import type { ProtoEndpoint } from './endpoint.js';
import type { PointToPoint } from './p2p.js';
import { MultiLane } from './lanes/multi-lane.js';
import type { InterJobs } from './inter-job.js';

/** What the counters are read from. */
export interface StatsHost {
  readonly launch: LaunchInfo;
  readonly rails: readonly Rail[];
  readonly p2p: PointToPoint;
  connectedJobs(): ReturnType<InterJobs['connectedJobs']>;
}

/** The size ranges and the protocol each uses to this peer, on stderr (its lane was just bound). */
export function printProtoInfo(rank: number, ep: ProtoEndpoint): void {
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
  process.stderr.write(`[railcomm ${rank}] protocols to rank ${ep.rank}:\n${rows.join('\n')}\n`);
}

/** Counters per rail and per peer (for --stats and tests). */
export function contextStats(ctx: StatsHost, endpoints: ReadonlyArray<ProtoEndpoint | undefined>): Record<string, unknown> {
  const rails: Record<string, Record<string, number>> = {};
  for (const r of ctx.rails) rails[r.name] = r.counters.snapshot();
  const peers: Record<string, Record<string, number>> = {};
  for (const ep of endpoints) {
    if (ep === undefined || ep.lane === null) continue;
    const p: Record<string, unknown> = ep.lane.counters.snapshot();
    if (ep.lane instanceof MultiLane) { p['lanes'] = ep.lane.laneStats(); p['resends'] = ep.lane.resends + 0; }
    if (ep.laneRx !== null) p['duplicatesDropped'] = ep.laneRx.duplicates;
    // Another job's rank as job:rank (a world index past this job means nothing to a reader).
    peers[ep.rank < ctx.launch.size ? String(ep.rank) : formatId(ep.id)] = p as Record<string, number>;
  }
  // Connected jobs (ports, spawn) by job id: their ranks and the traffic with them.
  const jobs: Record<string, Record<string, number>> = {};
  for (const { job, ...j } of ctx.connectedJobs()) jobs[String(job)] = j;
  return { rank: ctx.launch.rank, rails, peers, ...(Object.keys(jobs).length > 0 ? { jobs } : {}), protocol: ctx.p2p.snapshot(), singleCopy: ctx.p2p.ipcStates(), ...(ctx.p2p.device.used ? { cuda: ctx.p2p.device.snapshot() } : {}) };
}
