// Lazily negotiated single-copy transfers (the smcuda design, generalised):
// on the first large send to a peer, ask it whether it can read our memory
// (states INIT, SENT, ACKING, ACKED, OK, BAD; at most 5 attempts, then the
// ring path for good). The cache of opened remote regions is core/region-cache.ts.

import type { RailIpc } from '../rail/api.js';
import { IPC_LATER, IPC_NO, IPC_YES } from './ipc-wire.js';

export const IPC_INIT = 0;
/** Requester: asked the peer, no answer yet. */
export const IPC_SENT = 1;
/** Responder: checking whether it can read the requester's memory. */
export const IPC_ACKING = 2;
/** Responder: answered yes. */
export const IPC_ACKED = 3;
/** Requester: the peer reads our memory from now on (RGET). */
export const IPC_OK = 4;
/** No single copy with this peer: the ring path is used. */
export const IPC_BAD = 5;
export const IPC_STATE_NAMES = ['INIT', 'SENT', 'ACKING', 'ACKED', 'OK', 'BAD'] as const;

export const IPC_MAX_TRIES = 5;

/**
 * From this size, a single-copy rendezvous is split: the receiver reads the
 * first part while the sender writes the rest into the receive buffer, so
 * both cores copy at once (each byte is still copied once).
 */
export const SPLIT_MIN = 262144;

/** Where the receiver's part ends: half, on a page boundary. */
export const splitPoint = (size: number): number => Math.floor(size / 8192) * 4096;

const EPERM = 1;
const EACCES = 13;
const ENOSYS = 38;

/** What the negotiation needs of one peer (implemented by the protocol layer over the peer's lane). */
export interface IpcLink {
  /** The lane's reader of the peer's memory, or null when the rail has none. */
  readonly reader: RailIpc | null;
  sendRequest(address: bigint, cookie: number, attempt: number): void;
  sendAck(status: number): void;
}

/** Negotiation state with one peer: tx is about the peer reading us, rx about us reading it. */
export class IpcPeer {
  tx = IPC_INIT;
  rx = IPC_INIT;
  tries = 0;
  /** Kept alive (and at a stable address) until the peer answered. */
  cookie: Uint8Array | null = null;
  rgets = 0;
  fallbacks = 0;
}

export class IpcNegotiation {
  readonly maxTries: number;
  private nextCookie = 0x5a17c0de;

  constructor(maxTries = IPC_MAX_TRIES) {
    this.maxTries = maxTries;
  }

  /**
   * Sender, before a large send: true when the peer may read it directly.
   * The first call starts the handshake (this send still takes the ring).
   */
  want(p: IpcPeer, link: IpcLink): boolean {
    if (p.tx === IPC_OK) return true;
    if (p.tx !== IPC_INIT) return false;
    if (link.reader === null || p.tries >= this.maxTries) { p.tx = IPC_BAD; return false; }
    p.tries++;
    const cookie = (this.nextCookie = (this.nextCookie * 1103515245 + 12345) >>> 0);
    const c = new Uint8Array(8);
    new DataView(c.buffer).setUint32(0, cookie, true);
    p.cookie = c;
    p.tx = IPC_SENT;
    link.sendRequest(link.reader.addressOf(c), cookie, p.tries);
    return false;
  }

  /** Responder: the peer asks whether we can read its memory; try, and answer. */
  onRequest(p: IpcPeer, link: IpcLink, address: bigint, cookie: number, scratch: Uint8Array): void {
    p.rx = IPC_ACKING;
    const reader = link.reader;
    if (reader === null) { p.rx = IPC_BAD; link.sendAck(IPC_NO); return; }
    const dst = scratch.subarray(0, 4);
    const r = reader.read(dst, address);
    if (r === 0 && new DataView(dst.buffer, dst.byteOffset, 4).getUint32(0, true) === cookie) {
      p.rx = IPC_ACKED;
      link.sendAck(IPC_YES);
    } else if (r === -EPERM || r === -EACCES || r === -ENOSYS) {
      // ptrace or Yama restrictions, or no CMA in this kernel: it will not change.
      p.rx = IPC_BAD;
      link.sendAck(IPC_NO);
    } else {
      p.rx = IPC_INIT;
      link.sendAck(IPC_LATER);
    }
  }

  /** Requester: the peer answered. */
  onAck(p: IpcPeer, status: number): void {
    p.cookie = null;
    if (status === IPC_NO) { p.tx = IPC_BAD; return; }
    if (p.tx !== IPC_SENT) return;
    if (status === IPC_YES) p.tx = IPC_OK;
    else p.tx = p.tries >= this.maxTries ? IPC_BAD : IPC_INIT;
  }

  /** Responder: a direct read failed after all (not a dead peer): stop the peer from offering. */
  onReadFailed(p: IpcPeer, link: IpcLink): void {
    p.fallbacks++;
    p.rx = IPC_BAD;
    link.sendAck(IPC_NO);
  }
}
