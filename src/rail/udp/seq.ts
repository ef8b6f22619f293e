// Sequence-number arithmetic on 32-bit unsigned numbers that wrap around:
// a is "before" b when the signed 32-bit distance from b to a is negative.

/** a - b as a signed 32-bit distance. */
export function seqDiff(a: number, b: number): number {
  return (a - b) | 0;
}

export function seqLt(a: number, b: number): boolean {
  return ((a - b) | 0) < 0;
}

export function seqLe(a: number, b: number): boolean {
  return ((a - b) | 0) <= 0;
}

export function seqAdd(a: number, n: number): number {
  return (a + n) >>> 0;
}
