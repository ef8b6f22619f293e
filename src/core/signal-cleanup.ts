// Removes this process's /dev/shm names when SIGINT, SIGTERM or SIGHUP would
// end it, whoever launched it (a killed rank never runs its 'exit' handlers,
// and only railcomm run sweeps a job's names afterwards). Handlers are
// installed only while something registered names to remove, and the signal
// is raised again afterwards, so the exit status still says which signal it
// was. A program that listens for the signal itself decides what happens: then
// nothing is removed here (its process.exit() runs the 'exit' handlers).

import { isMainThread } from 'node:worker_threads';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
type CleanSignal = (typeof SIGNALS)[number];

const cleanups = new Set<() => void>();
let installed = false;

const handlers: Record<CleanSignal, () => void> = {
  SIGINT: () => onSignal('SIGINT'),
  SIGTERM: () => onSignal('SIGTERM'),
  SIGHUP: () => onSignal('SIGHUP'),
};

/**
 * Run `fn` (synchronous, idempotent: it removes names) if a signal ends this
 * process while registered. Returns the function that unregisters it. In a
 * worker thread it does nothing: signals reach only the main thread, and
 * thread ranks run under railcomm run, which removes the job's names.
 */
export function cleanupOnSignal(fn: () => void): () => void {
  if (!isMainThread) return () => undefined;
  cleanups.add(fn);
  if (!installed) {
    installed = true;
    for (const s of SIGNALS) process.on(s, handlers[s]);
  }
  return () => {
    cleanups.delete(fn);
    if (cleanups.size === 0) uninstall();
  };
}

function uninstall(): void {
  if (!installed) return;
  installed = false;
  for (const s of SIGNALS) process.off(s, handlers[s]);
}

function onSignal(sig: CleanSignal): void {
  // The program handles this signal itself: its handler decides whether the process ends.
  if (process.listenerCount(sig) > 1) return;
  for (const fn of [...cleanups]) {
    try { fn(); } catch { /* the next name still goes */ }
  }
  cleanups.clear();
  uninstall();
  // With no listener left the default action applies: the process ends by this signal.
  process.kill(process.pid, sig);
}
