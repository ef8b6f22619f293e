// The shm component: processes on one host, over rings in /dev/shm segments
// mapped by railcomm's native addon. Unavailable (with the reason) when the
// addon did not build; processes on one host then use tcp.

import { existsSync, statfsSync } from 'node:fs';
import type { Component, Device, Rail, RailEnv } from '../api.js';
import type { Params } from '../../core/params.js';
import { loadNative, nativeWhy } from '../../native/addon.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { hostKey } from '../../core/host.js';
import { ShmRail } from './rail.js';
import { RING_MAX } from '../shared/ring.js';
import { INBOX_BYTES } from './wire.js';

/** Bytes an unprivileged process may still allocate in /dev/shm, or null when it cannot be told. */
function shmFree(): number | null {
  try {
    const s = statfsSync('/dev/shm');
    return s.bavail * s.bsize;
  } catch {
    return null;
  }
}

const mib = (b: number): string => `${(b / 1048576).toFixed(b < 10485760 ? 1 : 0)} MiB`;

export const shmComponent: Component = {
  name: 'shm',
  reach: 'host',
  available() {
    const native = loadNative();
    if (native === null) return { ok: false, why: nativeWhy() };
    if (!existsSync('/dev/shm')) return { ok: false, why: '/dev/shm is missing' };
    const free = shmFree();
    return { ok: true, why: `${nativeWhy()}; /dev/shm: ${free === null ? 'free space unknown' : `${mib(free)} free`}` };
  },
  fits(params: Params, hostPeers: number): string | null {
    const free = shmFree();
    // An inbox and one ring per peer it sends to (made on first use), with room to spare.
    const need = INBOX_BYTES + Math.max(1, hostPeers) * (128 + params.shmRing);
    if (free === null || free >= need) return null;
    return `/dev/shm has ${mib(free)} free, and rings to ${hostPeers} peer${hostPeers === 1 ? '' : 's'} need ${mib(need)} (RAILCOMM_SHM_RING=${params.shmRing}); free space there or enlarge it`;
  },
  queryDevices(_params: Params): Device[] {
    return [{ component: 'shm', name: 'devshm', kind: 'memory', notes: '/dev/shm segments, rings per ordered pair of processes' }];
  },
  async open(device: Device, env: RailEnv): Promise<Rail> {
    const native = loadNative();
    if (native === null) throw new RailcommError(ErrorCode.NO_RAIL, `shm rail: ${nativeWhy()}`);
    const ring = env.params.shmRing;
    if ((ring & (ring - 1)) !== 0 || ring > RING_MAX) {
      throw new RailcommError(ErrorCode.INVALID_ARG, `RAILCOMM_SHM_RING=${ring}: must be a power of two up to 512m (e.g. 1m, 4m)`);
    }
    return new ShmRail(device, env, native, ring, hostKey());
  },
};
