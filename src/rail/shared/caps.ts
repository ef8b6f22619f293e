// What the ring rails (tbsm between threads, shm between processes) offer the
// protocol: one frame may take up to half a ring (minus its head and the
// largest header), copying in is the transfer (copiesAtSend), and rendezvous
// starts at each rail's measured crossover.

import type { RailCaps } from '../api.js';
import { FRAME_HEAD } from './ring.js';

const HEADER_MAX = 256;

export function ringRailCaps(ringBytes: number, latencyUs: number, rndvThreshold: number): RailCaps {
  const body = Math.min(ringBytes / 2 - FRAME_HEAD - HEADER_MAX - 8, 1 << 18);
  return {
    reliable: true, ordered: true,
    amHeaderMax: HEADER_MAX, amShortMax: 1024,
    amCopyMax: body, amZcopyMax: body,
    put: false, get: false, atomics: false,
    copiesAtSend: true, syncWait: 'memory',
    latencyUs, bandwidthMBps: 8000,
    rndvThreshold,
  };
}
