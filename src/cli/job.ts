// Starts a job's ranks (processes, or worker threads in a few processes)
// around a key-value service, prefixes their output with the rank, and makes
// the job live and die as one: the first failure, an abort, a timeout or a
// signal stops every rank.

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { newJobKey } from '../core/auth.js';
import { invalidArg } from '../core/errors.js';
import { ENV } from '../boot/launch-env.js';
import { LAUNCHER_PID_ENV } from '../boot/launcher-tie.js';
import { KvServer, type SpawnListener } from '../boot/kv-server.js';
import os from 'node:os';
import { LineCutter, OutputGate } from './line-io.js';
import { attachOutput, type OutputSinks } from './rank-output.js';
import { THREAD_ENV } from './thread-host.js';
import { removeJobSegments } from '../native/addon.js';
import { HOST_CPUS_VAR } from '../core/host-cpus.js';
import { HangBoard } from './hang-board.js';
import { placeRanks, remoteCommand, routableAddress, secretInput } from './hosts.js';
import { nodeFlags, resolveProgram, SCRIPT_RE, scriptFlags, scriptProblem } from './program.js';
import { exitVerdict, killGroup, signalNumber, unfinalizedMessage, type ProcState } from './rank-process.js';
import { DEFAULT_GRACE_SEC, type Job, type JobOptions, type JobResult, type RankExit, type RankOutput } from './job-options.js';

/** After the last rank exits, how long its pipes may stay open (held by escaped grandchildren). */
const DRAIN_MS = 2000;
/** How long a rank's failure report waits for the rank's own last output lines. */
const LAST_WORDS_MS = 250;
/** Runs thread ranks; next to this file in dist/. */
const THREAD_HOST = fileURLToPath(new URL('./thread-host.js', import.meta.url));
/** The thread host writes "<rank> <code>" lines here as its thread ranks exit. */
const REPORT_FD = 3;

/**
 * The options of a job that rank of this one starts with comm.spawn (req):
 * this job's rails, hosts, statistics and grace, told the spawning root's
 * port, its own label (its ranks print as label + rank), and what is left of
 * this job's --timeout. Thread ranks spawn thread ranks: one more process of them.
 */
function spawnedJobOptions(opts: JobOptions, req: Parameters<SpawnListener>[1], label: string, threads: boolean, startedAt: number): JobOptions {
  return {
    np: req.n, command: req.command, cwd: req.cwd, label,
    env: { ...(opts.env ?? {}), [ENV.parentPort]: req.port },
    forwardSignals: false,
    ...(opts.graceSec !== undefined ? { graceSec: opts.graceSec } : {}),
    ...(opts.rails !== undefined ? { rails: opts.rails } : {}),
    ...(opts.stats !== undefined ? { stats: opts.stats } : {}),
    ...(opts.hosts !== undefined ? { hosts: opts.hosts } : {}),
    ...(opts.rsh !== undefined ? { rsh: opts.rsh } : {}),
    ...(opts.kvHost !== undefined ? { kvHost: opts.kvHost } : {}),
    ...(threads ? { threadsPerProcess: req.n } : {}),
    ...(opts.timeoutSec !== undefined ? { timeoutSec: Math.max(1, opts.timeoutSec - (Date.now() - startedAt) / 1000) } : {}),
  };
}

export async function startJob(opts: JobOptions): Promise<Job> {
  const np = opts.np;
  if (!Number.isSafeInteger(np) || np < 1) throw invalidArg(`startJob: np must be a positive integer, got ${np}`);
  if (opts.command.length === 0 || !opts.command[0]) throw invalidArg('startJob: command is empty');
  const perProc = opts.threadsPerProcess ?? 1;
  const threads = opts.threadsPerProcess !== undefined;
  if (threads) {
    if (!Number.isSafeInteger(perProc) || perProc < 1 || np % perProc !== 0) {
      throw invalidArg(`startJob: threadsPerProcess must be a positive integer that divides np (${np}), got ${perProc}`);
    }
    if (opts.hosts !== undefined && opts.hosts.length > 0) throw invalidArg('startJob: thread ranks run on this host only; drop hosts or threadsPerProcess');
    if (!SCRIPT_RE.test(opts.command[0])) throw invalidArg(`startJob: thread ranks need a script (.js, .mjs, .cjs, .ts, .mts, .cts), got '${opts.command[0]}'`);
  }
  const graceMs = Math.max(0, (opts.graceSec ?? DEFAULT_GRACE_SEC) * 1000);
  const jobKey = newJobKey();
  const jobId = randomBytes(4).readUInt32BE(0);
  const placement = placeRanks(np, opts.hosts);
  const problem = scriptProblem(opts.command, opts.cwd ?? process.cwd(), placement.some((p) => p.local), threads);
  if (problem !== undefined) throw invalidArg(problem);
  const remote = placement.some((p) => !p.local);
  // Across hosts the service listens on the one address the remote ranks are
  // given, not on every interface (one that is not ours, behind NAT: all of them).
  const kvHost = remote ? opts.kvHost ?? routableAddress() : undefined;
  const kv = kvHost === undefined ? await KvServer.start({ size: np, jobKey })
    : await KvServer.start({ size: np, jobKey, host: kvHost }).catch(() => KvServer.start({ size: np, jobKey, host: '0.0.0.0' })); // (port 0: only EADDRNOTAVAIL fails)
  const kvAddr = kvHost !== undefined ? { host: kvHost, port: kv.address().port } : kv.address();
  const baseEnv: NodeJS.ProcessEnv = { ...process.env };
  // A count this launcher inherited (it runs inside another job) is not this job's.
  delete baseEnv[HOST_CPUS_VAR];
  // Nor is a spawning job's port (only the jobs comm.spawn starts get one, through opts.env).
  delete baseEnv[ENV.parentPort];
  if (opts.rails !== undefined) baseEnv['RAILCOMM_RAILS'] = opts.rails;
  if (opts.stats) baseEnv['RAILCOMM_STATS'] = '1';
  if (opts.stats === 'json') baseEnv['RAILCOMM_STATS_FORMAT'] = 'json';
  Object.assign(baseEnv, opts.env ?? {});
  Object.assign(baseEnv, {
    [ENV.size]: String(np),
    [ENV.kv]: `${kvAddr.host}:${kvAddr.port}`,
    [ENV.jobKey]: jobKey,
    [ENV.jobId]: String(jobId),
  });
  // The program, for ranks that leave CPUs of their host to spare and for ranks that take them
  // all (busy: a thread host then runs as nodeFlags says; rank processes start the same either
  // way). A remote host's CPUs are not known here: its thread hosts start as on a busy one.
  const program = (busy: boolean): { file: string; args: string[]; scriptAt: number } => threads
    // The host takes the grace time as an argument, not from the environment its threads inherit.
    // Its worker threads inherit the host's node flags (a TypeScript loader's included).
    ? { file: process.execPath, args: [...nodeFlags(baseEnv, busy), ...scriptFlags(opts.command[0]!, opts.cwd ?? process.cwd()), THREAD_HOST, `--grace-ms=${graceMs}`, `--report-fd=${REPORT_FD}`, '--', ...opts.command], scriptAt: -1 }
    : resolveProgram(opts.command, baseEnv, opts.cwd ?? process.cwd());
  const spare = program(false), busy = threads ? program(true) : spare;
  const localCpus = Number(opts.env?.[HOST_CPUS_VAR]) || os.availableParallelism();
  // Identity variables inherited from a launcher around this one would mislead a rank that is not given its own.
  for (const k of Object.values(THREAD_ENV)) delete baseEnv[k];

  const outputs: RankOutput[] | undefined = opts.capture
    ? Array.from({ length: np }, () => ({ stdout: [], stderr: [] }))
    : undefined;
  const outGate = opts.capture ? undefined : new OutputGate(process.stdout);
  const errGate = opts.capture ? undefined : new OutputGate(process.stderr);

  const nprocs = np / perProc;
  let failure: { code: number; reason: string } | undefined;
  let graceTimer: NodeJS.Timeout | undefined;
  let timeoutTimer: NodeJS.Timeout | undefined;
  /** Ranks that have not exited. */
  let ranksAlive = np;
  /** Processes not yet fully accounted for (exited, output drained or given up on); the job ends at 0. */
  let running = nprocs;
  let finished = false;
  let resolveDone: (r: JobResult) => void = () => undefined;
  const done = new Promise<JobResult>((r) => { resolveDone = r; });

  const say = (msg: string): void => {
    process.stderr.write(`railcomm run${opts.label === undefined ? '' : ` (spawned job ${opts.label.slice(0, -1)})`}: ${msg}\n`);
  };

  const procs: ProcState[] = [];

  const signalAll = (sig: NodeJS.Signals): void => {
    for (const p of procs) if (!p.exited && p.pid !== undefined) killGroup(p.pid, sig);
  };

  const startGrace = (): void => {
    if (graceTimer) return;
    graceTimer = setTimeout(() => signalAll('SIGKILL'), graceMs);
  };

  // comm.spawn: a new job (its own id, key and service) told the spawning root's port; counted in this job's end.
  const children: Array<Job & { label: string }> = [];
  const childEnds: Array<Promise<JobResult>> = [];
  /** The first failure decides the exit code and reason; later ones are consequences. */
  const fail = (code: number, message: string, sig: NodeJS.Signals = 'SIGTERM'): void => {
    if (failure || finished) return;
    failure = { code, reason: message };
    say(message);
    signalAll(sig);
    startGrace();
    // The jobs this one spawned go with it (no orphans).
    for (const c of children) c.stop(`the job that spawned ${c.label} stopped; stopping it`, code);
  };

  const onSignal = (sig: NodeJS.Signals): void => {
    // A closed terminal may send SIGHUP twice (the kernel, then the shell): not a second "now".
    if (failure && sig === 'SIGHUP') return;
    if (failure) {
      // A second interrupt means "now": no more grace.
      say(`received ${sig} while stopping the job; killing the ranks now`);
      signalAll('SIGKILL');
      return;
    }
    // SIGHUP goes on as SIGTERM: ranks clean up on SIGTERM, and a hang-up is not theirs to ignore.
    if (sig === 'SIGHUP') fail(128 + signalNumber(sig), 'received SIGHUP (the terminal closed?); sending the ranks SIGTERM', 'SIGTERM');
    else fail(128 + signalNumber(sig), `received ${sig}; forwarding it to the ranks`, sig);
  };
  const onSigint = (): void => onSignal('SIGINT');
  const onSigterm = (): void => onSignal('SIGTERM');
  // The terminal closed: its SIGHUP ends the ranks as SIGTERM would (exit 129), none left behind.
  const onSighup = (): void => onSignal('SIGHUP');
  // If this process exits while ranks run (process.exit elsewhere, uncaught error), take them along.
  const onExit = (): void => {
    for (const p of procs) if (p.pid !== undefined) killGroup(p.pid, 'SIGKILL');
    removeJobSegments(jobId, jobKey);
  };
  const forward = opts.forwardSignals ?? true;
  if (forward) {
    process.on('SIGINT', onSigint);
    process.on('SIGTERM', onSigterm);
    process.on('SIGHUP', onSighup);
  }
  process.on('exit', onExit);

  // Ranks that exited with code 0 before init(): once another rank is in init(), it waits
  // there for them for ever (MPI launchers call this a failure too). A job whose
  // ranks never call init() (not a railcomm program) is left alone.
  const leftBeforeInit: number[] = [];
  const leftWithoutInit = (): void => {
    if (leftBeforeInit.length === 0 || failure || finished || !kv.anyJoined()) return;
    const who = leftBeforeInit.length === 1 ? `rank ${leftBeforeInit[0]}` : `ranks ${leftBeforeInit.join(', ')}`;
    fail(1, `${who} exited (code 0) without calling init() while other ranks wait for ${leftBeforeInit.length === 1 ? 'it' : 'them'} in init(): every rank of a railcomm job calls init(); stopping the job`);
  };
  kv.onJoin(leftWithoutInit);

  kv.onAbort((rank, message, code) => {
    fail(code, `rank ${rank} called abort: ${message || '(no message)'}; stopping the job`);
  });

  // RAILCOMM_HANG_TIMEOUT: the ranks' reports, printed as one picture once every running rank is stuck.
  const hangs = new HangBoard(np, (r) => {
    if (kv.finalized(r)) return 'finalized';
    return procs[Math.floor(r / perProc)]?.live.has(r) === true ? 'running' : 'exited';
  }, (lines) => {
    if (!failure && !finished) say(lines.join('\n'));
  });
  kv.onHang((rank, report) => hangs.add(rank, report));

  const startedAt = Date.now();
  kv.onSpawn(async (rank, req) => {
    if (failure || finished) throw new Error('the spawning job is stopping');
    const label = `${opts.label ?? ''}${children.length + 1}.`;
    const child = await startJob(spawnedJobOptions(opts, req, label, threads, startedAt));
    children.push(Object.assign(child, { label: `the spawned job ${label.slice(0, -1)} (ranks ${label}0-${label}${req.n - 1}, spawned by rank ${opts.label ?? ''}${rank})` }));
    const end = child.wait();
    childEnds.push(end);
    const r = await end;
    return String(r.code);
  });

  const finish = async (): Promise<void> => {
    finished = true;
    if (timeoutTimer) clearTimeout(timeoutTimer);
    if (graceTimer) clearTimeout(graceTimer);
    // Leftover grandchildren in a rank's group would hold its pipes open and outlive the job.
    for (const p of procs) if (p.pid !== undefined) killGroup(p.pid, 'SIGKILL');
    let drainTimer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(procs.map((p) => p.drained)),
      new Promise<void>((res) => { drainTimer = setTimeout(res, DRAIN_MS); }),
    ]);
    if (drainTimer) clearTimeout(drainTimer);
    for (const p of procs) {
      p.flush();
      p.child?.stdout?.destroy();
      p.child?.stderr?.destroy();
      if (p.threads) p.child?.stdio[REPORT_FD]?.destroy();
    }
    if (forward) {
      process.off('SIGINT', onSigint);
      process.off('SIGTERM', onSigterm);
      process.off('SIGHUP', onSighup);
    }
    process.off('exit', onExit);
    outGate?.dispose();
    errGate?.dispose();
    await kv.close();
    // Segments of ranks that were killed before they could unlink them (this host only).
    removeJobSegments(jobId, jobKey);
    // Spawned jobs may outlive their parents' ranks; the first failure among them counts when this job's ranks all succeeded.
    const childResults = await Promise.all(childEnds);
    const exits: RankExit[] = [];
    for (const p of procs) for (let r = p.base; r < p.base + p.count; r++) exits.push({ rank: r, code: p.code, signal: p.signal });
    const childFailure = childResults.find((r) => r.code !== 0);
    const result: JobResult = { code: failure?.code ?? childFailure?.code ?? 0, exits };
    if (!failure && childFailure) result.reason = `a spawned job failed: ${childFailure.reason ?? `exit code ${childFailure.code}`}`;
    if (failure) result.reason = failure.reason;
    if (outputs) result.outputs = outputs;
    resolveDone(result);
  };

  /** A rank is gone; true when it had joined the job and left without finalize() while others still run. */
  const rankGone = (p: ProcState, rank: number, code: number | null): boolean => {
    if (!p.live.delete(rank)) return false;
    ranksAlive--;
    hangs.rankLeft();
    if (code === 0 && ranksAlive > 0 && !kv.joined(rank)) { leftBeforeInit.push(rank); leftWithoutInit(); }
    // Its peers may wait for it forever; MPI launchers treat this as a failure too.
    return code === 0 && ranksAlive > 0 && kv.joined(rank) && !kv.finalized(rank);
  };

  /** A thread host's report that one of its threads exited (the host itself runs on). */
  const threadExited = (p: ProcState, rank: number, code: number): void => {
    if (p.exited || rank < p.base || rank >= p.base + p.count) return;
    // A non-zero code is the host's to act on (it exits with it after its grace time).
    if (rankGone(p, rank, code)) fail(1, unfinalizedMessage(rank));
  };

  const procExited = (p: ProcState, code: number | null, signal: NodeJS.Signals | null, spawnError?: Error): void => {
    if (p.exited) return;
    p.exited = true;
    p.code = code;
    p.signal = signal;
    // Ranks whose own report has not arrived (or a process rank) end with their process.
    let unfinalized: number | undefined;
    for (const r of [...p.live]) if (rankGone(p, r, code) && unfinalized === undefined) unfinalized = r;
    const v = exitVerdict(p, opts.command[0]!, code, signal, unfinalized, spawnError);
    // Let the rank's last output (a stack trace, say) print before the launcher's verdict on it.
    let t: NodeJS.Timeout | undefined;
    void Promise.race([p.drained, new Promise<void>((res) => { t = setTimeout(res, LAST_WORDS_MS); })]).then(() => {
      if (t) clearTimeout(t);
      if (v) fail(v.code, v.message);
      if (--running === 0) void finish();
    });
  };

  /** Reads the thread host's "<rank> <code>" lines. */
  const attachReports = (p: ProcState, stream: Readable | null | undefined): void => {
    if (!stream) return;
    const cutter = new LineCutter((lines) => {
      for (const l of lines) {
        const m = /^(\d+) (-?\d+)$/.exec(l.toString('latin1'));
        if (m) threadExited(p, Number(m[1]), Number(m[2]));
      }
    });
    stream.on('data', (chunk: Buffer) => cutter.push(chunk));
    // A grandchild that inherited the pipe may hold it open; nobody waits for its end.
    stream.on('error', () => undefined);
  };

  const lines: OutputSinks = { label: opts.label, outputs, outGate, errGate, onLine: opts.onLine };

  for (let pi = 0; pi < nprocs; pi++) {
    const base = pi * perProc;
    const where = placement[base]!;
    const env: NodeJS.ProcessEnv = threads
      // The host gives each thread its own RAILCOMM_RANK and RAILCOMM_LOCAL_RANK.
      ? { ...baseEnv, [ENV.localSize]: String(np), [THREAD_ENV.base]: String(base), [THREAD_ENV.threads]: String(perProc) }
      : { ...baseEnv, [ENV.rank]: String(base), [ENV.localRank]: String(where.localRank), [ENV.localSize]: String(where.localSize) };
    // Ranks on this host share this launcher's CPUs, however they are bound
    // one by one later (core/host-cpus.ts), unless -x says otherwise; a remote
    // rank counts its own host's.
    if (where.local && opts.env?.[HOST_CPUS_VAR] === undefined) env[HOST_CPUS_VAR] = String(os.availableParallelism());
    const p: ProcState = {
      base, count: perProc, threads, live: new Set(Array.from({ length: perProc }, (_, i) => base + i)),
      child: undefined, pid: undefined, exited: false, code: null, signal: null,
      drained: Promise.resolve(), flush: () => undefined,
    };
    procs.push(p);
    if (failure) {
      // An earlier rank could not even be spawned: starting more would only have them stopped again.
      p.exited = true;
      for (const r of [...p.live]) rankGone(p, r, null);
      if (--running === 0) void finish();
      continue;
    }
    let child: ChildProcess;
    try {
      // Own process group per rank (or thread host): signals reach the rank's children, and a
      // terminal's Ctrl-C reaches only the launcher, which decides what to do.
      if (where.local) {
        const { file, args } = where.localSize >= localCpus ? busy : spare;
        child = spawn(file, args, { env: { ...env, [LAUNCHER_PID_ENV]: String(process.pid) }, cwd: opts.cwd, detached: true, stdio: threads ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'] });
      } else {
        // PREFIX host env NAME=VALUE... program args: the remote side gets the
        // railcomm variables (and -x ones) explicitly, as ssh passes no environment.
        const secrets = secretInput(env);
        const { file, args, scriptAt } = threads ? busy : spare;
        child = spawn(...remoteCommand(opts, where.host, env, file, args, scriptAt), { env, cwd: opts.cwd, detached: true, stdio: [secrets === '' ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
        child.stdin?.on('error', () => { /* the rank's exit reports what went wrong */ });
        child.stdin?.end(secrets);
      }
    } catch (err) {
      procExited(p, null, null, err instanceof Error ? err : new Error(String(err)));
      continue;
    }
    p.child = child;
    p.pid = child.pid;
    const out = attachOutput(p, child.stdout, 'stdout', lines);
    const errOut = attachOutput(p, child.stderr, 'stderr', lines);
    p.drained = Promise.all([out.drained, errOut.drained]).then(() => undefined);
    p.flush = () => { out.flush(); errOut.flush(); };
    if (threads) attachReports(p, child.stdio[REPORT_FD] as Readable | null | undefined);
    child.on('error', (err) => {
      // Only a failed spawn has no pid; later errors (e.g. kill on a dead pid) are not exits.
      if (p.pid === undefined) procExited(p, null, null, err);
    });
    child.on('exit', (code, signal) => procExited(p, code, signal));
  }

  if (opts.timeoutSec !== undefined && !finished) {
    const sec = opts.timeoutSec;
    // First what each rank waits for (a second at most: a rank busy in its own code never answers).
    timeoutTimer = setTimeout(() => {
      void hangs.atStop(`--timeout ${sec} s`, () => kv.askReports(), 1000, (r) => kv.joined(r)).finally(() => fail(124, `job exceeded --timeout ${sec} s; stopping it`));
    }, sec * 1000);
  }

  const pids: Array<number | undefined> = [];
  for (const p of procs) for (let i = 0; i < p.count; i++) pids.push(p.pid);
  return {
    jobId,
    kv: kvAddr,
    pids,
    wait: () => done,
    stop: (message, code) => fail(code, message),
  };
}
