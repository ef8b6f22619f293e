// The process `railcomm run --threads` / `--threads-per-process K` starts: it runs
// RAILCOMM_THREADS ranks of one script as worker threads (from rank
// RAILCOMM_THREAD_BASE on), prefixes their output like the launcher does, and exits with the first failure.

import { Worker, isMainThread } from 'node:worker_threads';
import { realpathSync, writeSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { constants as osConstants } from 'node:os';
import type { Readable } from 'node:stream';
import { ENV } from '../boot/launch-env.js';
import { LineCutter, NL, OutputGate, rankPrefix } from './line-io.js';
import { endWithParent, launcherGone } from '../boot/launcher-tie.js';
import { blockingStdio } from '../boot/rank-stdio.js';
import { threadExitFlags } from '../comm/sync-liveness.js';
import { setOfiEnvDefaults } from '../rail/ofi/env-defaults.js';
import { threadScriptLoader } from './program.js';

/** What the launcher tells a thread host (and what its thread ranks see too). */
export const THREAD_ENV = {
  /** First rank this process runs. */
  base: 'RAILCOMM_THREAD_BASE',
  /** How many consecutive ranks this process runs as threads. */
  threads: 'RAILCOMM_THREADS',
} as const;

/** Same default as the launcher's --grace, for a host started by hand. */
const DEFAULT_GRACE_MS = 3000;
/** After a worker exits, how long its output streams may take to deliver what is in flight. */
const DRAIN_MS = 2000;

/** What a worker starts on when its TypeScript script needs tsx registered in that thread first (threadScriptLoader). */
const TS_WORKER = new URL('./ts-worker.js', import.meta.url);

const USAGE = 'usage: RAILCOMM_THREAD_BASE=B RAILCOMM_THREADS=K node thread-host.js [--grace-ms MS] [--report-fd FD] [--] script [args...]';

class HostUsageError extends Error {}

interface HostArgs {
  graceMs: number;
  /**
   * Where to write "<rank> <code>\n" as each thread rank exits, so the launcher can
   * tell a rank that left without finalize() while its neighbours in this process run on.
   */
  reportFd: number | undefined;
  script: string;
  args: string[];
}

function parseHostArgs(argv: string[]): HostArgs {
  let graceMs = DEFAULT_GRACE_MS;
  let reportFd: number | undefined;
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === '--') {
      i++;
      break;
    }
    const name = a.startsWith('--') && a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
    if (name === '--grace-ms' || name === '--report-fd') {
      const v = name !== a ? a.slice(name.length + 1) : argv[++i];
      const n = Number(v);
      if (v === undefined || v.trim() === '' || !Number.isFinite(n) || n < 0 || (name === '--report-fd' && !Number.isSafeInteger(n))) {
        throw new HostUsageError(`${name} needs a non-negative ${name === '--report-fd' ? 'integer' : 'number'}, got '${v ?? ''}'`);
      }
      if (name === '--grace-ms') graceMs = n;
      else reportFd = n;
      continue;
    }
    if (a.startsWith('-') && a !== '-') throw new HostUsageError(`unknown option '${a}'`);
    break;
  }
  const script = argv[i];
  if (script === undefined || script === '') throw new HostUsageError('no script given');
  return { graceMs, reportFd, script, args: argv.slice(i + 1) };
}

function intEnv(name: string, min: number): number {
  const raw = process.env[name];
  const n = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isSafeInteger(n) || n < min) {
    throw new HostUsageError(`${name}='${raw ?? ''}' is not an integer >= ${min}; the thread host is started by 'railcomm run --threads'`);
  }
  return n;
}

/**
 * What node would print for an uncaught exception: the stack. An error that crossed
 * from a worker lost its class, so inspect() would label a TypeError "TypeError [Error]".
 */
function errorText(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'stack' in err && typeof err.stack === 'string' && err.stack !== '') return err.stack;
  return `Uncaught ${inspect(err)}`;
}

interface ThreadRank {
  rank: number;
  worker: Worker | undefined;
  exited: boolean;
  /** The worker's uncaught exception, printed after its last output lines. */
  error: { value: unknown } | undefined;
  drained: Promise<void>;
}

/**
 * Runs the thread ranks until all have exited; resolves with the exit code for
 * this process: the first non-zero worker code, 128+signo when stopped by a signal, else 0.
 */
export async function hostMain(argv: string[]): Promise<number> {
  // Its ranks' lines go out through this thread's pipes: none may be lost at process.exit().
  blockingStdio();
  let opts: HostArgs;
  let base: number;
  let count: number;
  try {
    opts = parseHostArgs(argv);
    base = intEnv(THREAD_ENV.base, 0);
    count = intEnv(THREAD_ENV.threads, 1);
  } catch (err) {
    if (!(err instanceof HostUsageError)) throw err;
    process.stderr.write(`railcomm thread-host: ${err.message}\n${USAGE}\n`);
    return 2;
  }
  // libfabric reads its settings from the process's environment, which workers' copies do not reach
  // (the ofi rail is opt-in: only a job that names it loads libfabric).
  if ((process.env['RAILCOMM_RAILS'] ?? '').split(',').map((s) => s.trim()).includes('ofi')) setOfiEnvDefaults();
  // Threads run on one host only, so every rank of the job is local.
  const localSize = process.env[ENV.localSize] ?? process.env[ENV.size] ?? String(base + count);
  // A process rank's argv[1] is the script resolved against its cwd; the worker reports the path it was given.
  const scriptPath = resolvePath(opts.script);
  // A TypeScript script this node runs through tsx: each worker registers tsx's hooks, then imports it.
  const loader = threadScriptLoader(scriptPath);
  if (typeof loader === 'string') {
    process.stderr.write(`railcomm thread-host: ${loader}\n`);
    return 2;
  }
  const outGate = new OutputGate(process.stdout);
  const errGate = new OutputGate(process.stderr);

  const say = (msg: string): void => {
    process.stderr.write(`railcomm thread-host: ${msg}\n`);
  };

  let reportFd = opts.reportFd;
  const report = (rank: number, code: number): void => {
    if (reportFd === undefined) return;
    try {
      // A dozen bytes, synchronously: far below the pipe's atomic write size.
      writeSync(reportFd, `${rank} ${code}\n`);
    } catch {
      // The launcher is gone or never gave us the pipe; its bookkeeping is then moot.
      reportFd = undefined;
    }
  };

  let firstFailure: number | undefined;
  let signalCode: number | undefined;
  let graceTimer: NodeJS.Timeout | undefined;
  let running = count;
  let resolveDone: () => void = () => undefined;
  const allDone = new Promise<void>((res) => { resolveDone = res; });
  const threads: ThreadRank[] = [];
  // A thread rank in a synchronous call (recvSync) runs no event loop: it learns a peer thread died from these.
  const exitFlags = threadExitFlags(count);

  /** terminate() stops a worker even inside a busy loop; there is no polite signal to a thread. */
  const terminateAll = (): void => {
    for (const t of threads) if (!t.exited) void t.worker?.terminate();
  };

  const printLines = (rank: number, text: string): void => {
    const prefix = rankPrefix(rank);
    const parts: Buffer[] = [];
    for (const line of text.replace(/\n$/, '').split('\n')) parts.push(prefix, Buffer.from(line), NL);
    process.stderr.write(Buffer.concat(parts));
  };

  const exited = (t: ThreadRank, rawCode: number): void => {
    if (t.exited) return;
    t.exited = true;
    Atomics.store(exitFlags, t.rank - base, 1);
    // An uncaught exception is a failure even if the exit code said otherwise.
    const code = t.error !== undefined && rawCode === 0 ? 1 : rawCode;
    let timer: NodeJS.Timeout | undefined;
    void Promise.race([t.drained, new Promise<void>((res) => { timer = setTimeout(res, DRAIN_MS); })]).then(() => {
      if (timer) clearTimeout(timer);
      if (t.error !== undefined) printLines(t.rank, errorText(t.error.value));
      report(t.rank, code);
      // Once the job is being stopped, further non-zero codes are consequences, not causes.
      if (code !== 0 && firstFailure === undefined && signalCode === undefined) {
        firstFailure = code;
        const others = threads.filter((o) => !o.exited).length;
        say(`rank ${t.rank} exited with code ${code}${others > 0 ? `; stopping the other ${others} thread rank(s) of this process${opts.graceMs > 0 ? ` in ${opts.graceMs} ms unless they exit first` : ''}` : ''}`);
        // Like the launcher's grace time: the others may still report or exit by themselves.
        if (others > 0) graceTimer = setTimeout(terminateAll, opts.graceMs);
      }
      if (--running === 0) resolveDone();
    });
  };

  const attach = (rank: number, stream: Readable, gate: OutputGate): Promise<void> => {
    const prefix = rankPrefix(rank);
    const cutter = new LineCutter((lines) => {
      const parts: Buffer[] = [];
      for (const l of lines) parts.push(prefix, l, NL);
      gate.write(Buffer.concat(parts), stream);
    });
    stream.on('data', (chunk: Buffer) => cutter.push(chunk));
    return new Promise<void>((res) => {
      stream.once('end', () => { cutter.flush(); res(); });
      stream.once('close', () => { cutter.flush(); res(); });
      stream.once('error', () => res());
    });
  };

  const onSignal = (sig: NodeJS.Signals): void => {
    const code = 128 + (osConstants.signals[sig] ?? 0);
    if (signalCode !== undefined) {
      // A second signal means "now".
      process.exit(code);
    }
    signalCode = code;
    terminateAll();
  };
  const onSigint = (): void => onSignal('SIGINT');
  const onSigterm = (): void => onSignal('SIGTERM');
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigterm);
  // The launcher killed while every thread rank is busy: the process ends anyway (launcher-tie.ts).
  const gone = launcherGone();
  if (gone !== null) { process.stderr.write(`railcomm: thread host of ranks ${base}-${base + count - 1}: ${gone}; exiting\n`); return 1; }
  endWithParent();

  for (let i = 0; i < count; i++) {
    const rank = base + i;
    const t: ThreadRank = { rank, worker: undefined, exited: false, error: undefined, drained: Promise.resolve() };
    threads.push(t);
    if (signalCode !== undefined) {
      // Stopped while starting: do not start more.
      exited(t, signalCode);
      continue;
    }
    let worker: Worker;
    try {
      worker = new Worker(loader === undefined ? scriptPath : TS_WORKER, {
        // The worker's process.argv becomes [execPath, scriptPath, ...args], as in a process rank
        // (ts-worker.js takes the script and tsx's API from the front of its arguments and makes it so).
        argv: loader === undefined ? opts.args : [scriptPath, loader.tsxApi, ...opts.args],
        // A plain object gives every worker its own process.env.
        env: {
          ...process.env,
          [ENV.rank]: String(rank),
          [ENV.localRank]: String(rank),
          [ENV.localSize]: localSize,
          [THREAD_ENV.base]: String(base),
          [THREAD_ENV.threads]: String(count),
        },
        stdout: true,
        stderr: true,
        name: `railcomm rank ${rank}`,
      });
    } catch (err) {
      t.error = { value: err };
      exited(t, 1);
      continue;
    }
    t.worker = worker;
    t.drained = Promise.all([attach(rank, worker.stdout, outGate), attach(rank, worker.stderr, errGate)]).then(() => undefined);
    worker.on('error', (err: unknown) => { t.error = { value: err }; });
    worker.on('exit', (code: number) => exited(t, code));
  }

  await allDone;
  if (graceTimer) clearTimeout(graceTimer);
  process.off('SIGINT', onSigint);
  process.off('SIGTERM', onSigterm);
  outGate.dispose();
  errGate.dispose();
  return signalCode ?? firstFailure ?? 0;
}

/** True when this file is the program node was started with (not imported for THREAD_ENV). */
function isEntry(): boolean {
  const entry = process.argv[1];
  if (!isMainThread || entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) {
  // Exit explicitly so the code is exactly this one whatever still holds the event
  // loop; nothing is lost, as hostMain made stdout/stderr writes blocking.
  process.exit(await hostMain(process.argv.slice(2)));
}
