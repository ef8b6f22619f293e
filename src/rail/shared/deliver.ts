// Delivery of one ring frame to its active-message handler, shared by the
// rings of tbsm (threads) and shm (processes): counters, the rail's own BYE,
// unknown ids, and payloads placed straight into a receive buffer.

import type { AmHandler, RailEndpoint, RxFrame } from '../api.js';
import { FRAME_HEAD, payloadOffset, type Ring } from './ring.js';

/** AM id 0 on a ring: the peer finalized (the layer above never uses 0). */
export const AM_BYE = 0;

export interface RingPeer extends RailEndpoint {
  peerClosed(): void;
  /** A rail control frame (AM 0 with a header): the rail's own business (shm: a freed segment). */
  railControl?(hdr: DataView, off: number, len: number): void;
}

export function deliverFrame(
  handlers: ReadonlyArray<AmHandler | undefined>, rx: RxFrame,
  ep: RingPeer, ring: Ring, am: number, off: number, hdrLen: number, payLen: number,
): void {
  if (am === AM_BYE) {
    if (hdrLen === 0) ep.peerClosed();
    else if (ep.railControl !== undefined) ep.railControl(ring.view, off + FRAME_HEAD, hdrLen);
    return;
  }
  const h = handlers[am];
  if (h === undefined) { ep.abort(`unknown active message id ${am}`); return; }
  describeFrame(rx, ring, off, hdrLen, payLen);
  ep.counters.msgsRecv++; ep.counters.bytesRecv += payLen;
  if (h.place !== undefined && payLen > 0) {
    const target = h.place(ep, rx);
    if (target === null) return;
    ring.data.copy(target, 0, rx.payOff, rx.payOff + payLen);
    rx.placed = target;
  }
  h.recv(ep, rx);
}

/** rx describes the frame at `off` of ring, as a handler sees it. */
export function describeFrame(rx: RxFrame, ring: Ring, off: number, hdrLen: number, payLen: number): void {
  // (Pointer stores cost a write barrier each, and these are the same for every frame of one ring.)
  if (rx.buf !== ring.data) { rx.buf = ring.data; rx.view = ring.view; rx.words = ring.words; }
  if (rx.placed !== null) rx.placed = null;
  rx.hdrOff = off + FRAME_HEAD; rx.hdrLen = hdrLen;
  rx.payOff = payloadOffset(off, hdrLen); rx.payLen = payLen;
}
