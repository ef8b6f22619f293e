// The ofi component: libfabric's reliable datagram endpoints (FI_EP_RDM with
// messages, RMA and atomics), one device per provider and domain that the
// rail can use, filtered by FI_PROVIDER (libfabric's own) and
// RAILCOMM_OFI_PROVIDERS. Opt-in: a job uses it when RAILCOMM_RAILS names it.

import os from 'node:os';
import type { Component, Device, Rail, RailEnv } from '../api.js';
import type { Params } from '../../core/params.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { loadOfi, ofiBuilt, ofiWhy, type OfiGetinfo, type OfiInfo } from './native.js';
import { OfiRail } from './rail.js';

const FI_SOCKADDR_IN = 2;

let cached: OfiGetinfo | null = null;
/** fi_getinfo once per process (its first call costs a quarter of a second: libfabric loads its providers). */
function getinfo(): OfiGetinfo | null {
  const b = loadOfi();
  if (b === null) return null;
  cached ??= b.getinfo();
  return cached;
}

/** Whether a provider name matches one of the comma-separated patterns (exact, its core provider, or a * glob). */
export function providerMatches(provider: string, patterns: string): boolean {
  const list = patterns.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) return true;
  const core = provider.split(';')[0]!;
  return list.some((p) => {
    if (p.includes('*')) return new RegExp('^' + p.replace(/[.+^${}()|[\]\\;]/g, '\\$&').replace(/\*/g, '.*') + '$').test(provider);
    return p === provider || p === core;
  });
}

/** One answer per provider and domain (IPv4 addresses preferred), in libfabric's order (its providers' priority). */
function devicesOf(info: OfiGetinfo, filter: string): Array<{ d: OfiInfo }> {
  const seen = new Map<string, OfiInfo>();
  for (const i of info.usable) {
    if (!providerMatches(i.provider, filter)) continue;
    const k = `${i.provider}/${i.domain}`;
    const had = seen.get(k);
    if (had === undefined || (had.addrFormat !== FI_SOCKADDR_IN && i.addrFormat === FI_SOCKADDR_IN)) seen.set(k, i);
  }
  return [...seen.values()].map((d) => ({ d }));
}

const kindOf = (i: OfiInfo): Device['kind'] => (i.provider === 'shm' ? 'memory' : i.domain === 'lo' ? 'loopback' : 'network');

/** The info a device was made from (devices are plain records: looked up by name). */
const byName = new Map<string, OfiInfo>();

/** What `railcomm info` shows of a provider: caps, MR mode, progress and wait object. */
function describe(i: OfiInfo, wait: string): string {
  const mr = i.mrModeText === '0' ? 'offsets from the registration, keys chosen by railcomm' : `${i.mrModeText}${i.mrMode & 16 ? '' : ' (offsets)'}`;
  return `caps ${i.caps}; mr_mode ${mr}; progress data ${i.dataProgress}, control ${i.controlProgress}; wait object ${wait || 'unknown'}; inject ${i.injectSize} B, tx/rx queues ${i.txSize}/${i.rxSize}, contexts ${i.maxTxContexts}`;
}

export const ofiComponent: Component = {
  name: 'ofi',
  reach: 'network',
  optIn: true,
  available() {
    // (Nothing loaded here: available() runs at every init, and loading libfabric costs a fifth of a second.)
    const b = ofiBuilt();
    return b.ok ? { ok: true, why: `${b.why}; opt-in: RAILCOMM_RAILS=ofi,... uses it` } : b;
  },
  queryDevices(params: Params): Device[] {
    const info = getinfo();
    const b = loadOfi();
    if (info === null || b === null) return [];
    const out: Device[] = [];
    for (const { d } of devicesOf(info, params.ofiProviders)) {
      const name = `${d.provider}/${d.domain}`;
      byName.set(name, d);
      // The domain's IPv4 address, where it names a network device (context step 5 picks the routed one across hosts).
      const address = os.networkInterfaces()[d.domain]?.find((a) => a.family === 'IPv4')?.address;
      out.push({ component: 'ofi', name, kind: kindOf(d), ...(address !== undefined && d.provider !== 'shm' ? { address } : {}), notes: describe(d, b.waitObject(d.provider, d.domain, d.addrFormat)) });
    }
    return out;
  },
  report(): string[] {
    const info = getinfo();
    if (info === null) return [];
    const refused = new Map<string, string>();
    for (const r of info.refused) refused.set(r.provider, r.why ?? '');
    return [`libfabric ${info.version}; FI_EP_RDM with FI_MSG|FI_RMA|FI_ATOMIC`, ...[...refused].map(([p, w]) => `refused ${p}: ${w}`)];
  },
  async open(device: Device, env: RailEnv): Promise<Rail> {
    const b = loadOfi();
    if (b === null) throw new RailcommError(ErrorCode.NO_RAIL, `ofi rail: ${ofiWhy()}`);
    const info = byName.get(device.name);
    if (info === undefined) throw new RailcommError(ErrorCode.NO_RAIL, `ofi rail: no provider/domain ${device.name} here (query the devices first)`);
    try {
      return new OfiRail(device, env, b, info);
    } catch (e) {
      throw new RailcommError(ErrorCode.NO_RAIL, `ofi rail: cannot open ${device.name}: ${(e as Error).message}`, { cause: e });
    }
  },
};

/** Providers the rail refuses here, with the reason (for railcomm info and tests). */
export function refusedProviders(): Array<{ provider: string; domain: string; why: string }> {
  return (getinfo()?.refused ?? []).map((r) => ({ provider: r.provider, domain: r.domain, why: r.why ?? '' }));
}
