// The receive window of a udp session (session.ts): segments that arrived
// ahead of the next expected one wait here, by sequence number, until the gap
// fills; then they go up in order. Explicit ACKs report what it holds.

import { seqAdd, seqLt } from '../../core/seq.js';

export class ReceiveWindow {
  /** The next sequence number to deliver. */
  next = 0;
  /** Bytes held out of order. */
  held = 0;
  /** Highest sequence number held out of order (valid while held > 0). */
  highest = 0;
  /** The view of the segment takeNext() returned last. */
  takenView: DataView | null = null;
  private readonly mask: number;
  private readonly ring: Array<Buffer | null>;
  private readonly views: Array<DataView | null>;

  /** window: a power of two, at least the sender's window. */
  constructor(window: number) {
    this.mask = window - 1;
    this.ring = new Array<Buffer | null>(window).fill(null);
    this.views = new Array<DataView | null>(window).fill(null);
  }

  /** Keep a segment that came ahead of `next` (within the window); false when it is a duplicate of one kept. */
  hold(seq: number, buf: Buffer, v: DataView, len: number): boolean {
    const slot = seq & this.mask;
    if (this.ring[slot] !== null) return false;
    if (this.held === 0 || seqLt(this.highest, seq)) this.highest = seq;
    this.ring[slot] = buf;
    this.views[slot] = v;
    this.held += len;
    return true;
  }

  /** The held segment numbered `next`, if any (advancing past it; its view in takenView), else null. */
  takeNext(): Buffer | null {
    const slot = this.next & this.mask;
    const b = this.ring[slot]!;
    if (b === null) return null;
    this.takenView = this.views[slot]!;
    this.ring[slot] = null;
    this.views[slot] = null;
    this.held -= b.length;
    this.next = seqAdd(this.next, 1);
    return b;
  }

  /** Forget everything held (the session died). */
  clear(): void {
    this.ring.fill(null);
    this.views.fill(null);
    this.held = 0;
    this.takenView = null;
  }
}
