// The udp rail's sizes (rail.ts): the largest header, fragment and copy it
// carries, the queue mark and timeout floor, and what follows from them and
// the device's MTU: the limits its sessions work under, the caps it offers.

import type { Device, RailCaps } from '../api.js';
import type { Params } from '../../core/params.js';
import { crcInHardware } from './checksum.js';
import type { SessionLimits } from './session-host.js';
import { FRAG_BYTES } from './wire.js';

/** Largest AM header carried. */
export const HDR_MAX = 256;
/** Largest fragment: one sendZcopy / sendCopy (rendezvous chunks are 1 MiB by default). */
export const FRAG_MAX = 4 << 20;
const COPY_MAX = 1 << 20;
/** Queued bytes per peer before sendCopy answers no-resource. */
const HIGH_WATER = 16 << 20;
/** Lowest retransmission timeout (ms): Node's timers and pauses are millisecond-grained. */
const RTO_FLOOR_MS = 5;

/** Sessions' limits for datagrams of up to mtu bytes: the window rounded up to a power of two, tiny datagrams as RAILCOMM_UDP_TINY_MTU says. */
export function sessionLimits(p: Params, mtu: number): SessionLimits {
  let w = 16;
  while (w < p.udpWindow) w *= 2;
  const tinyMax = Math.min(mtu, FRAG_BYTES + p.udpTinyMtu);
  return {
    hdrMax: HDR_MAX, fragMax: FRAG_MAX, tinyMax, dataMax: mtu, window: w,
    rtoMs: p.udpRtoMs, rtoFloorMs: RTO_FLOOR_MS, highWater: HIGH_WATER, headerSumOnly: !p.udpChecksum, crc32c: p.udpChecksum && crcInHardware,
  };
}

export function udpCaps(device: Device, mtu: number): RailCaps {
  return {
    reliable: true,
    ordered: true,
    amHeaderMax: HDR_MAX,
    amShortMax: Math.max(0, Math.min(1024, mtu - FRAG_BYTES - HDR_MAX)),
    amCopyMax: COPY_MAX,
    amZcopyMax: FRAG_MAX,
    put: false,
    get: false,
    atomics: false,
    latencyUs: device.kind === 'loopback' ? 40 : 60,
    bandwidthMBps: device.kind === 'loopback' ? 1500 : 1000,
  };
}
