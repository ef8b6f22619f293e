// RAILCOMM_BIND=core: a rank's thread pinned to one CPU, as Open MPI's
// --bind-to core does. Measured on a 16-core host, 16 spinning ranks left to
// the scheduler lose their core now and then to a helper thread or to each
// other's migration, and every rank of a collective waits for the one that
// lost it (bench/sixteen-ranks.sh runs both). Only the rank's own thread is
// pinned: V8's helper threads and libuv's pool keep every CPU.

import type { NativeAddon } from './addon.js';

/**
 * Pin the calling thread (a process rank's main thread, or a thread rank's
 * worker) to the localRank-th CPU it may use. Returns the line the init
 * report shows: what was done, or why not.
 */
export function bindRank(native: NativeAddon | null, localRank: number, localSize: number): string {
  if (native === null || native.bindThread === undefined || native.threadCpus === undefined) {
    return 'binding: not bound (RAILCOMM_BIND=core needs the native addon with bindThread; rebuild it)';
  }
  const cpus = native.threadCpus();
  if (cpus.length === 1) return `binding: already bound to CPU ${cpus[0]} (by the launcher)`;
  if (localSize > cpus.length) return `binding: not bound (${localSize} ranks on this host share ${cpus.length} CPUs)`;
  const cpu = cpus[localRank % cpus.length]!;
  const rc = native.bindThread(cpu);
  return rc === 0 ? `binding: local rank ${localRank} bound to CPU ${cpu} (of ${cpus.length})` : `binding: not bound: sched_setaffinity(${cpu}) failed (errno ${-rc})`;
}
