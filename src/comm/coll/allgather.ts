// Allgather family. Small blocks: Bruck (ceil(log2 p) rounds, any p). Large
// blocks and allgatherv: ring (p-1 rounds, each moves one block to the right).

import { bytesOf, displacements, mod, sendrecv, type CollComm } from './engine.js';

/**
 * Ring allgather in place: `buf` holds p blocks (counts[i] elements at their
 * displacement); block `c.rank` is filled, the others are filled by the ring.
 */
export async function ringAllgatherv(c: CollComm, buf: ArrayBufferView, counts: readonly number[]): Promise<void> {
  const p = c.size, r = c.rank;
  const disp = displacements(counts);
  const right = mod(r + 1, p), left = mod(r - 1, p);
  for (let s = 0; s < p - 1; s++) {
    const sb = mod(r - s, p);
    const rb = mod(r - s - 1, p);
    await sendrecv(c, bytesOf(buf, disp[sb]!, counts[sb]!), right, bytesOf(buf, disp[rb]!, counts[rb]!), left);
  }
}

/** Bruck allgather of equal blocks: recv gets p blocks of send's size, in rank order. */
export async function allgatherBruck(c: CollComm, send: ArrayBufferView, recv: ArrayBufferView): Promise<void> {
  const p = c.size, r = c.rank;
  const blk = send.byteLength;
  const tmp = new Uint8Array(blk * p);
  tmp.set(bytesOf(send), 0);
  for (let k = 1; k < p; k <<= 1) {
    const n = Math.min(k, p - k);
    await sendrecv(c, tmp.subarray(0, n * blk), mod(r - k, p), tmp.subarray(k * blk, (k + n) * blk), mod(r + k, p));
  }
  // tmp block i is rank (r + i)'s block.
  const out = bytesOf(recv);
  for (let i = 0; i < p; i++) out.set(tmp.subarray(i * blk, (i + 1) * blk), mod(r + i, p) * blk);
}

export async function allgatherRing(c: CollComm, send: ArrayBufferView, recv: ArrayBufferView, counts: readonly number[]): Promise<void> {
  const d = displacements(counts)[c.rank]!;
  bytesOf(recv, d, counts[c.rank]!).set(bytesOf(send).subarray(0, bytesOf(recv, d, counts[c.rank]!).byteLength));
  await ringAllgatherv(c, recv, counts);
}
