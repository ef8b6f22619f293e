// The udp component: finds the IPv4 devices of this host (with their MTU, from
// which the data channel's datagram size follows) and opens a udp rail on the
// one the context chose.

import os from 'node:os';
import { readFileSync } from 'node:fs';
import type { Component, Device, Rail, RailEnv } from '../api.js';
import type { Params } from '../../core/params.js';
import { UdpRail } from './rail.js';
import { UDP_MAX } from './wire.js';

/** IPv4 and UDP headers inside the device MTU. */
const IP_UDP_HEADERS = 28;

function deviceMtu(name: string, loopback: boolean): number {
  try {
    const n = Number(readFileSync(`/sys/class/net/${name}/mtu`, 'utf8').trim());
    if (Number.isInteger(n) && n > 0) return n;
  } catch { /* not Linux, or no such device */ }
  return loopback ? 65536 : 1500;
}

/** The data channel's largest datagram on a device (RAILCOMM_UDP_MTU wins when set). */
export function dataMtu(params: Params, device: Device): number {
  if (params.udpMtu > 0) return Math.max(576, Math.min(UDP_MAX, params.udpMtu));
  return Math.min(UDP_MAX, deviceMtu(device.name, device.kind === 'loopback') - IP_UDP_HEADERS) & ~7;
}

export const udpComponent: Component = {
  name: 'udp',
  reach: 'network',
  available() {
    return { ok: true, why: 'node:dgram is always present' };
  },
  queryDevices(_params: Params): Device[] {
    const out: Device[] = [];
    for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
      for (const a of addrs ?? []) {
        if (a.family !== 'IPv4') continue;
        const loopback = a.internal;
        out.push({ component: 'udp', name, kind: loopback ? 'loopback' : 'network', address: a.address, notes: `${a.cidr ?? a.address}, mtu ${deviceMtu(name, loopback)}` });
      }
    }
    if (!out.some((d) => d.kind === 'loopback')) out.push({ component: 'udp', name: 'lo', kind: 'loopback', address: '127.0.0.1' });
    return out;
  },
  open(device: Device, env: RailEnv): Promise<Rail> {
    return UdpRail.open(device, env, dataMtu(env.params, device));
  },
};
