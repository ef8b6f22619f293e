// A rank started by railcomm run (locally, over ssh, or through `ip netns
// exec`) ends when the process that started it ends. A rank on its event loop
// sees the launcher's connection close and exits cleanly (its exit handlers
// remove its shared-memory names). One busy in a long computation never
// looks: a thread of the native addon waits for the parent to end and, a
// grace period later, kills the process if it still runs. Without the addon
// only the connection tells.

import { isMainThread } from 'node:worker_threads';
import { processExists } from '../core/host.js';
import { loadNative } from '../native/addon.js';
import { ENV } from './launch-env.js';

/** How long a rank whose parent ended may take to exit by itself (ms). */
const GRACE_MS = 2000;

/** Watch the parent process; false when that cannot be arranged here. */
export function endWithParent(): boolean {
  // One watch per process, from its main thread (thread ranks share the host's).
  if (!isMainThread) return false;
  const native = loadNative();
  if (native?.watchParent === undefined) return false;
  try {
    native.watchParent(GRACE_MS);
    return true;
  } catch {
    return false;
  }
}

/**
 * The rank finalized: it may outlive its launcher (as the launcher's connection
 * loss spares it too). Process ranks only: a thread host keeps its watch, so it
 * ends with its launcher even after all its thread ranks finalized.
 */
export function stopWatchingParent(): void {
  if (!isMainThread) return;
  loadNative()?.stopWatchingParent?.();
}

/** Set by railcomm run for the processes it starts on its own host: its pid (their parent's). */
export const LAUNCHER_PID_ENV = ENV.launcherPid;

/**
 * Why this process, started by railcomm run on the launcher's host (perhaps
 * through a wrapper: sh -c, npx, time), has no launcher any more: that process
 * is gone (it died before this one watched it), or null. Nothing will wire
 * such a rank up: it ends instead of retrying the dead service. (A pid reused
 * meanwhile reads as alive: the connect then fails as it always did.)
 */
export function launcherGone(env: NodeJS.ProcessEnv = process.env): string | null {
  const pid = Number(env[LAUNCHER_PID_ENV]);
  if (!isMainThread || !Number.isSafeInteger(pid) || pid <= 0 || process.ppid === pid || processExists(pid)) return null;
  return `its launcher (railcomm run, pid ${pid}) ended before this process reached it`;
}
