// Frames that arrive before their turn (p2p.ts): a message or BYE that
// overtook another from the same peer (possible over several lanes) is copied
// and waits in the peer's reorder buffer until the gap fills.

import type { RxFrame } from '../rail/api.js';
import { copySmall } from '../core/word-copy.js';
import type { ProtoEndpoint } from './endpoint.js';

/** Keep a frame that came early; false when it is a duplicate (the caller counts it as a protocol error). */
export function stashEarly(ep: ProtoEndpoint, am: number, rx: RxFrame, seq: number): boolean {
  if (ep.rx.isDuplicate(seq)) return false;
  ep.rx.stash(seq, {
    am,
    hdr: copyOf(rx.buf, rx.hdrOff, rx.hdrLen),
    payload: rx.payLen > 0 ? copyOf(rx.buf, rx.payOff, rx.payLen) : null,
  });
  return true;
}

/**
 * Whether everything from the peer comes over one ordered stream: then a gap
 * in its sequence numbers is a broken stream. A peer with several lanes (or
 * sending in envelopes) may have a message overtake another.
 */
export function singleLane(ep: ProtoEndpoint): boolean {
  return !ep.multi && ep.laneRx === null;
}

/**
 * A copy of an arrived payload or header that must outlive the frame (an
 * unexpected message, or one that came early). Buffer.from(buf.subarray(...))
 * took Node's generic array-like path: a view and two calls more per message.
 */
export function copyOf(src: Buffer, off: number, len: number): Buffer {
  const c = Buffer.allocUnsafe(len);
  if (len <= 256) copySmall(c, 0, null, src, off, null, len);
  else src.copy(c, 0, off, off + len);
  return c;
}
