// `railcomm info`: the outcome of each context initialisation step on this
// machine (components, devices, rails, capabilities) and, with --params, every
// parameter with its default, current value and meaning.

import { Context } from '../proto/context.js';
import { describeEnvSettings, describeParams, resolveParams, type Params } from '../core/params.js';
import { COMPONENTS } from '../rail/components.js';
import { globToRegExp } from '../proto/rail-select.js';
import { detectLaunch } from '../boot/launch-env.js';
import type { LaunchInfo } from '../boot/launch-env.js';
import { loadPmix, pmixWhy } from '../boot/pmix.js';
import { loadNative, nativeOrigin, nativeWhy } from '../native/addon.js';
import { cudaReport } from '../cuda/api.js';

interface PmixReport { available: boolean; why: string; launchedUnder: boolean; used: boolean; detail: string }

/**
 * Whether this build has PMIx and, when the launcher runs a PMIx server for
 * this process, connect to it once (PMIx_Init, then PMIx_Finalize) to show it works.
 */
async function pmixReport(launch: LaunchInfo): Promise<PmixReport> {
  const mod = loadPmix();
  const base = { available: mod !== null, why: pmixWhy(), launchedUnder: launch.pmix !== undefined };
  if (launch.pmix === undefined) return { ...base, used: false, detail: 'not started under PMIx (no PMIX_NAMESPACE, PMIX_RANK and PMIX_SERVER_URI* for this rank)' };
  if (launch.kv !== undefined) return { ...base, used: false, detail: "railcomm run's service wins over PMIx" };
  if (mod === null) {
    return { ...base, used: false, detail: launch.master !== undefined ? `started under PMIx, but the module is unavailable: init() uses MASTER_ADDR:MASTER_PORT` : 'started under PMIx, but the module is unavailable and MASTER_ADDR/MASTER_PORT are not set: init() fails' };
  }
  try {
    const id = mod.init();
    await mod.finalize();
    launch.wireup = `PMIx (namespace ${id.namespace}, ${id.version.split(' (')[0]})`;
    return { ...base, used: true, detail: `started under PMIx: connected to the launcher's server (namespace ${id.namespace}, rank ${id.rank} of ${id.size}, ${id.localSize} on this host); init() wires up through it` };
  } catch (e) {
    return { ...base, used: false, detail: `started under PMIx, but PMIx_Init failed: ${(e as Error).message}` };
  }
}

/**
 * The lanes a rank here would build (multirail, proto/lanes): to a rank on
 * this host, the fastest rail alone; to one on another host, a lane per
 * network device in a subnet the peer shares, per network rail.
 */
function laneLines(ctx: Context, params: Params): string[] {
  const avail = new Set(ctx.rails.map((r) => r.component));
  const local = ['shm', 'tcp'].find((c) => avail.has(c)) ?? 'tcp';
  const out = [`lanes (multirail: RAILCOMM_MAX_EAGER_RAILS=${params.maxEagerRails}, RAILCOMM_MAX_RNDV_RAILS=${params.maxRndvRails}, RAILCOMM_LANE_TIMEOUT=${params.laneTimeout} ms):`,
    `   to a rank on this host: ${local} alone${local === 'shm' ? '' : ' (no shm here)'}`];
  // The rails this rank uses (RAILCOMM_RAILS) on the devices RAILCOMM_TCP_DEVICES allows (rail-select.ts step 5).
  const globs = params.tcpDevices.split(',').map((x) => x.trim()).filter(Boolean).map(globToRegExp);
  const net: string[] = [];
  for (const c of COMPONENTS) {
    if (!['tcp', 'udp'].includes(c.name) || !avail.has(c.name) || !c.available().ok) continue;
    const seen = new Set<string>();
    for (const d of c.queryDevices(params)) {
      if (d.kind !== 'network' || seen.has(d.name) || (globs.length > 0 && !globs.some((g) => g.test(d.name)))) continue;
      seen.add(d.name);
      net.push(`${c.name} on ${d.name} (${d.notes ?? d.address ?? ''})`);
    }
  }
  out.push(`   to a rank on another host: a lane per device in a subnet it shares, of: ${net.join('; ') || 'none (no network device)'}`,
    '   eager traffic on the fastest; rendezvous data striped by bandwidth over lanes on distinct devices; the others stand by for failover');
  return out;
}

export async function infoCommand(argv: string[]): Promise<number> {
  const showParams = argv.includes('--params');
  const json = argv.includes('--json');
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write('railcomm info [--params] [--json]: components, devices, rails and capabilities on this machine; --params lists every parameter\n');
    return 0;
  }
  const launch = detectLaunch();
  const pmix = await pmixReport(launch);
  const ctx = await Context.create({ launch, kv: null, probeAll: true });
  const params = resolveParams();
  try {
    if (json) {
      const native = { available: loadNative() !== null, why: nativeWhy(), origin: nativeOrigin() };
      const gpu = cudaReport();
      process.stdout.write(JSON.stringify({ launcher: { name: launch.launcher, why: launch.why }, native, pmix, cuda: gpu, steps: ctx.report, params: showParams ? describeParams(params) : undefined, environment: showParams ? describeEnvSettings() : undefined }, null, 2) + '\n');
      return 0;
    }
    const out: string[] = [];
    out.push(`railcomm on node ${process.version}, ${process.platform}/${process.arch}`);
    out.push(`launcher: ${launch.launcher} (${launch.why})`);
    out.push(`native: ${loadNative() !== null ? 'available' : 'unavailable'} (${nativeWhy()})`);
    out.push(`pmix: ${pmix.available ? 'available' : 'unavailable'} (${pmix.why}); ${pmix.detail}`);
    // GPU memory (src/cuda): the driver loaded or why not, its devices, and whether CUDA IPC can join them.
    const gpu = cudaReport();
    out.push(`cuda: ${gpu.lines[0]}`, ...gpu.lines.slice(1).map((l) => `   ${l}`));
    for (const s of ctx.report) {
      out.push('', `${s.step}. ${s.title}`);
      for (const l of s.lines) out.push(`   ${l}`);
    }
    out.push('', ...laneLines(ctx, params));
    out.push('', `other jobs (openPort/accept/connect, spawn): ${ctx.interJobSummary()}`);
    // The counters each rail keeps (zero here: this process moved nothing);
    // `railcomm run --stats` prints them per rank at finalize.
    const rails = ctx.stats()['rails'] as Record<string, Record<string, number>>;
    out.push('', 'rail counters (per rank at finalize with --stats):');
    for (const [name, c] of Object.entries(rails)) out.push(`   ${name}: ${Object.entries(c).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    if (showParams) {
      out.push('', 'parameters (init() options win over RAILCOMM_* variables, which win over defaults):');
      for (const p of describeParams(params)) {
        out.push(`  ${p.name} = ${p.value} (default ${p.def || "''"}, ${p.kind})`, `      ${p.doc}`);
      }
      out.push('', 'read from the environment only (not through init() options):');
      for (const e of describeEnvSettings()) {
        out.push(`  ${e.name} = ${e.value ?? '(unset)'} (default ${e.def || '(unset)'}, read by ${e.readBy})`, `      ${e.doc}`);
      }
    }
    process.stdout.write(out.join('\n') + '\n');
    return 0;
  } finally {
    await ctx.close();
  }
}
