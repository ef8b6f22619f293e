// A rank started by `railcomm run` writes to pipes the launcher reads
// (socketpairs: libuv makes a child's stdio pipes that way), and Node writes
// to those asynchronously: what is still queued when the rank calls
// process.exit() is lost (a test session saw 70-90% of 80,000 lines and every
// rank's last line go). Blocking writes, as a C program's are, lose nothing;
// the launcher reads its ranks' pipes all the time, so a write waits only
// while the launcher catches up.

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
