// Per-peer message ordering: every matched message carries a sequence number
// per (sender, receiver) pair; a message that overtook another (possible when
// a peer is reached over several rails) waits here until its turn.
// Sequence numbers run modulo 2^30 (they travel as 32-bit fields), so that
// they stay small integers (V8's Smis): past 2^31 a counter becomes a heap
// number and the functions doing arithmetic on it are deoptimized at once.

/** Sequence numbers wrap to 0 after SEQ_MASK. */
export const SEQ_MASK = 0x3fffffff;

/** The sequence number after seq. */
export const nextSeq = (seq: number): number => (seq + 1) & SEQ_MASK;

/** True when sequence number a comes before b (modulo 2^30: within half the range behind it). */
export function seqBefore(a: number, b: number): boolean {
  return ((a - b) & SEQ_MASK) > SEQ_MASK >>> 1;
}

export class ReorderBuffer<T> {
  expected = 0;
  private readonly early = new Map<number, T>();

  /** True when `seq` is the next in order (and advances); false when it must wait or is a duplicate. */
  inOrder(seq: number): boolean {
    if (seq === this.expected) { this.expected = nextSeq(seq); return true; }
    return false;
  }

  isDuplicate(seq: number): boolean {
    return seqBefore(seq, this.expected) || this.early.has(seq);
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
