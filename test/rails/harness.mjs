// The rail conformance suite's harness (conformance*.test.mjs and each rail's
// own *-rail.test.mjs): two sides of a rail that reach each other, recording what
// arrives, every rail under test with what it must declare and offer, and the
// payload helpers. Not a test file itself.

import assert from 'node:assert/strict';
import { test as nodeTest } from 'node:test';
import { selfComponent } from '../../dist/rail/self/component.js';
import { tcpComponent } from '../../dist/rail/tcp/component.js';
import { tbsmComponent } from '../../dist/rail/tbsm/component.js';
import { udpComponent } from '../../dist/rail/udp/component.js';
import { shmComponent } from '../../dist/rail/shm/component.js';
import { resolveParams } from '../../dist/core/params.js';
import { Logger } from '../../dist/core/log.js';
import { endpointId } from '../../dist/core/ids.js';
import { needAddon, need } from '../helpers/requires.mjs';
import { ofiComponent } from '../../dist/rail/ofi/component.js';
import { loadOfi, ofiWhy } from '../../dist/rail/ofi/native.js';

export const JOB = 77;
/** Polled rails (shared memory) deliver only when polled: the waits below poll them. */
export const polled = new Set();
export const KEY = 'ab'.repeat(32);
export const AM_MSG = 1;
export const AM_BULK = 2;

/** A process-like side: its own upcalls, recording what arrives. */
export function makeSide(rank, params) {
  const side = {
    rank, id: endpointId(JOB, rank), got: [], placed: [], failed: [], messages: [], ready: 0, accepted: 0, waiters: [],
    upcalls: null, rail: null,
    /** What the rail logged: kept here (negative cases log errors on purpose), not printed. */
    logged: [],
  };
  const handlers = [];
  handlers[AM_MSG] = {
    recv: (ep, rx) => {
      // RxFrame.words, where a rail gives it: rx.buf's own memory as words from its first byte (copyOut relies on it).
      if (rx.words !== null) {
        assert.ok(rx.words.buffer === rx.buf.buffer && rx.words.byteOffset === rx.buf.byteOffset && rx.words.length === rx.buf.length >> 2, 'rx.words covers rx.buf from its first byte');
        if (rx.payLen >= 4 && (rx.payOff & 3) === 0) assert.equal(rx.words[rx.payOff >> 2], rx.buf.readInt32LE(rx.payOff), 'the same bytes');
      }
      side.got.push({ peer: ep.peer, hdr: Buffer.from(rx.buf.subarray(rx.hdrOff, rx.hdrOff + rx.hdrLen)), payload: Buffer.from(rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen)) });
      side.notify();
    },
  };
  handlers[AM_BULK] = {
    place: (_ep, rx) => {
      const target = new Uint8Array(rx.payLen);
      side.placed.push(target);
      return target;
    },
    recv: (ep, rx) => {
      assert.ok(rx.placed, 'placed payloads arrive with rx.placed');
      side.got.push({ peer: ep.peer, hdr: Buffer.from(rx.buf.subarray(rx.hdrOff, rx.hdrOff + rx.hdrLen)), payload: Buffer.from(rx.placed), placed: true });
      side.notify();
    },
  };
  side.notify = () => { const w = side.waiters; side.waiters = []; for (const f of w) f(); };
  side.until = async (cond, what, ms = 10_000) => {
    const t0 = Date.now();
    while (!cond()) {
      if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
      let any = false;
      for (const r of polled) if (r.poll()) any = true;
      if (any) continue;
      await new Promise((r) => { side.waiters.push(r); setTimeout(r, polled.size > 0 ? 1 : 20); });
    }
  };
  side.upcalls = {
    am: handlers,
    ready: () => { side.ready++; side.notify(); },
    failed: (ep, err, graceful) => { side.failed.push({ peer: ep.peer, code: err.code, graceful }); side.messages.push(err.message); side.notify(); },
    accepted: () => { side.accepted++; },
    activity: () => {},
  };
  side.env = { self: side.id, jobId: JOB, jobKey: KEY, params, log: new Logger('error', 'railcomm', (line) => side.logged.push(line)), upcalls: side.upcalls };
  return side;
}

export const first = (devices) => devices[0];
export const loopback = (devices) => devices.find((d) => d.kind === 'loopback');

/** Rails of one component for two ranks a and b on the device `pick` chooses; `poll`: shared-memory rails the waits must poll. */
export async function openPair(component, params, pick, poll) {
  const a = makeSide(0, params);
  const b = makeSide(1, params);
  const dev = pick(component.queryDevices(params));
  a.rail = await component.open(dev, a.env);
  b.rail = await component.open(dev, b.env);
  if (poll) { polled.add(a.rail); polled.add(b.rail); }
  return {
    a, b, canFail: true,
    epAB: () => a.rail.endpoint(b.id, b.rail.address()),
    epBA: () => b.rail.endpoint(a.id, a.rail.address()),
    close: async () => { await a.rail.close(); await b.rail.close(); polled.delete(a.rail); polled.delete(b.rail); },
  };
}

export const RAILS = [
  {
    name: 'self',
    async open(params) {
      const a = makeSide(0, params);
      const [dev] = selfComponent.queryDevices(params);
      a.rail = await selfComponent.open(dev, a.env);
      return { a, b: a, epAB: () => a.rail.endpoint(a.id, 'self'), close: () => a.rail.close(), canFail: false };
    },
  },
  // Two thread ranks' rails; here both live in this thread, which the rail does not mind.
  { name: 'tbsm', open: (params) => openPair(tbsmComponent, params, first, true) },
  { name: 'tcp', open: (params) => openPair(tcpComponent, params, loopback, false) },
  { name: 'udp', open: (params) => openPair(udpComponent, params, loopback, false) },
];

// shm needs the native addon; without it each shm case skips, saying why (under CI=true, fails).
const shmAvail = shmComponent.available();
// Two process ranks' rails; here both live in this process, which the rail does not mind.
RAILS.push({ name: 'shm', open: (params) => openPair(shmComponent, params, first, true), missing: needAddon() });
if (!shmAvail.ok) assert.ok(RAILS.at(-1).missing.reason !== null, `shm is unavailable (${shmAvail.why}) although the addon loads`);

// ofi, once per libfabric provider it passes on (each opens the provider's
// loopback domain, or shm): skipped, with the reason, where the libfabric
// binding is not built (no libfabric headers) or the provider is absent.
export const OFI = [['ofi-tcp', 'tcp;ofi_rxm/lo'], ['ofi-shm', 'shm/shm'], ['ofi-udp', 'udp;ofi_rxd/lo'], ['ofi-sockets', 'sockets/lo']];
const ofiDevices = loadOfi() === null ? [] : ofiComponent.queryDevices(resolveParams());
for (const [name, device] of OFI) {
  const why = loadOfi() === null ? ofiWhy() : ofiDevices.some((d) => d.name === device) ? null : `libfabric offers no ${device} here`;
  RAILS.push({ name, device, open: (params) => openPair(ofiComponent, params, (ds) => ds.find((d) => d.name === device), true), missing: need('ofi', why) });
}
// tcp;ofi_rxm again with RAILCOMM_OFI_WAIT_FD=0: its queue without a wait fd,
// so the rail sleeps on its timer, as on shm and udp;ofi_rxd (checked at open).
{
  const why = loadOfi() === null ? ofiWhy() : ofiDevices.some((d) => d.name === 'tcp;ofi_rxm/lo') ? null : 'libfabric offers no tcp;ofi_rxm/lo here';
  RAILS.push({
    name: 'ofi-tcp-nowait',
    device: 'tcp;ofi_rxm/lo',
    tune: (params) => ({ ...params, ofiWaitFd: false }),
    async open(params) {
      const pair = await openPair(ofiComponent, this.tune(params), (ds) => ds.find((d) => d.name === this.device), true);
      for (const side of [pair.a, pair.b]) assert.equal(side.rail.opened.waitFd, -1, 'RAILCOMM_OFI_WAIT_FD=0: no wait fd');
      return pair;
    },
    missing: need('ofi', why),
  });
}

/**
 * What each rail must declare (its RailCaps flags) and offer (the optional
 * parts of the rail interface), as they are today: a rail that loses one
 * fails the first case below instead of quietly skipping the cases that use
 * it. ipc: single-copy access to the peer's memory on its endpoints ('addon':
 * where the native addon loads); allocShared: memory the peer can map;
 * polled: poll/settle/sleep (the rail delivers only when polled); bell: its
 * doorbell; reaches: Rail.whyNot (which peers it reaches, and why not); peek: endpoints polled alone (peek,
 * takePeeked, poll); rma: registered memory peers reach natively (registerMemory,
 * unpackRemoteKey, dropRemoteKey, the endpoint's rma); rendezvousReads: the
 * protocol may read large messages that way (proto/rndv/rdma.ts); syncWait: how a
 * synchronous call waits on it (caps.syncWait: 'memory', or 'queue' with blockSync; null: it cannot);
 * beginFinalize: Rail.beginFinalize (a peer found gone while finalizing finalized first); probe:
 * RailEndpoint.probe (a frame the peer drops, sent so that a broken connection shows);
 * describeState: Rail.describeState (what the rail holds, for the hang report); giveUp:
 * RailEndpoint.giveUp (multirail gives up on a silent lane: failed at once, nothing left in flight).
 */
const NET = { ipc: false, allocShared: false, polled: false, bell: false, peek: false, rma: false, rendezvousReads: false, syncWait: null, beginFinalize: false, probe: false, describeState: false, giveUp: false };
const RING = { polled: true, bell: true, reaches: true, peek: true, rma: false, rendezvousReads: false, syncWait: 'memory', beginFinalize: false, probe: false, describeState: false, giveUp: false };
export const MUST = {
  self: { caps: { reliable: true, ordered: true, put: false, get: false, atomics: false, copiesAtSend: false }, ...NET, reaches: false, syncWait: 'memory' },
  tbsm: { caps: { reliable: true, ordered: true, put: false, get: false, atomics: false, copiesAtSend: true }, ...RING, ipc: 'addon', allocShared: false },
  tcp: { caps: { reliable: true, ordered: true, put: false, get: false, atomics: false, copiesAtSend: false }, ...NET, reaches: false, giveUp: true },
  udp: { caps: { reliable: true, ordered: true, put: false, get: false, atomics: false, copiesAtSend: false }, ...NET, reaches: true, giveUp: true },
  shm: { caps: { reliable: true, ordered: true, put: false, get: false, atomics: false, copiesAtSend: true }, ...RING, ipc: true, allocShared: true, beginFinalize: true },
};
// ofi: polled (it reads its completion queue when progress polls it) with no doorbell, native RMA
// declared and offered; rendezvous by remote read on every provider (rail/ofi/rail.ts).
for (const name of [...OFI.map(([n]) => n), 'ofi-tcp-nowait']) MUST[name] = { caps: { reliable: true, ordered: true, put: true, get: true, atomics: true, copiesAtSend: false }, ...NET, polled: true, reaches: true, rma: true, rendezvousReads: true, syncWait: 'queue', beginFinalize: true, probe: true, describeState: true, giveUp: true };
assert.deepEqual(RAILS.map((r) => r.name).sort(), Object.keys(MUST).sort(), 'every rail has its row');

export const hdrOf = (i) => { const h = new Uint8Array(8); new DataView(h.buffer).setUint32(0, i, true); return h; };
/**
 * a's endpoint to b, once a first message from a reached b: the peers know
 * each other (and, on ofi and udp, a's HELLO proved the job key), so what a
 * test sends next finds a connection.
 */
export async function connected(pair) {
  const ab = pair.epAB();
  ab.sendCopy(AM_MSG, hdrOf(0), 8, null);
  await pair.b.until(() => pair.b.got.length === 1, 'first message');
  return ab;
}
export const fill = (n, seed) => { const b = new Uint8Array(n); for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff; return b; };

/** A rail by its name in RAILS. */
export const railNamed = (name) => RAILS.find((r) => r.name === name);

/**
 * The test function for a rail's cases and what the rail must offer: the cases
 * of a rail that cannot open here skip (or fail, under CI) with its reason.
 */
export function forRail(R) {
  const test = R.missing === undefined || R.missing.reason === null ? nodeTest : (name, fn) => nodeTest(name, R.missing, fn);
  return { test, must: MUST[R.name] };
}
