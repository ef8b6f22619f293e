// One process of a `railcomm run` job (a process rank, or a thread host of
// several ranks): its state, signalling its process group, and the launcher's
// verdict on its exit (what stops the job, with which code and words).

import type { ChildProcess } from 'node:child_process';
import { constants as osConstants } from 'node:os';

/** One process of the job: a process rank, or a thread host running `count` ranks from `base`. */
export interface ProcState {
  base: number;
  count: number;
  threads: boolean;
  /** Its ranks not known to have exited (a thread host reports each thread's exit). */
  live: Set<number>;
  child: ChildProcess | undefined;
  pid: number | undefined;
  exited: boolean;
  /** Exit code, or null when killed by a signal or never started. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Resolves when both pipes ended (or could not exist). */
  drained: Promise<void>;
  flush: () => void;
}

export function signalNumber(sig: NodeJS.Signals): number {
  return osConstants.signals[sig] ?? 0;
}

/** Signal a rank's whole process group, so that its children go too; a group already gone is fine. */
export function killGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

/** "rank 3", or for a thread process "ranks 4-7 (threads of process 1234)". */
export function describeProcess(p: ProcState): string {
  if (!p.threads) return `rank ${p.base}`;
  const ranks = p.count === 1 ? `rank ${p.base}` : `ranks ${p.base}-${p.base + p.count - 1}`;
  return `${ranks} (${p.pid !== undefined ? `threads of process ${p.pid}` : 'worker threads'})`;
}

export function unfinalizedMessage(rank: number): string {
  return `rank ${rank} exited without calling finalize() while other ranks were still running; stopping the job`;
}

/**
 * Why a process's exit fails the job, or undefined when it does not (program:
 * the job's command, for a spawn failure). Call once its ranks are gone from
 * the launcher's count of live ranks; unfinalized: one of them that left
 * without finalize() while others ran.
 */
export function exitVerdict(p: ProcState, program: string, code: number | null, signal: NodeJS.Signals | null, unfinalized: number | undefined, spawnError?: Error): { code: number; message: string } | undefined {
  const who = describeProcess(p);
  if (spawnError) return { code: 127, message: `cannot start ${who} (${program}): ${spawnError.message}; stopping the job` };
  if (signal) return { code: 128 + signalNumber(signal), message: `${who} ${p.count > 1 ? 'were' : 'was'} killed by signal ${signal}; stopping the other ranks` };
  if (code !== 0 && code !== null) return { code, message: `${who} exited with code ${code}; stopping the other ranks` };
  if (unfinalized !== undefined) return { code: 1, message: unfinalizedMessage(unfinalized) };
  return undefined;
}
