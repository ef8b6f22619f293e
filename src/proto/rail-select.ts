// Init steps 2 to 5 of the protocol context: the components this build can
// use, those the job's layout and RAILCOMM_RAILS keep, their devices, and the
// devices that get a rail; and why no rail reaches a peer's addresses.

import type { Component, Device, Rail } from '../rail/api.js';
import { COMPONENTS } from '../rail/components.js';
import type { Params } from '../core/params.js';
import type { Logger } from '../core/log.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import type { ContextOptions } from './context.js';

/** Adds an init step's lines to the report (and the debug log). */
export type Say = (step: number, title: string, lines: string[]) => void;

/** A device glob (RAILCOMM_TCP_DEVICES: * and ?) as a regular expression. */
export function globToRegExp(g: string): RegExp {
  return new RegExp('^' + g.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$');
}

/** Steps 2 and 3: the components this build has that the job's layout and RAILCOMM_RAILS keep. */
export function chooseComponents(opts: ContextOptions, params: Params, log: Logger, say: Say): Component[] {
  // Step 2: which components this build can use.
  const usable: Component[] = [];
  const l2: string[] = [];
  for (const c of COMPONENTS) {
    const a = c.available();
    l2.push(`${c.name}: ${a.ok ? 'available' : 'unavailable'} (${a.why})`);
    if (a.ok) usable.push(c);
  }
  say(2, 'component availability', l2);

  // Step 3: filter by job layout and by RAILCOMM_RAILS.
  const wanted = params.rails.split(',').map((s) => s.trim()).filter(Boolean);
  for (const w of wanted) {
    if (!COMPONENTS.some((c) => c.name === w)) {
      throw new RailcommError(ErrorCode.INVALID_ARG, `RAILCOMM_RAILS names '${w}', which this build does not have; known rails: ${COMPONENTS.map((c) => c.name).join(', ')}`);
    }
  }
  const l3: string[] = [];
  const layoutOk = (c: Component): string | null => {
    if (opts.probeAll) return null;
    if (c.reach === 'self') return null;
    if (opts.launch.size === 1) return 'a world of one rank needs only self';
    if (c.reach === 'process' && opts.launch.threads < 2) return 'no other rank is a thread of this process';
    if (c.reach !== 'process' && opts.launch.threads >= opts.launch.size) return 'every rank is a thread of this process';
    if (c.reach === 'host' && opts.launch.localSize <= opts.launch.threads) return 'no other process of this job on this host';
    return null;
  };
  const chosen = usable.filter((c) => {
    if (wanted.length > 0 && !wanted.includes(c.name) && c.reach !== 'self') { l3.push(`${c.name}: dropped (not in RAILCOMM_RAILS=${params.rails})`); return false; }
    if (c.optIn === true && !wanted.includes(c.name) && !opts.probeAll) { l3.push(`${c.name}: dropped (opt-in: name it in RAILCOMM_RAILS)`); return false; }
    const why = layoutOk(c) ?? (opts.probeAll ? null : c.fits?.(params, Math.max(0, opts.launch.localSize - opts.launch.threads)) ?? null);
    if (why !== null) {
      l3.push(`${c.name}: dropped (${why})`);
      // Not a layout choice but a surprise the user should hear about.
      if (c.fits !== undefined && layoutOk(c) === null) log.warn(`${c.name} rail not used: ${why}`);
      return false;
    }
    l3.push(`${c.name}: kept`);
    return true;
  });
  say(3, 'filter components by layout', l3);
  return chosen;
}

/** Steps 4 and 5: the devices of those components, and which of them get a rail. */
export function pickDevices(chosen: readonly Component[], opts: ContextOptions, params: Params, say: Say): Array<[Component, Device]> {
  // Step 4: devices of the remaining components.
  const devices = new Map<Component, Device[]>();
  const l4: string[] = [];
  for (const c of chosen) {
    const ds = c.queryDevices(params);
    devices.set(c, ds);
    l4.push(`${c.name}: ${ds.map((d) => `${d.name}${d.address ? ' ' + d.address : ''} (${d.kind})`).join(', ') || 'none'}`);
    // railcomm info: what each of an opt-in component's devices offers (ofi: caps, MR mode, progress, wait object).
    if (opts.probeAll && c.optIn === true) {
      for (const d of ds) if (d.notes) l4.push(`  ${c.name} ${d.name}: ${d.notes}`);
      for (const line of c.report?.() ?? []) l4.push(`  ${c.name}: ${line}`);
    }
  }
  say(4, 'query devices', l4);

  // Step 5: filter devices by name: one rail per component, but tcp and udp
  // across hosts take every network device (one lane per NIC, lanes/).
  const picked: Array<[Component, Device]> = [];
  const l5: string[] = [];
  const oneHost = opts.launch.localSize === opts.launch.size;
  for (const [c, ds] of devices) {
    let pool = ds;
    // udp picks its device the same way (and honours the same device globs).
    if (c.name === 'tcp' || c.name === 'udp') {
      const globs = params.tcpDevices.split(',').map((s) => s.trim()).filter(Boolean);
      if (globs.length > 0) {
        const res = globs.map(globToRegExp);
        pool = ds.filter((d) => res.some((r) => r.test(d.name)));
        if (pool.length === 0) throw new RailcommError(ErrorCode.NO_RAIL, `RAILCOMM_TCP_DEVICES=${params.tcpDevices} matches none of this host's devices (${ds.map((d) => d.name).join(', ')})`);
      } else if (oneHost) {
        pool = ds.filter((d) => d.kind === 'loopback');
      } else {
        // Across hosts: a rail on every network device (each a lane to the
        // peers in its subnet: two NICs, two lanes); first the device that
        // carries our connection to the wire-up service, which routes to
        // the job's network when no subnet is shared.
        const via = opts.kv?.localAddress()?.replace(/^::ffff:/, '');
        const net = ds.filter((d) => d.kind === 'network');
        const routed = net.filter((d) => d.address === via);
        pool = [...routed, ...net.filter((d) => d.address !== via)];
        if (routed.length > 0) l5.push(`${c.name}: ${routed[0]!.name} carries the connection to the wire-up service (${via})`);
      }
      if (pool.length === 0) pool = ds.slice(0, 1);
      // One rail per device: two addresses of one interface are not two paths.
      const names = new Set<string>();
      pool = pool.filter((d) => !names.has(d.name) && names.add(d.name) !== undefined);
    } else if (c.name === 'ofi') {
      // The first provider (libfabric's order, or RAILCOMM_OFI_PROVIDERS'): on one
      // host its loopback domain; across hosts, like tcp, its domain on the device
      // that carries the connection to the wire-up service, else not loopback.
      const provider = ds[0]?.name.split('/')[0];
      const mine = ds.filter((d) => d.name.split('/')[0] === provider);
      const via = opts.kv?.localAddress()?.replace(/^::ffff:/, '');
      const routed = !oneHost && via !== undefined ? mine.filter((d) => d.address === via) : [];
      pool = oneHost ? mine.filter((d) => d.kind === 'loopback') : routed.length > 0 ? routed : mine.filter((d) => d.kind !== 'loopback');
      if (routed.length > 0) l5.push(`${c.name}: ${routed[0]!.name} carries the connection to the wire-up service (${via})`);
      if (pool.length === 0) pool = mine.length > 0 ? mine : ds;
      pool = pool.slice(0, 1);
    } else {
      pool = pool.slice(0, 1);
    }
    if (pool.length === 0) { l5.push(`${c.name}: no usable device`); continue; }
    for (const d of pool) {
      picked.push([c, d]);
      l5.push(`${c.name}: ${d.name}${d.address ? ' ' + d.address : ''}${oneHost && (c.name === 'tcp' || c.name === 'udp') ? ' (all ranks on this host)' : ''}`);
    }
  }
  say(5, 'filter devices', l5);
  return picked;
}

/** Why the rails that share a component with the peer's addresses do not reach them: '' or '; ofi: why, ...'. */
export function whyNoRail(rails: readonly Rail[], addrs: Readonly<Record<string, readonly string[]>>): string {
  const why: string[] = [];
  for (const r of rails) {
    if (r.whyNot === undefined) continue;
    for (const address of addrs[r.component] ?? []) {
      const w = r.whyNot(address);
      if (w !== null && !why.includes(`${r.component}: ${w}`)) why.push(`${r.component}: ${w}`);
    }
  }
  return why.length === 0 ? '' : `; ${why.join('; ')}`;
}
