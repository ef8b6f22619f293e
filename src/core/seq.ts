// Sequence-number arithmetic on numbers that wrap around modulo 2^30 (they
// travel as 32-bit fields; the protocol's per-peer message order and the udp
// rail's segments): a is "before" b when the signed distance from b to
// a, taken modulo 2^30, is negative. Modulo 2^30, not 2^32, so that they stay
// small integers in V8 (Smis): past 2^31 a sequence number became a heap
// number, and every function doing arithmetic on it was deoptimized at once.

/** Sequence numbers wrap to 0 after SEQ_MASK. */
export const SEQ_MASK = 0x3fffffff;

/** a - b as a signed distance (-2^29 .. 2^29-1). */
export function seqDiff(a: number, b: number): number {
  return ((a - b) << 2) >> 2;
}

export function seqLt(a: number, b: number): boolean {
  return seqDiff(a, b) < 0;
}

export function seqLe(a: number, b: number): boolean {
  return seqDiff(a, b) <= 0;
}

export function seqAdd(a: number, n: number): number {
  return (a + n) & SEQ_MASK;
}

/** The sequence number after a. */
export const nextSeq = (a: number): number => (a + 1) & SEQ_MASK;
