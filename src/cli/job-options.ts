// What a `railcomm run` job is given and what it gives back: the options of
// startJob (the command line's, or a program's own), the job handle, and the
// result once every rank is accounted for.

import type { HostSlots } from './hosts.js';

export interface JobOptions {
  /** Number of ranks. */
  np: number;
  /** Script (.js/.mjs/.cjs, run with this node) or program, then its arguments. */
  command: string[];
  /** Stop the job after this many seconds with exit code 124; none when absent. */
  timeoutSec?: number;
  /** Seconds between the polite signal and SIGKILL when stopping ranks, default 3. */
  graceSec?: number;
  /** RAILCOMM_RAILS for every rank. */
  rails?: string;
  /** Set RAILCOMM_STATS=1 for every rank; 'json' also sets RAILCOMM_STATS_FORMAT=json. */
  stats?: boolean | 'json';
  /** Extra environment for every rank (after process.env, before the RAILCOMM_ identity variables). */
  env?: Record<string, string>;
  /** Collect each rank's output lines and return them from wait() instead of printing them. */
  capture?: boolean;
  /** With `capture`: also called with each line as it arrives (without its rank prefix), e.g. for progress. */
  onLine?: (rank: number, which: 'stdout' | 'stderr', line: string) => void;
  /** Forward SIGINT/SIGTERM received by this process to the ranks while the job runs, default true. */
  forwardSignals?: boolean;
  cwd?: string;
  /** Hosts and their slots; ranks fill them in order. Absent: every rank on this host. */
  hosts?: HostSlots[];
  /** Command prefix that runs a command on a host, e.g. ['ssh'] or ['ip', 'netns', 'exec']. */
  rsh?: string[];
  /** Address remote ranks use to reach the wire-up service (default: this host's first routable IPv4). */
  kvHost?: string;
  /**
   * Run the ranks as worker threads, this many per process (np must be a multiple;
   * ranks p*K .. p*K+K-1 live in process p). Needs a JavaScript script; not with remote hosts.
   * Absent: one process per rank.
   */
  threadsPerProcess?: number;
  /** Output prefix before the rank, `[label rank]` (the jobs comm.spawn starts: 1.0, 1.1, ...). */
  label?: string;
}

export interface RankOutput {
  stdout: string[];
  stderr: string[];
}

export interface RankExit {
  rank: number;
  /** Exit code, or null when killed by a signal or never started. */
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface JobResult {
  /** 0 when every rank exited 0; else the status of the first failure (rank code, 128+signo, abort code, 124 for timeout). */
  code: number;
  /** What stopped the job, when something did. */
  reason?: string;
  exits: RankExit[];
  /**
   * Only with `capture: true`: lines per rank, without the `[rank] ` prefix. A thread
   * process's lines that carry no rank prefix (its own messages) go to its first rank.
   */
  outputs?: RankOutput[];
}

export interface Job {
  readonly jobId: number;
  readonly kv: { host: string; port: number };
  /** Process id of each rank (thread ranks share their process's; undefined when it could not be spawned). */
  readonly pids: ReadonlyArray<number | undefined>;
  wait(): Promise<JobResult>;
  /** Stop the job as a failure: prints `message`, SIGTERM, then SIGKILL after the grace time. */
  stop(message: string, code: number): void;
}

/** Seconds between the polite signal and SIGKILL when JobOptions.graceSec is absent. */
export const DEFAULT_GRACE_SEC = 3;
