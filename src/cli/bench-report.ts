// `railcomm bench --report` (also `node bench/report.mjs`): every row of README's
// performance table, railcomm beside Open MPI and raw Node, interleaved round by
// round so machine noise hits all alike; writes Markdown, JSON and an SVG that
// say at which commit and on which machine they were measured.

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, resolve } from 'node:path';
import { startJob } from './run.js';
import { benchDir, jsonLines, mpiReady, mpirunArgs, runProgram, runRailcomm, type BenchJson, type RailcommSpec } from './bench-runs.js';
import { panelsFor, type NamedResult } from './bench-panels.js';
import { plotSvg } from './plot.js';
import { Progress } from './progress.js';
import { ROWS, type Row, type Side } from './report-rows.js';

const USAGE = `railcomm bench --report [--rounds N] [--quick] [--only GROUPS] [--no-mpi] [--out PREFIX] [--quiet]
(also: node bench/report.mjs ...) Reruns README's performance table: railcomm, Open MPI (bench/mpi,
built with make when missing) and raw Node (bench/raw-*.mjs), each benchmark once per round,
interleaved; writes PREFIX.md (the table), PREFIX.json (every run's figures) and PREFIX.svg
(latency and bandwidth against size, a line per rail and baseline), and prints the table.
  --rounds N     rounds (default 5); a cell is the median over them, beside the mean and the range
  --quick        fewer sizes and iterations, a 1 s idle wait, 100,000 heap messages: a smoke test
                 (--rounds 1 --quick takes a few minutes), not figures to cite
  --only GROUPS  some of: tcp, udp, tbsm, shm, idle, allreduce, rma, heap (comma-separated)
  --no-mpi       leave Open MPI out
  --out PREFIX   where the files go (default bench/results/report-<date>)
  --quiet        no progress on stderr
Needs a checkout of the repository (bench/ is not in the npm package) and a quiet machine.`;

export const GROUPS = ['tcp', 'udp', 'tbsm', 'shm', 'idle', 'allreduce', 'rma', 'heap'] as const;

interface Config {
  rounds: number;
  quick: boolean;
  groups: Set<string>;
  mpi: boolean;
  out: string;
  quiet: boolean;
}

/** A benchmark run once per round; its JSON lines are what the rows read. */
interface Measure {
  id: string;
  groups: string[];
  side: Side;
  label: string;
  /** Drawn in the SVG, named after the rail that carried it (railcomm) or the baseline's label. */
  plot?: boolean;
  run: (progress: Progress) => Promise<{ json: BenchJson[]; error?: string }>;
}

/** A JSON object without `results` (raw-udp, idle-cpu, heap) becomes one with itself as its only row. */
const asBench = (o: Record<string, unknown>, rails: string): BenchJson =>
  Array.isArray(o['results']) ? (o as BenchJson) : { benchmark: String(o['benchmark'] ?? o['bench'] ?? '?'), rails, results: [o as Record<string, number>] };

function railcommMeasure(spec: RailcommSpec) {
  return async (progress: Progress): Promise<{ json: BenchJson[]; error?: string }> => {
    const r = await runRailcomm(spec, progress);
    return r.json ? { json: [r.json] } : { json: [], error: r.error ?? 'failed' };
  };
}

/** A job of railcomm run (capture) whose ranks print one JSON line somewhere. */
function scriptJob(np: number, command: string[], rails: string | undefined, what: string) {
  return async (): Promise<{ json: BenchJson[]; error?: string }> => {
    const job = await startJob({ np, command, capture: true, timeoutSec: 600, ...(rails ? { rails } : {}) });
    const res = await job.wait();
    const lines = (res.outputs ?? []).flatMap((o) => o.stdout).filter((l) => l.startsWith('{'));
    if (res.code !== 0 || lines.length === 0) {
      const err = (res.outputs ?? []).flatMap((o) => o.stderr).slice(-3).join(' | ');
      return { json: [], error: `${what}: ${res.reason ?? 'exit ' + res.code}; ${err}` };
    }
    return { json: lines.map((l) => asBench(JSON.parse(l) as Record<string, unknown>, 'railcomm')) };
  };
}

function program(cmd: string, args: string[], rails: string) {
  return async (): Promise<{ json: BenchJson[]; error?: string }> => {
    const r = await runProgram(cmd, args);
    const json = jsonLines(r.stdout).map((j) => asBench(j as Record<string, unknown>, rails));
    return json.length > 0 ? { json } : { json, error: `${cmd} ${args.join(' ')}: exit ${r.code}; ${r.stderr.trim().split('\n').slice(-3).join(' | ')}` };
  };
}

/** Every measure of the report, in the order a round runs them. */
function measures(cfg: Config, dir: string): Measure[] {
  const q = cfg.quick;
  const LAT = q ? '8,65536' : '8,1024,16384,65536,262144,1048576,4194304';
  const BW = q ? '65536,1048576' : '1024,16384,65536,262144,1048576,4194304';
  const MIB = '1048576';
  const base = q ? 200 : 2000;
  const cIters = q ? ['--iters', '200'] : [];
  const bwIters = ['--iters', q ? '10' : '30'];
  const node = process.execPath;
  const rc = (kind: string, rails: string | undefined, sizes: string, extra: Partial<RailcommSpec> = {}): Measure['run'] =>
    railcommMeasure({ kind, np: 2, threads: rails === 'tbsm', sizes, iters: base, window: 64, ...(rails && rails !== 'tbsm' ? { rails } : {}), ...extra });
  const mpi = (btl: 'vader' | 'tcp', args: string[]): Measure['run'] => program('mpirun', [...mpirunArgs(btl), ...args], `ompi-${btl}`);
  const idleSecs = q ? '1' : '5';
  const heapMsgs = q ? '100000' : '1000000';
  const all: Measure[] = [
    { id: 'rc-tcp-lat', groups: ['tcp'], side: 'railcomm', label: 'railcomm latency, tcp', plot: true, run: rc('latency', 'tcp', LAT) },
    { id: 'raw-tcp-lat', groups: ['tcp'], side: 'raw', label: 'raw Node tcp ping-pong', plot: true, run: program(node, [`${dir}raw-tcp-pingpong.mjs`, '--sizes', LAT, '--json', ...cIters], 'raw-node-tcp') },
    { id: 'ompi-tcp-lat', groups: ['tcp'], side: 'openmpi', label: 'Open MPI latency, tcp', plot: true, run: mpi('tcp', [`${dir}mpi/pingpong`, 'latency', '--json', '--label', 'ompi-tcp', '--sizes', LAT, ...cIters]) },
    { id: 'rc-tcp-bw', groups: ['tcp'], side: 'railcomm', label: 'railcomm bandwidth, tcp', plot: true, run: rc('bw', 'tcp', BW, { iters: q ? 200 : 1200 }) },
    { id: 'raw-tcp-bw', groups: ['tcp'], side: 'raw', label: 'raw Node tcp stream', plot: true, run: program(node, [`${dir}raw-tcp-stream.mjs`, '--sizes', BW, '--json', ...bwIters], 'raw-node-tcp') },
    { id: 'ompi-tcp-bw', groups: ['tcp'], side: 'openmpi', label: 'Open MPI bandwidth, tcp', plot: true, run: mpi('tcp', [`${dir}mpi/pingpong`, 'bw', '--json', '--label', 'ompi-tcp', '--sizes', BW, ...bwIters]) },

    { id: 'rc-udp-lat', groups: ['udp'], side: 'railcomm', label: 'railcomm latency, udp', plot: true, run: rc('latency', 'udp', LAT) },
    { id: 'raw-udp-lat', groups: ['udp'], side: 'raw', label: 'raw Node dgram ping-pong, 8 B', run: program(node, [`${dir}raw-udp.mjs`, 'pingpong', '--size', '8', '--iters', q ? '1000' : '3000', '--json'], 'raw-node-udp') },
    { id: 'rc-udp-bw', groups: ['udp'], side: 'railcomm', label: 'railcomm bandwidth, udp', plot: true, run: rc('bw', 'udp', BW, { iters: q ? 50 : 300 }) },
    { id: 'raw-udp-intake', groups: ['udp'], side: 'raw', label: 'raw Node dgram intake, 60000 B', run: program(node, [`${dir}raw-udp.mjs`, 'intake', '--size', '60000', '--seconds', q ? '1' : '2', '--json'], 'raw-node-udp') },
    { id: 'rc-udp-bw-1', groups: ['udp'], side: 'railcomm', label: 'railcomm bandwidth, udp, 1% dropped', run: rc('bw', 'udp', MIB, { iters: q ? 30 : 200, env: { RAILCOMM_UDP_FAULTS: 'drop=0.01' } }) },
    { id: 'rc-udp-bw-5', groups: ['udp'], side: 'railcomm', label: 'railcomm bandwidth, udp, 5% dropped', run: rc('bw', 'udp', MIB, { iters: q ? 20 : 100, env: { RAILCOMM_UDP_FAULTS: 'drop=0.05' } }) },
    { id: 'rc-udp-mtu', groups: ['udp'], side: 'railcomm', label: 'railcomm bandwidth, udp, 1472-byte MTU', run: rc('bw', 'udp', MIB, { iters: q ? 20 : 100, env: { RAILCOMM_UDP_MTU: '1472' } }) },
    { id: 'raw-udp-intake-1472', groups: ['udp'], side: 'raw', label: 'raw Node dgram intake, 1472 B', run: program(node, [`${dir}raw-udp.mjs`, 'intake', '--size', '1472', '--seconds', q ? '1' : '2', '--json'], 'raw-node-udp') },

    { id: 'rc-tbsm-lat', groups: ['tbsm'], side: 'railcomm', label: 'railcomm latency, worker threads (tbsm)', plot: true, run: rc('latency', 'tbsm', LAT) },
    { id: 'rc-shm-lat', groups: ['shm'], side: 'railcomm', label: 'railcomm latency, shm', plot: true, run: rc('latency', 'shm', LAT) },
    { id: 'ompi-vader-lat', groups: ['tbsm', 'shm'], side: 'openmpi', label: 'Open MPI latency, vader', plot: true, run: mpi('vader', [`${dir}mpi/pingpong`, 'latency', '--json', '--label', 'ompi-vader', '--sizes', LAT, ...cIters]) },
    { id: 'rc-tbsm-bw', groups: ['tbsm'], side: 'railcomm', label: 'railcomm bandwidth, worker threads (tbsm)', plot: true, run: rc('bw', 'tbsm', BW) },
    { id: 'rc-shm-bw', groups: ['shm'], side: 'railcomm', label: 'railcomm bandwidth, shm', plot: true, run: rc('bw', 'shm', BW) },
    { id: 'ompi-vader-bw', groups: ['tbsm', 'shm'], side: 'openmpi', label: 'Open MPI bandwidth, vader', plot: true, run: mpi('vader', [`${dir}mpi/pingpong`, 'bw', '--json', '--label', 'ompi-vader', '--sizes', BW, ...bwIters]) },

    { id: 'rc-idle', groups: ['idle'], side: 'railcomm', label: `railcomm rank idle ${idleSecs} s in recv, shm`, run: scriptJob(2, [`${dir}idle-cpu.mjs`, idleSecs], 'shm', 'idle-cpu.mjs') },
    { id: 'ompi-idle', groups: ['idle'], side: 'openmpi', label: `Open MPI rank idle ${idleSecs} s in MPI_Recv, vader`, run: mpi('vader', [`${dir}mpi/idle`, idleSecs]) },

    { id: 'rc-allreduce', groups: ['allreduce'], side: 'railcomm', label: 'railcomm allreduce, 2 processes', plot: true, run: rc('allreduce', undefined, q ? '8,65536' : '8,65536,1048576') },
    { id: 'ompi-allreduce', groups: ['allreduce'], side: 'openmpi', label: 'Open MPI allreduce, vader', plot: true, run: mpi('vader', [`${dir}mpi/coll`, 'allreduce', '--json', '--label', 'ompi-vader', '--sizes', q ? '8,65536' : '8,65536,1048576', ...(q ? ['--iters', '100'] : [])]) },

    { id: 'rc-put', groups: ['rma'], side: 'railcomm', label: 'railcomm put', run: rc('put', undefined, '8,1048576') },
    { id: 'rc-get', groups: ['rma'], side: 'railcomm', label: 'railcomm get', run: rc('get', undefined, '8') },
    { id: 'rc-atomic', groups: ['rma'], side: 'railcomm', label: 'railcomm fetch-add', run: rc('atomic', undefined, '8') },
    // Open MPI's compare-and-swap can crash after the other tests printed (open-mpi/ompi#11349): their lines are kept.
    { id: 'ompi-osc', groups: ['rma'], side: 'openmpi', label: 'Open MPI one-sided, vader', run: mpi('vader', [`${dir}mpi/osc`, 'all', '-s', '8,1048576', '--json']) },

    { id: 'rc-heap', groups: ['heap'], side: 'railcomm', label: `railcomm heap over ${heapMsgs} messages`, run: scriptJob(2, [node, '--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64', `${dir}heap-flat.mjs`, heapMsgs], undefined, 'heap-flat.mjs') },
  ];
  return all.filter((m) => m.groups.some((g) => cfg.groups.has(g)) && (cfg.mpi || m.side !== 'openmpi'));
}

const sh = (cmd: string, args: string[], cwd?: string): string => {
  try { return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], ...(cwd ? { cwd } : {}) }).trim(); } catch { return ''; }
};

/** Commit, machine and software the figures belong to. */
function provenance(dir: string, mpi: boolean): Record<string, string | number> {
  const root = resolve(dir, '..');
  const dirty = sh('git', ['status', '--porcelain', '--untracked-files=no'], root).split('\n').filter(Boolean).length;
  return {
    commit: sh('git', ['rev-parse', 'HEAD'], root) || 'unknown (not a git checkout)',
    commitSubject: sh('git', ['log', '-1', '--format=%s'], root),
    changedFiles: dirty,
    date: new Date().toISOString(),
    nproc: Number(sh('nproc', [])) || os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    openmpi: mpi ? (sh('mpirun', ['--version']).split('\n')[0] ?? '') : 'not run',
    loadStart: os.loadavg().map((x) => x.toFixed(2)).join(' '),
  };
}

export interface Summary { values: number[]; median: number; mean: number; min: number; max: number }

export function median(xs: number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[n >> 1]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}

export function summarize(values: number[]): Summary {
  const f = values.filter(Number.isFinite);
  return { values, median: median(f), mean: f.length ? f.reduce((a, b) => a + b, 0) / f.length : NaN, min: f.length ? Math.min(...f) : NaN, max: f.length ? Math.max(...f) : NaN };
}

/** 3 significant digits below 100, whole numbers above; '-' for nothing. */
export function fmtNum(x: number): string {
  if (!Number.isFinite(x)) return '-';
  const a = Math.abs(x);
  if (a >= 100) return Math.round(x).toString();
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return Number(x.toPrecision(2)).toString();
}

type RoundData = Record<string, BenchJson[][]>;

interface RowResult { row: Row; railcomm: Summary; openmpi?: Summary; raw?: Summary; ratioOpenmpi?: number; ratioRaw?: number }

export function computeRows(rows: readonly Row[], data: RoundData, rounds: number): RowResult[] {
  const out: RowResult[] = [];
  const per = (pick: Row['railcomm'] | undefined): number[] | undefined =>
    pick && data[pick.id] ? Array.from({ length: rounds }, (_, r) => pick.get(data[pick.id]![r] ?? []) ?? NaN) : undefined;
  for (const row of rows) {
    const a = per(row.railcomm);
    if (!a) continue;
    const o = per(row.openmpi);
    const w = per(row.raw);
    // A row whose sizes this run left out (--quick) has nothing on any side.
    if (![a, o ?? [], w ?? []].some((xs) => xs.some(Number.isFinite))) continue;
    const ratio = (b: number[] | undefined): number | undefined => (b ? median(a.map((v, i) => v / b[i]!)) : undefined);
    const res: RowResult = { row, railcomm: summarize(a) };
    if (o) { res.openmpi = summarize(o); res.ratioOpenmpi = ratio(o)!; }
    if (w) { res.raw = summarize(w); res.ratioRaw = ratio(w)!; }
    out.push(res);
  }
  return out;
}

export function markdownTable(results: RowResult[]): string {
  const cell = (s?: Summary): string[] => (s ? [fmtNum(s.median), fmtNum(s.mean), s.values.length > 1 ? `${fmtNum(s.min)}-${fmtNum(s.max)}` : ''] : ['', '', '']);
  const lines = [
    '| figure | railcomm median | mean | range | Open MPI median | mean | range | raw Node median | mean | range | railcomm / Open MPI | railcomm / raw Node |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    const ratio = (x?: number): string => (x === undefined || !Number.isFinite(x) ? '' : `${x.toFixed(2)}x`);
    lines.push(`| ${r.row.label} | ${[...cell(r.railcomm), ...cell(r.openmpi), ...cell(r.raw), ratio(r.ratioOpenmpi), ratio(r.ratioRaw)].join(' | ')} |`);
  }
  return lines.join('\n') + '\n';
}

/** Per plotted measure and size, the median over rounds of its headline figures. */
function plotResults(ms: Measure[], data: RoundData): NamedResult[] {
  const out: NamedResult[] = [];
  for (const m of ms) {
    if (!m.plot) continue;
    const runs = (data[m.id] ?? []).map((js) => js[0]).filter((j): j is BenchJson => j !== undefined);
    if (runs.length === 0) continue;
    const sizes = [...new Set(runs.flatMap((j) => j.results.map((r) => r['size'])).filter((s): s is number => typeof s === 'number'))];
    const keys = ['usec', 'usec_median', 'mbps'];
    const results = sizes.map((size) => {
      const row: Record<string, number> = { size };
      for (const k of keys) {
        const v = median(runs.map((j) => j.results.find((r) => r['size'] === size)?.[k]).filter((x): x is number => typeof x === 'number'));
        if (Number.isFinite(v)) row[k] = v;
      }
      return row;
    });
    const rails = runs[0]!.rails;
    out.push({ name: m.side === 'railcomm' ? `railcomm ${rails}` : rails, baseline: m.side !== 'railcomm', json: { ...runs[0]!, results } });
  }
  return out;
}

function parseArgs(argv: string[]): Config | 'help' {
  const stamp = new Date().toISOString().slice(0, 16).replace(/[-:]/g, '').replace('T', '-');
  const cfg: Config = { rounds: 5, quick: false, groups: new Set(GROUPS), mpi: true, out: '', quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const a = eq > 0 ? arg.slice(0, eq) : arg;
    const val = (): string => {
      if (eq > 0) return arg.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--rounds') cfg.rounds = Number(val());
    else if (a === '--quick') cfg.quick = true;
    else if (a === '--only') {
      const gs = val().split(',').filter(Boolean);
      const bad = gs.filter((g) => !(GROUPS as readonly string[]).includes(g));
      if (bad.length > 0 || gs.length === 0) throw new Error(`--only takes some of ${GROUPS.join(', ')}${bad.length ? `, not ${bad.join(', ')}` : ''}`);
      cfg.groups = new Set(gs);
    } else if (a === '--no-mpi') cfg.mpi = false;
    else if (a === '--out') cfg.out = val();
    else if (a === '--quiet' || a === '-q') cfg.quiet = true;
    else if (a === '-h' || a === '--help') return 'help';
    else throw new Error(`unexpected argument '${arg}'`);
  }
  if (!Number.isInteger(cfg.rounds) || cfg.rounds < 1) throw new Error('--rounds must be a positive integer');
  const dir = benchDir();
  if (!cfg.out && dir) cfg.out = `${dir}results/report-${stamp}`;
  return cfg;
}

export async function reportCommand(argv: string[]): Promise<number> {
  let cfg: Config | 'help';
  try {
    cfg = parseArgs(argv);
  } catch (e) {
    process.stderr.write(`railcomm bench --report: ${(e as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (cfg === 'help') { process.stdout.write(USAGE + '\n'); return 0; }
  const dir = benchDir();
  if (dir === null) {
    process.stderr.write('railcomm bench --report: needs a checkout of the railcomm repository: its bench/ folder (baselines, Open MPI programs) is not in the npm package\n');
    return 2;
  }
  const progress = new Progress(cfg.quiet ? null : process.stderr);
  if (cfg.mpi) {
    const why = mpiReady(dir, progress);
    if (why !== null) { progress.note(`Open MPI left out: ${why}`); cfg.mpi = false; }
  }
  const prov = provenance(dir, cfg.mpi);
  const ms = measures(cfg, dir);
  const data: RoundData = Object.fromEntries(ms.map((m) => [m.id, []]));
  const errors: Array<{ round: number; measure: string; error: string }> = [];
  const t0 = performance.now();
  try {
    for (let r = 0; r < cfg.rounds; r++) {
      for (const m of ms) {
        progress.begin(`round ${r + 1}/${cfg.rounds}: ${m.label}`);
        let res: { json: BenchJson[]; error?: string };
        try {
          res = await m.run(progress);
        } catch (e) {
          res = { json: [], error: String((e as Error)?.message ?? e) };
        }
        progress.end(res.json.length > 0 ? 'done' : 'failed');
        if (res.error) {
          errors.push({ round: r + 1, measure: m.id, error: res.error });
          progress.note(`${m.id}: ${res.error.split('\n').slice(-3).join(' | ')}`);
        }
        data[m.id]!.push(res.json);
      }
    }
  } finally {
    progress.close();
  }
  const minutes = (performance.now() - t0) / 60000;
  const rows = computeRows(ROWS.filter((row) => cfg.groups.has(row.group)), data, cfg.rounds);
  const loadEnd = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  const command = `railcomm bench --report ${argv.join(' ')}`.trim();
  const head = [
    '# railcomm performance report',
    '',
    `Commit ${String(prov['commit']).slice(0, 12)} (${prov['commitSubject']})${prov['changedFiles'] ? `, with ${prov['changedFiles']} changed tracked files not committed` : ''}; ${String(prov['date']).slice(0, 16).replace('T', ' ')} UTC; ${cfg.rounds} interleaved round${cfg.rounds > 1 ? 's' : ''} in ${minutes.toFixed(1)} min${cfg.quick ? ' (--quick: fewer sizes and iterations, not figures to cite)' : ''}.`,
    `Machine: nproc ${prov['nproc']}, ${prov['cpu']}, ${prov['memoryGiB']} GiB, ${prov['kernel']}; Node ${prov['node']}; Open MPI: ${prov['openmpi']}; load average ${prov['loadStart']} at the start, ${loadEnd} at the end.`,
    `Command: \`${command}\``,
    '',
    'A cell is the median over the rounds of the figure each run reports (a latency run\'s median half round trip unless the row says average or batch-timed; MB/s = 10^6 bytes/s), then the mean over the rounds and the range; ratios are medians of the per-round ratios. Open MPI runs pml ob1 with btl self,vader (shared memory) or self,tcp over lo; raw Node is bench/raw-tcp-*.mjs and bench/raw-udp.mjs.',
    '',
  ];
  const md = head.join('\n') + '\n' + markdownTable(rows) + (errors.length > 0 ? `\nFailures (${errors.length}): ${errors.map((e) => `round ${e.round} ${e.measure}`).join(', ')}; details in the JSON.\n` : '');
  const panels = panelsFor(plotResults(ms, data));
  const svg = plotSvg(panels, {
    title: 'railcomm against Open MPI and raw Node, 2 ranks on one host',
    subtitle: [
      `commit ${String(prov['commit']).slice(0, 12)}${prov['changedFiles'] ? ' (+ uncommitted changes)' : ''}, ${String(prov['date']).slice(0, 10)}, ${cfg.rounds} round${cfg.rounds > 1 ? 's' : ''} (medians)${cfg.quick ? ', --quick' : ''}`,
      `nproc ${prov['nproc']}, ${prov['cpu']}, Node ${prov['node']}, ${prov['openmpi']}`,
    ],
  });
  const json = {
    ...prov, loadEnd, command, rounds: cfg.rounds, quick: cfg.quick, groups: [...cfg.groups], minutes: Math.round(minutes * 10) / 10,
    rows: rows.map((r) => ({ group: r.row.group, label: r.row.label, railcomm: r.railcomm, openmpi: r.openmpi, raw: r.raw, ratioOpenmpi: r.ratioOpenmpi, ratioRaw: r.ratioRaw })),
    errors, runs: data,
  };
  mkdirSync(dirname(resolve(cfg.out)), { recursive: true });
  writeFileSync(`${cfg.out}.md`, md);
  writeFileSync(`${cfg.out}.json`, JSON.stringify(json, null, 1) + '\n');
  writeFileSync(`${cfg.out}.svg`, svg);
  process.stdout.write(md + `\nWrote ${cfg.out}.md, ${cfg.out}.json and ${cfg.out}.svg\n`);
  return errors.some((e) => e.measure.startsWith('rc-')) ? 1 : 0;
}
