// Runs behind `railcomm bench` and its report: a railcomm benchmark job (its
// rank 0's JSON line, with progress passed on while it runs), and the baseline
// programs of the repository's bench/ folder (Open MPI's bench/mpi binaries
// under mpirun, raw Node scripts), each giving lines of the same JSON shape.

import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startJob } from './run.js';
import { parseProgress } from '../bench/progress.js';
import type { Progress } from './progress.js';

/** One benchmark's result line: `{"benchmark":..,"rails":..,"ranks":..,"results":[{size,..}]}`. */
export interface BenchJson {
  benchmark: string;
  rails: string;
  ranks?: number;
  results: Array<Record<string, number | string | undefined>>;
  [k: string]: unknown;
}

export const P2P = ['latency', 'bw'] as const;
export const COLL = ['allreduce', 'bcast', 'allgather', 'alltoall'] as const;
export const RMA = ['put', 'get', 'atomic'] as const;
export const KINDS = [...P2P, ...COLL, ...RMA, 'wireup'] as const;
export const isColl = (kind: string): boolean => (COLL as readonly string[]).includes(kind) || kind === 'wireup';
export const isRma = (kind: string): boolean => (RMA as readonly string[]).includes(kind);

export interface RailcommSpec {
  kind: string;
  np: number;
  /** RAILCOMM_RAILS; absent: railcomm chooses. */
  rails?: string;
  threads: boolean;
  sizes: string;
  iters: number;
  window: number;
  env?: Record<string, string>;
}

export interface RunOutcome {
  json: BenchJson | null;
  /** The raw line rank 0 printed. */
  line?: string;
  /** Why there is no result (the job's stderr lines included). */
  error?: string;
  code: number;
}

function rankProgram(kind: string): string {
  const rel = kind === 'wireup' ? '../bench/wireup.js' : isColl(kind) ? '../bench/coll.js' : isRma(kind) ? '../bench/rma.js' : '../bench/p2p.js';
  return fileURLToPath(new URL(rel, import.meta.url));
}

/** A railcomm benchmark job; rank 0's progress lines go to `progress` as they arrive. */
export async function runRailcomm(spec: RailcommSpec, progress: Progress): Promise<RunOutcome> {
  const script = rankProgram(spec.kind);
  const command = isColl(spec.kind)
    ? [script, spec.kind, spec.sizes, String(spec.iters === 2000 ? 1000 : spec.iters)]
    : isRma(spec.kind) ? [script, spec.kind, spec.sizes, String(spec.iters)] : [script, spec.kind, spec.sizes, String(spec.iters), String(spec.window)];
  const job = await startJob({
    np: spec.np, command, capture: true, timeoutSec: 600,
    env: { ...(spec.env ?? {}), RAILCOMM_BENCH_PROGRESS: '1' },
    onLine: (rank, which, line) => {
      if (rank !== 0 || which !== 'stderr') return;
      const ev = parseProgress(line);
      if (ev) progress.event(ev);
    },
    ...(spec.rails !== undefined ? { rails: spec.rails } : {}), ...(spec.threads ? { threadsPerProcess: spec.np } : {}),
  });
  const res = await job.wait();
  const line = res.outputs?.[0]?.stdout.find((l) => l.startsWith('{'));
  if (res.code !== 0 || line === undefined) {
    const lines: string[] = [];
    for (const [r, o] of (res.outputs ?? []).entries()) for (const l of o.stderr) if (parseProgress(l) === null) lines.push(`[${r}] ${l}`);
    lines.push(`railcomm bench: the benchmark job failed (${res.reason ?? 'exit ' + res.code})`);
    return { json: null, error: lines.join('\n'), code: res.code || 1 };
  }
  return { json: JSON.parse(line) as BenchJson, line, code: 0 };
}

/** A program's stdout (also when it failed after printing, as Open MPI's one-sided test can), within a time limit. */
export function runProgram(cmd: string, args: string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { encoding: 'utf8', timeout: opts.timeoutMs ?? 600_000, maxBuffer: 64 << 20, env: { ...process.env, ...(opts.env ?? {}) } }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1;
      resolve({ stdout: String(stdout ?? ''), stderr: String(stderr ?? ''), code });
    });
  });
}

/** The JSON lines a program printed. */
export function jsonLines(stdout: string): BenchJson[] {
  const out: BenchJson[] = [];
  for (const l of stdout.split('\n')) {
    if (!l.startsWith('{')) continue;
    try { out.push(JSON.parse(l) as BenchJson); } catch { /* a partial line from a crashed program */ }
  }
  return out;
}

/** The repository's bench/ folder (not in the npm package), or null. */
export function benchDir(): string | null {
  const dir = fileURLToPath(new URL('../../bench/', import.meta.url));
  return existsSync(`${dir}raw-tcp-pingpong.mjs`) ? dir : null;
}

const onPath = (cmd: string): boolean => {
  try { execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }); return true; } catch { return false; }
};

const MPI_BINARIES = ['pingpong', 'coll', 'osc', 'idle'];

/**
 * Whether the Open MPI baselines can run: mpirun on PATH and bench/mpi built
 * (built here with make when mpicc is there and a binary is missing).
 * Returns null when ready, else why not.
 */
export function mpiReady(dir: string, progress: Progress): string | null {
  if (!onPath('mpirun')) return 'mpirun is not on PATH (apt-get install openmpi-bin libopenmpi-dev)';
  if (MPI_BINARIES.every((b) => existsSync(`${dir}mpi/${b}`))) return null;
  if (!onPath('mpicc') || !onPath('make')) return `bench/mpi is not built and mpicc or make is missing (apt-get install libopenmpi-dev make, then make -C bench/mpi)`;
  progress.note('building the Open MPI baselines (make -C bench/mpi)');
  try {
    execFileSync('make', ['-s', '-C', `${dir}mpi`], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    return `make -C bench/mpi failed: ${String((e as { stderr?: unknown }).stderr ?? e).trim().split('\n').slice(-2).join(' ')}`;
  }
  return null;
}

/** `mpirun` arguments for 2 (or np) ranks over Open MPI's shared memory (vader) or its tcp BTL pinned to lo. */
export function mpirunArgs(btl: 'vader' | 'tcp', np = 2): string[] {
  return ['--allow-run-as-root', '--oversubscribe', '-n', String(np), '--mca', 'pml', 'ob1', '--mca', 'btl', `self,${btl}`,
    ...(btl === 'tcp' ? ['--mca', 'btl_tcp_if_include', 'lo'] : [])];
}

/** A baseline: a program whose JSON lines (the same shape as railcomm's) are kept. */
export interface Baseline {
  /** Series name, e.g. ompi-vader, raw-node-tcp. */
  name: string;
  kind: string;
  run: () => Promise<{ json: BenchJson[]; error?: string }>;
}

const fromProgram = (cmd: string, args: string[], env?: Record<string, string>) => async (): Promise<{ json: BenchJson[]; error?: string }> => {
  const r = await runProgram(cmd, args, env ? { env } : {});
  const json = jsonLines(r.stdout);
  if (json.length === 0) return { json, error: `${cmd} ${args.join(' ')}: exit ${r.code}; ${r.stderr.trim().split('\n').slice(-3).join(' | ')}` };
  return { json };
};

/** Every baseline railcomm bench knows for a kind (latency, bw, a collective); `sizes` in bytes, comma-separated. */
export function baselinesFor(kind: string, sizes: string, np: number, dir: string, mpi: boolean, itersOverride?: number): Baseline[] {
  const out: Baseline[] = [];
  const node = process.execPath;
  const it = itersOverride !== undefined ? ['--iters', String(itersOverride)] : [];
  if (kind === 'latency' || kind === 'bw') {
    // Bandwidth: 30 windows per size on the C and stream side (their defaults are sized for latency).
    const bwIters = kind === 'bw' && itersOverride === undefined ? ['--iters', '30'] : it;
    if (mpi) {
      for (const btl of ['vader', 'tcp'] as const) {
        out.push({ name: `ompi-${btl}`, kind, run: fromProgram('mpirun', [...mpirunArgs(btl), `${dir}mpi/pingpong`, kind, '--json', '--label', `ompi-${btl}`, '--sizes', sizes, ...bwIters]) });
      }
    }
    out.push({ name: 'raw-node-tcp', kind, run: fromProgram(node, [`${dir}${kind === 'latency' ? 'raw-tcp-pingpong.mjs' : 'raw-tcp-stream.mjs'}`, '--sizes', sizes, '--json', ...bwIters]) });
    if (kind === 'latency') out.push({ name: 'raw-node-udp', kind, run: rawUdpLatency(dir, sizes, itersOverride) });
  } else if (isColl(kind) && kind !== 'wireup' && mpi) {
    out.push({ name: 'ompi-vader', kind, run: fromProgram('mpirun', [...mpirunArgs('vader', np), `${dir}mpi/coll`, kind, '--json', '--label', 'ompi-vader', '--sizes', sizes, ...it]) });
  }
  return out;
}

/** Largest datagram raw-udp.mjs can send on loopback. */
const MAX_DATAGRAM = 65507;

/** raw Node dgram ping-pong, one program per size (it takes one), as one JSON line. */
function rawUdpLatency(dir: string, sizes: string, iters?: number) {
  return async (): Promise<{ json: BenchJson[]; error?: string }> => {
    const results: BenchJson['results'] = [];
    const errors: string[] = [];
    for (const size of sizes.split(',').map(Number).filter((s) => s > 0 && s <= MAX_DATAGRAM)) {
      const r = await runProgram(process.execPath, [`${dir}raw-udp.mjs`, 'pingpong', '--size', String(size), '--iters', String(iters ?? (size <= 8192 ? 3000 : 500)), '--json']);
      const j = jsonLines(r.stdout)[0] as unknown as { usec_median?: number; usec_avg?: number; iters?: number } | undefined;
      if (j?.usec_median === undefined) { errors.push(`raw-udp.mjs --size ${size}: exit ${r.code}`); continue; }
      results.push({ size, usec: Math.round((j.usec_avg ?? NaN) * 100) / 100, usec_median: Math.round(j.usec_median * 100) / 100, iters: j.iters });
    }
    const json: BenchJson[] = results.length > 0 ? [{ benchmark: 'latency', rails: 'raw-node-udp', ranks: 2, results }] : [];
    return errors.length > 0 ? { json, error: errors.join('; ') } : { json };
  };
}
