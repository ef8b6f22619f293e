// One segment (one datagram) and one queued fragment, the udp rail's hot-path
// objects. Both are recycled through free lists; a segment is in exactly one
// of: free list, a session's send queue, the hotel, the retransmit list.

import type { Guest, GuestList } from '../../core/hotel.js';
import type { Completion } from '../api.js';

/** Kernel bookkeeping a datagram costs beyond its bytes (for pacing against socket buffers). */
export const SEG_OVERHEAD = 768;

export class Segment implements Guest {
  gNext: Guest | null = null;
  gPrev: Guest | null = null;
  gList: GuestList | null = null;
  gDue = 0;
  readonly buf: Buffer;
  readonly view: DataView;
  readonly words: Int32Array;
  /** Small buffer: may travel on the priority channel. */
  readonly tiny: boolean;
  len = 0;
  seq = 0;
  weight = 0;
  sentAt = 0;
  /** Times transmitted (1 = never retransmitted: its round trip may be sampled). */
  sends = 0;
  /** Channel of the latest transmission (true: priority), and its place in the session's transmit order. */
  prio = false;
  txOrder = 0;
  /** The session it belongs to while not free (a Session; typed loosely to avoid a cycle). */
  owner: object | null = null;

  constructor(bytes: number, tiny: boolean) {
    this.buf = Buffer.allocUnsafeSlow((bytes + 3) & ~3);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.words = new Int32Array(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength >>> 2);
    this.tiny = tiny;
  }
}

/** A fragment too large for one segment: chunks are cut from it as the window opens. */
export class Frag {
  am = 0;
  flags = 0;
  readonly hdr: Buffer;
  hdrLen = 0;
  payload: Uint8Array = new Uint8Array(0);
  payLen = 0;
  /** Next payload byte to send. */
  off = 0;
  fragId = 0;
  /** Zero-copy send to finish once every byte is copied into segments. */
  done: Completion | null = null;

  constructor(hdrMax: number) {
    this.hdr = Buffer.alloc(hdrMax);
  }
}
