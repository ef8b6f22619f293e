// 64-bit endpoint ids: job (set) id in the high 32 bits, rank in the low 32.
// JavaScript's shift operators are 32-bit, so the id is a bigint.

export function endpointId(jobId: number, rank: number): bigint {
  return (BigInt(jobId >>> 0) << 32n) | BigInt(rank >>> 0);
}

export function jobOf(id: bigint): number {
  return Number((id >> 32n) & 0xffffffffn);
}

export function rankOf(id: bigint): number {
  return Number(id & 0xffffffffn);
}

/** How an endpoint id reads in messages: job:rank. */
export function formatId(id: bigint): string {
  return `${jobOf(id)}:${rankOf(id)}`;
}
