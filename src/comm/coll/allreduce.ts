// Allreduce and reduce-scatter. Small vectors: recursive doubling (log p
// rounds; non-powers of two fold their extra ranks in first). Large vectors:
// ring reduce-scatter then ring allgather (2(p-1) rounds, each rank moves
// about 2n/p elements a round). Partials always combine as (lower rank) op
// (higher rank), and each block of the ring is reduced once and then copied,
// so every rank ends with the same bits.

import { bytesOf, displacements, mod, sendrecv, type CollComm } from './engine.js';
import { reduceInto, type ReduceOp, type ReduceArray } from './ops.js';
import { ringAllgatherv } from './allgather.js';

export async function allreduceRecursiveDoubling(c: CollComm, send: ReduceArray, recv: ReduceArray, op: ReduceOp): Promise<void> {
  const p = c.size, r = c.rank, n = send.length;
  let acc = c.scratch.take(send, n);
  acc.set(send as never);
  let tmp = c.scratch.take(send, n);
  let p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  const rem = p - p2;
  // Fold: among the first 2*rem ranks, even ranks hand their vector to the next odd one.
  let vr: number;
  if (r < 2 * rem) {
    if (r % 2 === 0) {
      await c.send(bytesOf(acc), r + 1).wait();
      vr = -1;
    } else {
      await c.recv(bytesOf(tmp), r - 1).wait();
      reduceInto(op, tmp, acc, n); // lower rank's partial first
      [acc, tmp] = [tmp, acc];
      vr = r >> 1;
    }
  } else {
    vr = r - rem;
  }
  if (vr >= 0) {
    for (let mask = 1; mask < p2; mask <<= 1) {
      const pv = vr ^ mask;
      const partner = pv < rem ? pv * 2 + 1 : pv + rem;
      await sendrecv(c, bytesOf(acc), partner, bytesOf(tmp), partner);
      if (partner < r) { reduceInto(op, tmp, acc, n); [acc, tmp] = [tmp, acc]; }
      else reduceInto(op, acc, tmp, n);
    }
  }
  // Unfold: odd ranks hand the result back to the even ones.
  if (r < 2 * rem) {
    if (r % 2 === 0) await c.recv(bytesOf(acc), r + 1).wait();
    else await c.send(bytesOf(acc), r - 1).wait();
  }
  recv.set(acc as never);
  c.scratch.give(acc);
  c.scratch.give(tmp);
}

/**
 * Ring reduce-scatter over blocks of `counts` elements: afterwards `acc`'s
 * block r (displacement disp[r]) on rank r holds the reduction over all ranks.
 * acc starts as this rank's contribution and is reduced in place.
 */
export async function ringReduceScatter(c: CollComm, acc: ReduceArray, counts: readonly number[], op: ReduceOp): Promise<void> {
  const p = c.size, r = c.rank;
  if (p === 1) return;
  const disp = displacements(counts);
  const maxc = Math.max(...counts);
  const tmp = c.scratch.take(acc, maxc);
  const right = mod(r + 1, p), left = mod(r - 1, p);
  for (let s = 0; s < p - 1; s++) {
    const sb = mod(r - s - 1, p);
    const rb = mod(r - s - 2, p);
    const into = tmp.subarray(0, counts[rb]!) as ReduceArray;
    await sendrecv(c, bytesOf(acc, disp[sb]!, counts[sb]!), right, bytesOf(into), left);
    reduceInto(op, acc.subarray(disp[rb]!, disp[rb]! + counts[rb]!) as ReduceArray, into, counts[rb]!);
  }
  c.scratch.give(tmp);
}

export async function allreduceRing(c: CollComm, send: ReduceArray, recv: ReduceArray, op: ReduceOp): Promise<void> {
  const p = c.size, n = send.length;
  const counts = Array.from({ length: p }, (_, i) => Math.floor(n / p) + (i < n % p ? 1 : 0));
  recv.set(send as never);
  await ringReduceScatter(c, recv, counts, op);
  await ringAllgatherv(c, recv, counts);
}

/** reduceScatter(send, recv, counts, op): rank r receives counts[r] elements of the reduction. */
export async function reduceScatterRing(c: CollComm, send: ReduceArray, recv: ReduceArray, counts: readonly number[], op: ReduceOp): Promise<void> {
  const acc = c.scratch.take(send, send.length);
  acc.set(send as never);
  await ringReduceScatter(c, acc, counts, op);
  const d = displacements(counts)[c.rank]!;
  recv.set(acc.subarray(d, d + counts[c.rank]!) as never);
  c.scratch.give(acc);
}

/**
 * reduceScatter for an op that is not commutative: the ring combines blocks
 * starting at different ranks, so reduce the whole vector in rank order
 * (recursive doubling) and keep this rank's block.
 */
export async function reduceScatterRankOrder(c: CollComm, send: ReduceArray, recv: ReduceArray, counts: readonly number[], op: ReduceOp): Promise<void> {
  const acc = c.scratch.take(send, send.length);
  try {
    await allreduceRecursiveDoubling(c, send, acc, op);
    const d = displacements(counts)[c.rank]!;
    recv.set(acc.subarray(d, d + counts[c.rank]!) as never);
  } finally {
    c.scratch.give(acc);
  }
}
