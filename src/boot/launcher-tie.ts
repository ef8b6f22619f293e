// A rank started by railcomm run (locally, over ssh, or through `ip netns
// exec`) ends when the process that started it ends. The launcher's
// connection closing tells a rank on its event loop; a rank busy in a long
// computation never looks, so the kernel signals it instead (the native
// addon's prctl PR_SET_PDEATHSIG; without the addon only the connection tells).

import { constants as osConstants } from 'node:os';
import { isMainThread } from 'node:worker_threads';
import { loadNative } from '../native/addon.js';

/** Ask for SIGTERM when this process's parent ends; false when that cannot be arranged here. */
export function endWithParent(): boolean {
  // The setting belongs to the process's main thread (a worker's would never fire).
  if (!isMainThread) return false;
  const native = loadNative();
  if (native?.parentDeathSignal === undefined) return false;
  try {
    native.parentDeathSignal(osConstants.signals.SIGTERM);
    return true;
  } catch {
    return false;
  }
}
