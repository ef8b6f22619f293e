// CUDA IPC with one peer, negotiated lazily (the smcuda design): on the first
// large device message to a peer, the sender asks whether the peer can open its
// device memory's IPC handles (same host, and the sender's GPU is the peer's
// GPU or one it can access: cuDeviceCanAccessPeer); the answer sets the state
// (INIT, SENT, ACKING, ACKED, OK, BAD; at most 5 tries). The receiver keeps the
// handles it opened in a bounded LRU cache per peer, closed when the owner
// frees the allocation. Pure logic: the driver comes in through interfaces.

import { RegionCache } from '../core/region-cache.js';
import { IPC_ACKED, IPC_ACKING, IPC_BAD, IPC_INIT, IPC_MAX_TRIES, IPC_OK, IPC_SENT, IPC_STATE_NAMES } from './ipc.js';
import { IPC_LATER, IPC_NO, IPC_YES } from './ipc-wire.js';
import type { DevicePlace, IpcReq } from './cuda-wire.js';

export { IPC_INIT, IPC_SENT, IPC_ACKING, IPC_ACKED, IPC_OK, IPC_BAD, IPC_STATE_NAMES, IPC_MAX_TRIES };

/** What this process knows of its own CUDA, to answer a peer's request. */
export interface LocalCuda {
  /** Why this process can never open a peer's handles ('' when it can): no driver, or RAILCOMM_CUDA_IPC=0. */
  never(): string;
  /** Whether CUDA is initialised on this thread yet (else: answer "later", as smcuda does). */
  ready(): boolean;
  hostId(): bigint;
  pid(): number;
  /** This process's ordinal of the GPU at that PCI place, or -1 when it does not see it. */
  deviceAt(place: DevicePlace): number;
  /** This thread's device. */
  current(): number;
  canAccessPeer(mine: number, theirs: number): boolean;
}

/** How the negotiation talks to one peer (the protocol layer sends DEV_CTRL). */
export interface CudaIpcLink {
  sendRequest(attempt: number): void;
  sendAck(status: number): void;
}

/** Negotiation state with one peer: tx is whether it opens our handles, rx whether we open its. */
export class CudaIpcPeer {
  tx = IPC_INIT;
  rx = IPC_INIT;
  tries = 0;
  /** Why rx or tx went BAD, for --stats and the hang report. */
  why = '';
}

export class CudaIpcNegotiation {
  readonly maxTries: number;
  private readonly local: LocalCuda;

  constructor(local: LocalCuda, maxTries = IPC_MAX_TRIES) {
    this.local = local;
    this.maxTries = maxTries;
  }

  /**
   * Sender of a large device message: true when the peer opens our handles
   * (the message goes by IPC). The first call asks (this message is staged);
   * after maxTries unanswered or "later" answers, never again.
   */
  want(p: CudaIpcPeer, link: CudaIpcLink): boolean {
    if (p.tx === IPC_OK) return true;
    if (p.tx !== IPC_INIT) return false;
    if (p.tries >= this.maxTries) { p.tx = IPC_BAD; p.why = `no answer after ${p.tries} tries`; return false; }
    p.tries++;
    p.tx = IPC_SENT;
    link.sendRequest(p.tries);
    return false;
  }

  /** Responder: the peer asks whether we can open its handles; check and answer. */
  onRequest(p: CudaIpcPeer, link: CudaIpcLink, req: IpcReq): void {
    p.rx = IPC_ACKING;
    const no = (why: string): void => { p.rx = IPC_BAD; p.why = why; link.sendAck(IPC_NO); };
    const never = this.local.never();
    if (never !== '') { no(never); return; }
    // Not initialised here yet: the sender resets and asks again with a later message.
    if (!this.local.ready()) { p.rx = IPC_INIT; link.sendAck(IPC_LATER); return; }
    if (req.hostId !== this.local.hostId()) { no('the peer runs on another host'); return; }
    if (req.pid === this.local.pid()) { no('the peer is this process (its memory is reached directly)'); return; }
    const theirs = this.local.deviceAt(req.place);
    if (theirs < 0) { no(`the peer's GPU (PCI ${placeText(req.place)}) is not visible to this process`); return; }
    const mine = this.local.current();
    if (theirs !== mine && !this.local.canAccessPeer(mine, theirs)) { no(`device ${mine} cannot access the peer's device ${theirs} (cuDeviceCanAccessPeer)`); return; }
    p.rx = IPC_ACKED;
    link.sendAck(IPC_YES);
  }

  /** Requester: the peer answered. A NO at any time stops us offering. */
  onAck(p: CudaIpcPeer, status: number): void {
    if (status === IPC_NO) { p.tx = IPC_BAD; p.why = p.why || 'the peer cannot open our handles'; return; }
    if (p.tx !== IPC_SENT) return;
    if (status === IPC_YES) p.tx = IPC_OK;
    else if (p.tries >= this.maxTries) { p.tx = IPC_BAD; p.why = `the peer was not ready after ${p.tries} tries`; }
    else p.tx = IPC_INIT;
  }

  /** Responder: opening one of the peer's handles failed after all: tell it to stop offering them. */
  onOpenFailed(p: CudaIpcPeer, link: CudaIpcLink, why: string): void {
    p.rx = IPC_BAD;
    p.why = why;
    link.sendAck(IPC_NO);
  }
}

export function placeText(p: DevicePlace): string {
  const h = (n: number, w: number): string => n.toString(16).padStart(w, '0');
  return `${h(p.domain, 4)}:${h(p.bus, 2)}:${h(p.slot, 2)}`;
}

/** Opening and closing remote allocations (cuIpcOpenMemHandle / cuIpcCloseMemHandle). */
export interface HandleOpener {
  open(handle: Uint8Array): bigint;
  close(base: bigint): void;
}

/**
 * The receiver's cache of peers' allocations opened through IPC: by peer and
 * buffer id (unique per allocation in the owner's process for its life, so a
 * freed and reallocated address never hits a stale entry), bounded, least
 * recently used first out, closed when the owner frees the allocation.
 */
export class DeviceHandleCache {
  private readonly cache: RegionCache<bigint>;
  /** Entries closed: evicted, invalidated by their owner, or cleared. */
  closed = 0;
  /** cuIpcCloseMemHandle failures (counted, not thrown: the entry is gone either way). */
  closeFailures = 0;

  constructor(capacity: number, opener: HandleOpener) {
    this.cache = new RegionCache<bigint>(capacity, (base) => {
      this.closed++;
      try { opener.close(base); } catch { this.closeFailures++; }
    });
    this.opener = opener;
  }
  private readonly opener: HandleOpener;

  get hits(): number { return this.cache.hits; }
  get misses(): number { return this.cache.misses; }
  get size(): number { return this.cache.size; }
  get capacity(): number { return this.cache.capacity; }

  /** The allocation's base address in this process: opened on the first message, from the cache after. */
  base(peer: number, bufferId: bigint, handle: Uint8Array): bigint {
    return this.cache.get(peer, bufferId.toString(), () => this.opener.open(handle));
  }

  /** The owner freed it: close it if open (true if it was). */
  invalidate(peer: number, bufferId: bigint): boolean {
    return this.cache.invalidate(peer, bufferId.toString());
  }

  /** The peer failed or left: close everything of it. */
  invalidatePeer(peer: number): number {
    return this.cache.invalidatePeer(peer);
  }

  clear(): void {
    this.cache.clear();
  }
}
