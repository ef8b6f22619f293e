// Single-copy access to another rank's memory: Linux cross-memory attach (the
// native addon's process_vm_readv/writev) for the shm rail (another process),
// and a plain memcpy for the tbsm rail (another thread of this process: CMA on
// our own pid pins every page, 75 us a MiB here against memcpy's 20).

import type { RailIpc } from '../api.js';
import type { NativeAddon } from '../../native/addon.js';

/** ESRCH as the rails report it: the peer's process is gone. */
const GONE = -3;
/** A short transfer (the kernel moved fewer bytes than asked): EIO. */
const SHORT = -5;

export function cmaIpc(native: NativeAddon, pidOf: () => number): RailIpc {
  return {
    addressOf: (buf) => native.addressOf(buf),
    read(dst, address) {
      const pid = pidOf();
      if (pid === 0) return GONE;
      const n = native.cmaRead(pid, address, dst);
      return n < 0 ? n : n === dst.byteLength ? 0 : SHORT;
    },
    write(src, address) {
      const pid = pidOf();
      if (pid === 0) return GONE;
      const n = native.cmaWrite(pid, address, src);
      return n < 0 ? n : n === src.byteLength ? 0 : SHORT;
    },
  };
}

/** Another thread of this process: memcpy (the range's ends probed first); CMA where the addon predates it. */
export function sameProcessIpc(native: NativeAddon): RailIpc {
  const memRead = native.memRead, memWrite = native.memWrite;
  if (memRead === undefined || memWrite === undefined) return cmaIpc(native, () => process.pid);
  return {
    addressOf: (buf) => native.addressOf(buf),
    read(dst, address) {
      const n = memRead(address, dst);
      return n < 0 ? n : n === dst.byteLength ? 0 : SHORT;
    },
    write(src, address) {
      const n = memWrite(address, src);
      return n < 0 ? n : n === src.byteLength ? 0 : SHORT;
    },
  };
}
