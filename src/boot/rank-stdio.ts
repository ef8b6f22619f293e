// A rank started by `railcomm run` writes to pipes the launcher reads
// (socketpairs: libuv makes a child's stdio pipes that way), and Node writes
// to those asynchronously: what is still queued when the rank calls
// process.exit() is lost (a test session saw 70-90% of 80,000 lines and every
// rank's last line go). Blocking writes, as a C program's are, lose nothing.
// The price is a C program's too: while the job's output goes nowhere (the
// launcher's own stdout is a full pipe to a slow reader, or a terminal paused
// with Ctrl-S), the launcher stops reading the ranks' pipes, and a rank that
// writes then waits in write(), its event loop with it.

import { isMainThread } from 'node:worker_threads';

interface BlockingHandle { setBlocking?(on: boolean): number }

/** Under railcomm run (RAILCOMM_KV set): this process's stdout and stderr writes block until written. */
export function blockingStdio(env: NodeJS.ProcessEnv = process.env): void {
  // A worker thread's stdout is a stream to its host's main thread, not a pipe.
  if (!isMainThread || env['RAILCOMM_KV'] === undefined) return;
  for (const s of [process.stdout, process.stderr]) {
    const h = (s as unknown as { _handle?: BlockingHandle })._handle;
    if (h !== undefined && typeof h.setBlocking === 'function') h.setBlocking(true);
  }
}
