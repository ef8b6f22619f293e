// The shm component: processes on one host, over rings in /dev/shm segments
// mapped by railcomm's native addon. Unavailable (with the reason) when the
// addon did not build; processes on one host then use tcp.

import { existsSync } from 'node:fs';
import type { Component, Device, Rail, RailEnv } from '../api.js';
import type { Params } from '../../core/params.js';
import { loadNative, nativeWhy } from '../../native/addon.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { hostKey } from '../../core/host.js';
import { ShmRail } from './rail.js';
import { RING_MAX } from '../shared/ring.js';

export const shmComponent: Component = {
  name: 'shm',
  reach: 'host',
  available() {
    const native = loadNative();
    if (native === null) return { ok: false, why: nativeWhy() };
    if (!existsSync('/dev/shm')) return { ok: false, why: '/dev/shm is missing' };
    return { ok: true, why: nativeWhy() };
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
