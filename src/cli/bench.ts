// `railcomm bench latency|bw|...`: starts a job of N ranks (2 by default) running
// the benchmark rank program, and prints its results as a table or JSON; with
// several kinds or --rails, one job each; --compare adds the baselines, --plot
// and --html draw them; progress goes to stderr. --report: see bench-report.ts.

import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { KINDS, isColl, isRma, runRailcomm, benchDir, mpiReady, baselinesFor, type BenchJson, type RailcommSpec } from './bench-runs.js';
import { panelsFor, sideBySide, uniqueNames, type NamedResult } from './bench-panels.js';
import { plotHtml, plotSvg } from './plot.js';
import { Progress } from './progress.js';
import { SYNC_ENV } from '../bench/progress.js';
import { reportCommand } from './bench-report.js';

const COLL_SIZES = '8,64,1024,8192,65536,262144,1048576';
const DEFAULT_SIZES: Record<string, string> = {
  latency: '0,1,8,64,512,4096,16384,65536,262144,1048576,4194304',
  bw: '8,1024,16384,65536,262144,1048576,4194304',
  allreduce: COLL_SIZES, bcast: COLL_SIZES, allgather: COLL_SIZES, alltoall: COLL_SIZES,
  put: '8,1024,65536,1048576,4194304', get: '8,1024,65536,1048576,4194304', atomic: '8',
};

const USAGE = `railcomm bench [KIND[,KIND...]] [-n N] [--threads] [--rails LIST]... [--sync[=both]] [--sizes LIST] [--iters N] [--window N] [--json]
                [--compare[=NAMES]] [--plot FILE.svg] [--html FILE.html] [--quiet]
railcomm bench --report [--rounds N] [--quick] [--out PREFIX] ...   (railcomm bench --report --help)
  KIND: (default latency,bw) latency, bw, allreduce, bcast, allgather, alltoall, put, get, atomic, wireup
  --threads: the ranks are worker threads of one process (tbsm rail)
  --sync:    through the synchronous calls (sendSync/recvSync, allreduceSync, bcastSync,
             allgatherSync; rails self, tbsm, shm, ofi); --sync=both: each job async, then sync
  --rails:   rails the ranks use (RAILCOMM_RAILS); given more than once, one job per value,
             e.g. --rails shm --rails tcp --rails udp (tbsm: thread ranks)
  latency:   half round trip between ranks 0 and 1 (osu_latency style), microseconds
  bw:        windows of nonblocking sends then an ack (osu_bw style), MB/s = 10^6 bytes/s
  allreduce, bcast, allgather, alltoall: average microseconds per call over the ranks
             (osu_allreduce style); sizes in bytes (allreduce: doubles, size/8 of them)
  put, get:  rank 0 on rank 1's window under a shared lock: latency of one put (get) completed at the
             target: testFlush, and an awaited flush only when needed; then the same awaiting the
             flush (put), and awaiting the operation's own promise too (put: and the flush),
             and bandwidth of windows of 64 operations then a flush (osu_put_latency / osu_get_bw style)
  atomic:    fetch-and-op (sum, i64) latency and rate, and compare-and-swap latency
  wireup:    ms from a rank's start until it can exchange messages with all (init + barrier)
  --compare: also run the baselines of the repository's bench/ folder on the same sizes, after the
             railcomm jobs (latency, bw: Open MPI vader for shm/tbsm, Open MPI tcp and raw Node tcp
             for tcp/udp, raw Node dgram for udp latency; collectives: Open MPI vader);
             --compare=all, or a list of ompi-vader, ompi-tcp, raw-node-tcp, raw-node-udp
  --plot F:  write an SVG of each measure against message size (log-log), a line per rail and baseline
  --html F:  the same picture and its numbers as an HTML page
  --quiet:   no progress on stderr (by default a line per size, or one updating line on a terminal)
  --json:    one JSON line per job (and per baseline) on stdout`;

const BASELINE_NAMES = ['ompi-vader', 'ompi-tcp', 'raw-node-tcp', 'raw-node-udp'];

/** The baselines that suit the rails measured (by the rail that carried the traffic). */
function defaultBaselines(kind: string, railsSeen: string[]): string[] {
  const rails = railsSeen.map((r) => r.split(/[: ]/)[0]!);
  const names = new Set<string>();
  if (isColl(kind)) { names.add('ompi-vader'); return [...names]; }
  for (const r of rails) {
    if (r === 'shm' || r === 'tbsm' || r === 'self') names.add('ompi-vader');
    if (r === 'tcp' || r === 'udp') { names.add('ompi-tcp'); names.add('raw-node-tcp'); }
    if (r === 'udp' && kind === 'latency') names.add('raw-node-udp');
  }
  return [...names];
}

interface Parsed {
  kinds: string[];
  np: number;
  rails: Array<string | undefined>;
  sizes: string;
  iters: number;
  window: number;
  json: boolean;
  threads: boolean;
  /** Run each job through the async calls, the synchronous ones, or both (in that order). */
  modes: boolean[];
  compare: string[] | 'auto' | null;
  plot?: string;
  html?: string;
  quiet: boolean;
}

class Usage extends Error {}

function parse(argv: string[]): Parsed | 'help' {
  const p: Parsed = { kinds: [], np: 2, rails: [], sizes: '', iters: 2000, window: 64, json: false, threads: false, modes: [false], compare: null, quiet: false };
  let kindText = '';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const a = eq > 0 ? arg.slice(0, eq) : arg;
    const inline = eq > 0 ? arg.slice(eq + 1) : undefined;
    const val = (): string => {
      if (inline !== undefined) return inline;
      const v = argv[++i];
      if (v === undefined) throw new Usage(`${a} needs a value`);
      return v;
    };
    if (a === '-n' || a === '--np') p.np = Number(val());
    else if (a === '--rails') p.rails.push(val());
    else if (a === '--sizes') p.sizes = val();
    else if (a === '--iters') p.iters = Number(val());
    else if (a === '--window') p.window = Number(val());
    else if (a === '--json') p.json = true;
    else if (a === '--threads') p.threads = true;
    else if (a === '--sync') {
      const v = eq > 0 ? arg.slice(eq + 1) : '';
      if (v !== '' && v !== 'both') throw new Usage(`--sync takes no value or =both, got '${v}'`);
      p.modes = v === 'both' ? [false, true] : [true];
    }
    else if (a === '--quiet' || a === '-q') p.quiet = true;
    else if (a === '--plot') p.plot = val();
    else if (a === '--html') p.html = val();
    else if (a === '--compare') {
      if (inline === undefined || inline === '') p.compare = 'auto';
      else if (inline === 'all') p.compare = [...BASELINE_NAMES];
      else {
        p.compare = inline.split(',');
        const bad = p.compare.filter((n) => !BASELINE_NAMES.includes(n));
        if (bad.length > 0) throw new Usage(`--compare knows ${BASELINE_NAMES.join(', ')} (or all), not ${bad.join(', ')}`);
      }
    } else if (a === '-h' || a === '--help') return 'help';
    else if (!kindText && !a.startsWith('-')) kindText = a;
    else throw new Usage(`unexpected argument '${arg}'`);
  }
  // No kind: the two figures people ask first (half round trip and bandwidth between 2 ranks).
  p.kinds = (kindText === '' ? 'latency,bw' : kindText).split(',').filter(Boolean);
  if (p.kinds.length === 0 || !p.kinds.every((k) => (KINDS as readonly string[]).includes(k))) throw new Usage(`choose one of ${KINDS.join(', ')}`);
  const coll = p.kinds.every((k) => isColl(k));
  if (!Number.isInteger(p.np) || p.np < (coll ? 1 : 2) || !Number.isInteger(p.iters) || p.iters < 1 || !Number.isInteger(p.window) || p.window < 1) {
    throw new Usage(`-n must be >= ${coll ? 1 : 2}, --iters and --window >= 1`);
  }
  if (p.sizes && !p.sizes.split(',').every((s) => /^\d+$/.test(s))) throw new Usage('--sizes takes byte counts separated by commas');
  if (p.rails.length === 0) p.rails.push(undefined);
  return p;
}

/** The table `railcomm bench KIND` has always printed for one job (scripts may read it). */
function printTable(kind: string, data: BenchJson, np: number, title?: string): void {
  process.stdout.write(title ?? `# railcomm ${data.benchmark}, rails ${data.rails}, ${np} ranks\n`);
  const s = (v: unknown): string => (v === undefined ? '-' : String(v));
  if (kind === 'wireup') {
    const w = data as unknown as { ranks: number; rails: string; maxMs: number; medianMs: number };
    process.stdout.write(`slowest rank ready ${w.maxMs} ms after its start (median ${w.medianMs} ms), ${w.ranks} ranks, rails ${w.rails}\n`);
  } else if (isColl(kind)) {
    process.stdout.write(`${'size'.padStart(10)} ${'avg us'.padStart(10)}\n`);
    for (const r of data.results) process.stdout.write(`${s(r['size']).padStart(10)} ${s(r['usec']).padStart(10)}\n`);
  } else if (isRma(kind)) {
    const cols = kind === 'atomic' ? ['op', 'usec', 'usec_median', 'ops_per_sec'] : kind === 'put' ? ['size', 'usec', 'usec_median', 'usec_median_flush', 'usec_median_awaited', 'mbps'] : ['size', 'usec', 'usec_median', 'usec_median_awaited', 'mbps'];
    const heads = kind === 'atomic' ? ['op', 'avg us', 'median us', 'ops/s'] : kind === 'put' ? ['size', 'avg us', 'median us', 'await flush us', 'await both us', 'MB/s'] : ['size', 'avg us', 'median us', 'await get us', 'MB/s'];
    process.stdout.write(heads.map((c) => c.padStart(16)).join(' ') + '\n');
    for (const r of data.results) process.stdout.write(cols.map((c) => s(r[c]).padStart(16)).join(' ') + '\n');
  } else if (kind === 'latency') {
    const cols = ['size', 'usec', 'usec_median', 'usec_p90', 'usec_p99'];
    process.stdout.write(['size', 'avg us', 'median us', 'p90 us', 'p99 us'].map((c) => c.padStart(10)).join(' ') + '\n');
    for (const r of data.results) process.stdout.write(cols.map((c) => s(r[c]).padStart(10)).join(' ') + '\n');
  } else {
    process.stdout.write(`${'size'.padStart(10)} ${'MB/s'.padStart(10)}\n`);
    for (const r of data.results) process.stdout.write(`${s(r['size']).padStart(10)} ${s(r['mbps']).padStart(10)}\n`);
  }
}

export async function benchCommand(argv: string[]): Promise<number> {
  if (argv.includes('--report')) return reportCommand(argv.filter((a) => a !== '--report'));
  let p: Parsed | 'help';
  try {
    p = parse(argv);
  } catch (e) {
    if (!(e instanceof Usage)) throw e;
    process.stderr.write(`railcomm bench: ${e.message}\n${USAGE}\n`);
    return 2;
  }
  if (p === 'help') { process.stdout.write(USAGE + '\n'); return 0; }
  const progress = new Progress(p.quiet ? null : process.stderr);
  const results: NamedResult[] = [];
  let failed = 0;
  try {
    for (const kind of p.kinds) {
      const sizes = p.sizes || DEFAULT_SIZES[kind] || '8';
      const railsSeen: string[] = [];
      for (const rails of p.rails) for (const sync of p.modes) {
        // Thread ranks are the only way to the tbsm rail.
        const threads = p.threads || rails === 'tbsm';
        const spec: RailcommSpec = { kind, np: p.np, threads, sizes, iters: p.iters, window: p.window, ...(rails !== undefined && rails !== 'tbsm' ? { rails } : {}), ...(sync ? { env: { [SYNC_ENV]: '1' } } : {}) };
        progress.begin(`${kind}${rails !== undefined ? ` --rails ${rails}` : threads ? ' --threads' : ''}${sync ? ' --sync' : ''}, ${p.np} ranks`);
        const out = await runRailcomm(spec, progress);
        if (out.json === null) {
          progress.end('failed');
          process.stderr.write(`${out.error}\n`);
          failed ||= out.code;
          continue;
        }
        progress.end();
        railsSeen.push(out.json.rails);
        results.push({ name: `railcomm ${out.json.rails}`, baseline: false, json: out.json });
        if (p.json) process.stdout.write(out.line + '\n');
      }
      if (p.compare === null) continue;
      const dir = benchDir();
      if (dir === null) { progress.note('--compare needs the railcomm repository (its bench/ folder is not in the npm package)'); continue; }
      const wanted = p.compare === 'auto' ? defaultBaselines(kind, railsSeen) : p.compare;
      const mpiWhy = wanted.some((n) => n.startsWith('ompi-')) ? mpiReady(dir, progress) : null;
      if (mpiWhy !== null) progress.note(`no Open MPI baseline: ${mpiWhy}`);
      for (const b of baselinesFor(kind, sizes, p.np, dir, mpiWhy === null).filter((x) => wanted.includes(x.name))) {
        progress.begin(`${kind}, baseline ${b.name}`);
        const r = await b.run();
        progress.end(r.json.length > 0 ? 'done' : 'failed');
        if (r.error) progress.note(`${b.name}: ${r.error}`);
        for (const j of r.json) {
          results.push({ name: j.rails, baseline: true, json: j });
          if (p.json) process.stdout.write(JSON.stringify(j) + '\n');
        }
      }
    }
  } finally {
    progress.close();
  }
  const named = uniqueNames(results);
  if (!p.json) {
    if (named.length === 1) printTable(named[0]!.json.benchmark, named[0]!.json, p.np);
    else {
      for (const r of named) printTable(r.json.benchmark, r.json, p.np, r.baseline ? `# baseline ${r.name} ${r.json.benchmark}\n` : undefined);
      process.stdout.write(sideBySide(named));
    }
  }
  if (p.plot !== undefined || p.html !== undefined) {
    const panels = panelsFor(named);
    if (panels.length === 0) {
      process.stderr.write('railcomm bench: nothing to plot (atomic and wireup have no size axis); no file written\n');
      return failed;
    }
    const cpu = os.cpus()[0]?.model.trim() ?? process.arch;
    const opts = { title: `railcomm bench ${p.kinds.join(', ')}`, subtitle: [`${p.np} ranks, ${os.availableParallelism()} CPUs (${cpu}), Node ${process.version}, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`] };
    if (p.plot !== undefined) writeFileSync(p.plot, plotSvg(panels, opts));
    if (p.html !== undefined) writeFileSync(p.html, plotHtml(panels, opts));
  }
  return failed;
}
