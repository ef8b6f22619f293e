// How a rank's ofi endpoint opens (rail.ts): receive slot and transmit pool
// sizes, the binding's options per provider, a scalable endpoint shared with
// the process's other thread ranks or one of its own, and what follows from
// what opened (caps, native atomics refused, which peers' addresses it reaches).

import type { Device, RailCaps, RailEnv } from '../api.js';
import { shmJobPrefix } from '../../native/addon.js';
import { estimates } from './rma.js';
import type { OfiBinding, OfiInfo, OfiOpened } from './native.js';
import { COPY_MAX, FRAME_HEAD, HEADER_MAX, type OfiAddress } from './wire.js';

/** Largest frame payload: what one receive slot holds past the head and header. */
const ZCOPY_MAX = 131072;
const RX_SLOT = FRAME_HEAD + HEADER_MAX + ZCOPY_MAX;
export const RX_COUNT = 32;
const SMALL_ENTRIES = 4096;
const LARGE_ENTRIES = 32;

/**
 * Whether peers' one-sided operations served here count as activity, so
 * that a waiting rank polls again while they flow (every 16th poll of the
 * binding reads its counter of them: each read runs the provider's progress
 * again, bench/ofi/poll-cost.mjs): where the provider's progress at this
 * rank moves their data (udp;ofi_rxd). Not on shm, whose peers write and
 * read by cross-memory attach where the kernel lets them, which needs no
 * progress here, only a look at the notices now and then (the timer's): a
 * target kept spinning there cost its writer 0.1-0.3 us a put on 2 vCPUs.
 * (A shm peer the kernel does not let attach writes with delivery
 * completion, served at those looks, a millisecond apart: a gap left.)
 */
export function remoteWakes(provider: string): boolean {
  return provider !== 'shm';
}

/** Open the endpoint: a context of a scalable endpoint where sepContexts asks for one and the provider gives it, else a plain endpoint of this rank's own. */
export function openEndpoint(env: RailEnv, b: OfiBinding, info: OfiInfo, rank: number): OfiOpened {
  const options = {
    provider: info.provider, domain: info.domain, addrFormat: info.addrFormat,
    rxSlot: RX_SLOT, rxCount: RX_COUNT, smallCount: SMALL_ENTRIES, largeBytes: FRAME_HEAD + HEADER_MAX + COPY_MAX, largeCount: LARGE_ENTRIES,
    // udp;ofi_rxd takes injects past its transmit queue and then stalls (1.17): every frame gets a completion there.
    inject: !info.provider.startsWith('udp;ofi_rxd'),
    waitFd: env.params.ofiWaitFd,
    remoteWakes: remoteWakes(info.provider),
    // shm names its /dev/shm file after the endpoint: under the job's prefix, railcomm run removes what a killed rank left.
    ...(info.provider === 'shm' ? { node: `${shmJobPrefix(env.jobId, env.jobKey)}ofi${rank}-${process.pid}` } : {}),
  };
  const contexts = sepContexts(env.params, info, env.threadRanks ?? 1);
  let opened: OfiOpened | null = null;
  if (contexts > 1) {
    try {
      opened = b.open({ ...options, contexts });
    } catch (e) {
      // A provider that lists contexts but will not share a domain this way: an endpoint of this rank's own.
      env.log.warn(`ofi (${info.provider}): no scalable endpoint of ${contexts} contexts (${(e as Error).message}); this rank opens an endpoint of its own (RAILCOMM_OFI_SEP=0 says so up front)`);
    }
  }
  return opened ?? b.open(options);
}

/** The rail's caps: zero-copy sends up to a receive slot where sends gather from the caller's memory, else copies only. */
export function ofiCaps(opened: OfiOpened, info: OfiInfo, device: Device, gathers: boolean): RailCaps {
  const zcopy = gathers ? Math.min(ZCOPY_MAX, opened.rxSlot - FRAME_HEAD - HEADER_MAX) : COPY_MAX;
  return {
    reliable: true, ordered: true,
    amHeaderMax: HEADER_MAX, amShortMax: 1024,
    amCopyMax: COPY_MAX, amZcopyMax: zcopy,
    put: true, get: true, atomics: true, syncWait: 'queue',
    ...estimates(info.provider, device.kind),
  };
}

/**
 * Native atomics refused on this provider (emulated there), from what
 * libfabric 1.17 did here: shm frees an atomic's command slot before it
 * reads the operation from it, so atomics from two origins at once to one
 * target land on the wrong elements (sums and maxima wrong with 3 ranks,
 * right with 2); udp;ofi_rxd crashes in progress with two fetching atomics
 * to one peer in flight. And on a provider with automatic data progress
 * (sockets): its own thread applies native atomics while the target's
 * JavaScript applies emulated ones (an origin emulates an atomic that found
 * the transmit queue full), and the two read-modify-writes interleave: CI
 * saw a fetch-and-add total of 79 for 80 from 4 ranks. Where the provider
 * applies them in our own poll (manual progress) they cannot interleave.
 * RAILCOMM_OFI_NATIVE_ATOMICS=1 forces them on.
 */
export function nativeAtomicsOff(provider: string, opened: OfiOpened): boolean {
  return (provider === 'shm' || provider.startsWith('udp;ofi_rxd') || opened.dataProgress === 'auto') && process.env['RAILCOMM_OFI_NATIVE_ATOMICS'] !== '1';
}

/**
 * Contexts of the scalable endpoint this rank's rail shares with its process's
 * other thread ranks, or 0 for a plain endpoint of its own: where the provider
 * offers several contexts, RAILCOMM_OFI_SEP is on, and the process runs
 * several thread ranks (RailEnv.threadRanks) or RAILCOMM_OFI_CONTEXTS asks for
 * at least 2; at most the provider's maximum.
 */
export function sepContexts(params: { ofiSep: boolean; ofiContexts: number }, info: Pick<OfiInfo, 'maxTxContexts' | 'maxRxContexts'>, threads: number): number {
  const most = Math.min(info.maxTxContexts, info.maxRxContexts, 256);
  if (!params.ofiSep || most < 2) return 0;
  const want = params.ofiContexts > 0 ? params.ofiContexts : threads;
  return want < 2 ? 0 : Math.min(want, most);
}

/**
 * Why an endpoint of provider, opened with contexts (0: plain), on host
 * cannot reach a peer's decoded address; null when it can. Same provider and
 * domain kind; shm and loopback domains only on this host; a context other
 * than the first of a peer's scalable endpoint only from a scalable endpoint
 * (a plain endpoint's address vector cannot name contexts).
 */
export function whyNotReach(a: OfiAddress | null, provider: string, contexts: number, host: string, kind: Device['kind']): string | null {
  if (a === null) return 'its address is not an ofi address';
  if (a.provider !== provider) return `it uses provider ${a.provider}, this rank ${provider}`;
  if (a.ctx > 0 && contexts === 0) {
    return `its address is context ${a.ctx} of a scalable endpoint, which this rank's plain endpoint cannot name (the job's processes must agree on RAILCOMM_OFI_SEP and RAILCOMM_OFI_CONTEXTS; a warning says where a scalable endpoint could not open)`;
  }
  if (a.ctx > 0 && a.ctx >= contextSpan(contexts)) {
    return `its address is context ${a.ctx} of a scalable endpoint, past the ${contextSpan(contexts)} this rank's can name (the job's processes must agree on RAILCOMM_OFI_CONTEXTS)`;
  }
  if ((provider === 'shm' || kind === 'loopback') && a.host !== host) {
    return `it is on host ${a.host}, and ${provider === 'shm' ? 'the shm provider' : 'a loopback device'} reaches this host (${host}) only`;
  }
  return null;
}

/** Receive contexts an address vector made for a scalable endpoint of n contexts can name (2^ceil(log2 n): its rx_ctx_bits). */
function contextSpan(n: number): number {
  let s = 1;
  while (s < n) s <<= 1;
  return s;
}
