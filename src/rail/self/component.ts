// The self component: one device, always available, reaching only this rank.

import type { Component, Device, Rail, RailEnv } from '../api.js';
import { SelfRail } from './rail.js';

export const selfComponent: Component = {
  name: 'self',
  reach: 'self',
  available() { return { ok: true, why: 'built in' }; },
  queryDevices(): Device[] { return [{ component: 'self', name: 'self', kind: 'self' }]; },
  async open(device: Device, env: RailEnv): Promise<Rail> { return new SelfRail(device, env); },
};
