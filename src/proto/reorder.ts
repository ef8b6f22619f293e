// Per-peer message ordering: every matched message carries a sequence number
// per (sender, receiver) pair; a message that overtook another (possible when
// a peer is reached over several rails) waits here until its turn.
// Sequence numbers run modulo 2^30 (core/seq.ts).

import { nextSeq, seqLt } from '../core/seq.js';

export class ReorderBuffer<T> {
  expected = 0;
  private readonly early = new Map<number, T>();

  /** True when `seq` is the next in order (and advances); false when it must wait or is a duplicate. */
  inOrder(seq: number): boolean {
    if (seq === this.expected) { this.expected = nextSeq(seq); return true; }
    return false;
  }

  isDuplicate(seq: number): boolean {
    return seqLt(seq, this.expected) || this.early.has(seq);
  }

  /** Keep a message that arrived early (a copy: rail buffers are reused). */
  stash(seq: number, item: T): void {
    this.early.set(seq, item);
  }

  /** The next stashed message if it is now in order (and advances), else undefined. */
  next(): T | undefined {
    if (this.early.size === 0) return undefined;
    const item = this.early.get(this.expected);
    if (item === undefined) return undefined;
    this.early.delete(this.expected);
    this.expected = nextSeq(this.expected);
    return item;
  }

  get waiting(): number {
    return this.early.size;
  }
}
