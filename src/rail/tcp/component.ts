// The tcp component: finds the IPv4 devices of this host and opens a tcp rail
// on the one(s) the context chose.

import os from 'node:os';
import type { Component, Device, Rail, RailEnv } from '../api.js';
import type { Params } from '../../core/params.js';
import { TcpRail } from './rail.js';

export const tcpComponent: Component = {
  name: 'tcp',
  reach: 'network',
  available() {
    return { ok: true, why: 'node:net is always present' };
  },
  queryDevices(_params: Params): Device[] {
    const out: Device[] = [];
    for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
      for (const a of addrs ?? []) {
        if (a.family !== 'IPv4') continue;
        out.push({ component: 'tcp', name, kind: a.internal ? 'loopback' : 'network', address: a.address, notes: a.cidr ?? a.address });
      }
    }
    if (!out.some((d) => d.kind === 'loopback')) out.push({ component: 'tcp', name: 'lo', kind: 'loopback', address: '127.0.0.1' });
    return out;
  },
  open(device: Device, env: RailEnv): Promise<Rail> {
    return TcpRail.open(device, env);
  },
};
