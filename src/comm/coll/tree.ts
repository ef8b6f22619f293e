// Rooted collectives: binomial-tree broadcast and reduce (log p rounds), and
// gather / scatter (binomial for small blocks, direct for large), with their
// v-variants (direct: every rank to or from the root).

import { bytesOf, displacements, mod, waitAllOrCancel, type CollComm } from './engine.js';
import { reduceInto, type ReduceOp, type ReduceArray } from './ops.js';
import type { Request } from '../../proto/request.js';

/** Binomial broadcast of `bytes` from root. */
export async function bcastBinomial(c: CollComm, bytes: Uint8Array, root: number): Promise<void> {
  const p = c.size;
  const vr = mod(c.rank - root, p);
  let mask = 1;
  while (mask < p) {
    if (vr & mask) { await c.recv(bytes, mod(vr - mask + root, p)).wait(); break; }
    mask <<= 1;
  }
  const sends: Request[] = [];
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < p) sends.push(c.send(bytes, mod(vr + mask + root, p)));
  }
  await waitAllOrCancel(sends);
}

/**
 * Binomial reduce to root. Partials are always combined as (lower virtual
 * rank) op (higher virtual rank), so the result does not depend on timing.
 */
export async function reduceBinomial(c: CollComm, send: ReduceArray, recv: ReduceArray | null, op: ReduceOp, root: number): Promise<void> {
  const p = c.size;
  const vr = mod(c.rank - root, p);
  const n = send.length;
  const acc = c.scratch.take(send, n);
  acc.set(send as never);
  const tmp = c.scratch.take(send, n);
  try {
    for (let mask = 1; mask < p; mask <<= 1) {
      if ((vr & mask) === 0) {
        const child = vr | mask;
        if (child < p) {
          await c.recv(bytesOf(tmp), mod(child + root, p)).wait();
          reduceInto(op, acc, tmp, n);
        }
      } else {
        await c.send(bytesOf(acc), mod((vr & ~mask) + root, p)).wait();
        return;
      }
    }
    if (recv !== null) recv.set(acc as never);
  } finally {
    c.scratch.give(acc);
    c.scratch.give(tmp);
  }
}

/**
 * Reduce for an op that is not commutative: the binomial tree rooted at rank 0
 * combines operands in rank order (a tree rooted elsewhere would start at the
 * root's rank), then rank 0 hands the result to the root.
 */
export async function reduceRankOrder(c: CollComm, send: ReduceArray, recv: ReduceArray | null, op: ReduceOp, root: number): Promise<void> {
  if (root === 0) return reduceBinomial(c, send, recv, op, 0);
  if (c.rank === 0) {
    const acc = c.scratch.take(send, send.length);
    try {
      await reduceBinomial(c, send, acc, op, 0);
      await c.send(bytesOf(acc), root).wait();
    } finally {
      c.scratch.give(acc);
    }
    return;
  }
  await reduceBinomial(c, send, null, op, 0);
  // Rank 0 sends nothing else to anyone on this collective's tag: this is the result.
  if (c.rank === root) await c.recv(bytesOf(recv!), 0).wait();
}

/** Gather equal blocks to root: recv holds p blocks of send.length elements (root only). */
export async function gatherDirect(c: CollComm, send: ArrayBufferView, recv: ArrayBufferView | null, root: number, counts?: readonly number[]): Promise<void> {
  const el = (send as ReduceArray).BYTES_PER_ELEMENT ?? 1;
  const p = c.size;
  if (c.rank !== root) { await c.send(bytesOf(send), root).wait(); return; }
  const cnt = counts ?? new Array<number>(p).fill(send.byteLength / el);
  const disp = displacements(cnt);
  const reqs: Request[] = [];
  for (let r = 0; r < p; r++) {
    const into = bytesOf(recv!, disp[r]!, cnt[r]!);
    if (r === root) into.set(bytesOf(send).subarray(0, into.byteLength));
    else reqs.push(c.recv(into, r));
  }
  await waitAllOrCancel(reqs);
}

/** Scatter blocks from root: send holds p blocks (root only); each rank receives its block into recv. */
export async function scatterDirect(c: CollComm, send: ArrayBufferView | null, recv: ArrayBufferView, root: number, counts?: readonly number[]): Promise<void> {
  const el = (recv as ReduceArray).BYTES_PER_ELEMENT ?? 1;
  const p = c.size;
  if (c.rank !== root) { await c.recv(bytesOf(recv), root).wait(); return; }
  const cnt = counts ?? new Array<number>(p).fill(recv.byteLength / el);
  const disp = displacements(cnt);
  const reqs: Request[] = [];
  for (let r = 0; r < p; r++) {
    const from = bytesOf(send!, disp[r]!, cnt[r]!);
    if (r === root) bytesOf(recv).set(from);
    else reqs.push(c.send(from, r));
  }
  await waitAllOrCancel(reqs);
}

/**
 * Binomial gather of equal blocks (log p rounds; for small blocks). Each rank
 * collects the blocks of its subtree in virtual-rank order, then passes them up.
 */
export async function gatherBinomial(c: CollComm, send: ArrayBufferView, recv: ArrayBufferView | null, root: number): Promise<void> {
  const p = c.size;
  const vr = mod(c.rank - root, p);
  const blk = send.byteLength;
  const buf = new Uint8Array(blk * p);
  buf.set(bytesOf(send), 0);
  let have = 1; // blocks held, for virtual ranks vr .. vr + have - 1
  for (let mask = 1; mask < p; mask <<= 1) {
    if ((vr & mask) === 0) {
      const child = vr | mask;
      if (child < p) {
        const n = Math.min(mask, p - child);
        await c.recv(buf.subarray(have * blk, (have + n) * blk), mod(child + root, p)).wait();
        have += n;
      }
    } else {
      await c.send(buf.subarray(0, have * blk), mod((vr & ~mask) + root, p)).wait();
      return;
    }
  }
  // Root: block of virtual rank v belongs to rank (v + root) mod p.
  const out = bytesOf(recv!);
  for (let v = 0; v < p; v++) out.set(buf.subarray(v * blk, (v + 1) * blk), mod(v + root, p) * blk);
}
