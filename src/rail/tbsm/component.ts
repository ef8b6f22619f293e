// The tbsm component: available in worker-thread ranks of a thread job
// (railcomm run --threads), reaching the other threads of the same process.

import { isMainThread } from 'node:worker_threads';
import type { Component, Device, Rail, RailEnv } from '../api.js';
import type { Params } from '../../core/params.js';
import { TbsmRail } from './rail.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { RING_MAX } from '../shared/ring.js';

export const tbsmComponent: Component = {
  name: 'tbsm',
  reach: 'process',
  available() {
    if (isMainThread) return { ok: false, why: 'this rank is not a worker thread (railcomm run --threads)' };
    if (typeof Atomics.waitAsync !== 'function') return { ok: false, why: 'Atomics.waitAsync is missing' };
    return { ok: true, why: 'worker thread with SharedArrayBuffer and Atomics.waitAsync' };
  },
  queryDevices(_params: Params): Device[] {
    return [{ component: 'tbsm', name: `pid${process.pid}`, kind: 'memory', notes: 'threads of this process' }];
  },
  async open(device: Device, env: RailEnv): Promise<Rail> {
    const ring = env.params.tbsmRing;
    if ((ring & (ring - 1)) !== 0 || ring > RING_MAX) {
      throw new RailcommError(ErrorCode.INVALID_ARG, `RAILCOMM_TBSM_RING=${ring}: must be a power of two up to 512m (e.g. 1m, 4m)`);
    }
    return new TbsmRail(device, env, ring);
  },
};
