// The synchronous collectives over point-to-point (comm.barrierSync and its
// kin where no shared segment serves the call: communicators without one,
// messages above RAILCOMM_COLL_SHARED_MAX). The same algorithms, peers, tags
// and message order as the async ones (engine.ts, tree.ts, allreduce.ts,
// allgather.ts), written with blocking calls, so a rank in a sync call and a
// rank in its async twin still meet.

import type { Request } from '../../proto/request.js';
import { bytesOf, displacements, mod, type ScratchPool } from './engine.js';
import { reduceInto, type ReduceOp, type ReduceArray } from './ops.js';

/** Point-to-point for one synchronous collective call, on its own tag. */
export interface SyncComm {
  readonly rank: number;
  readonly size: number;
  readonly scratch: ScratchPool;
  /** Blocking send (returns once the bytes may be reused: eager at once, large once received). */
  send(bytes: Uint8Array, peer: number): void;
  /** Blocking receive. */
  recv(bytes: Uint8Array, peer: number): void;
  /** A send started without waiting (it moves while this rank waits in recv). */
  isend(bytes: Uint8Array, peer: number): Request;
  /** Wait for a request started by isend. */
  wait(r: Request): void;
}

/** Send `out` to `to` while receiving `into` from `from` (no deadlock when both sides are large). */
export function sendrecvSync(c: SyncComm, out: Uint8Array, to: number, into: Uint8Array, from: number): void {
  const s = c.isend(out, to);
  c.recv(into, from);
  c.wait(s);
}

const TOKEN = new Uint8Array(0);

export function barrierSync(c: SyncComm): void {
  for (let k = 1; k < c.size; k <<= 1) sendrecvSync(c, TOKEN, (c.rank + k) % c.size, TOKEN, (c.rank - k + c.size) % c.size);
}

export function bcastBinomialSync(c: SyncComm, bytes: Uint8Array, root: number): void {
  const p = c.size;
  const vr = mod(c.rank - root, p);
  let mask = 1;
  while (mask < p) {
    if (vr & mask) { c.recv(bytes, mod(vr - mask + root, p)); break; }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < p) c.send(bytes, mod(vr + mask + root, p));
  }
}

/** Binomial reduce to root; partials combine as (lower virtual rank) op (higher), as tree.ts. */
export function reduceBinomialSync(c: SyncComm, send: ReduceArray, recv: ReduceArray | null, op: ReduceOp, root: number): void {
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
          c.recv(bytesOf(tmp), mod(child + root, p));
          reduceInto(op, acc, tmp, n);
        }
      } else {
        c.send(bytesOf(acc), mod((vr & ~mask) + root, p));
        return;
      }
    }
    if (recv !== null) recv.set(acc as never);
  } finally {
    c.scratch.give(acc);
    c.scratch.give(tmp);
  }
}

/** An op that is not commutative: the tree rooted at rank 0 (rank order), then rank 0 to the root. */
export function reduceRankOrderSync(c: SyncComm, send: ReduceArray, recv: ReduceArray | null, op: ReduceOp, root: number): void {
  if (root === 0) { reduceBinomialSync(c, send, recv, op, 0); return; }
  if (c.rank === 0) {
    const acc = c.scratch.take(send, send.length);
    try {
      reduceBinomialSync(c, send, acc, op, 0);
      c.send(bytesOf(acc), root);
    } finally {
      c.scratch.give(acc);
    }
    return;
  }
  reduceBinomialSync(c, send, null, op, 0);
  if (c.rank === root) c.recv(bytesOf(recv!), 0);
}

export function allreduceRecursiveDoublingSync(c: SyncComm, send: ReduceArray, recv: ReduceArray, op: ReduceOp): void {
  const p = c.size, r = c.rank, n = send.length;
  let acc = c.scratch.take(send, n);
  acc.set(send as never);
  let tmp = c.scratch.take(send, n);
  let p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  const rem = p - p2;
  let vr: number;
  if (r < 2 * rem) {
    if (r % 2 === 0) {
      c.send(bytesOf(acc), r + 1);
      vr = -1;
    } else {
      c.recv(bytesOf(tmp), r - 1);
      reduceInto(op, tmp, acc, n);
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
      sendrecvSync(c, bytesOf(acc), partner, bytesOf(tmp), partner);
      if (partner < r) { reduceInto(op, tmp, acc, n); [acc, tmp] = [tmp, acc]; }
      else reduceInto(op, acc, tmp, n);
    }
  }
  if (r < 2 * rem) {
    if (r % 2 === 0) c.recv(bytesOf(acc), r + 1);
    else c.send(bytesOf(acc), r - 1);
  }
  recv.set(acc as never);
  c.scratch.give(acc);
  c.scratch.give(tmp);
}

function ringReduceScatterSync(c: SyncComm, acc: ReduceArray, counts: readonly number[], op: ReduceOp): void {
  const p = c.size, r = c.rank;
  if (p === 1) return;
  const disp = displacements(counts);
  const tmp = c.scratch.take(acc, Math.max(...counts));
  const right = mod(r + 1, p), left = mod(r - 1, p);
  for (let s = 0; s < p - 1; s++) {
    const sb = mod(r - s - 1, p);
    const rb = mod(r - s - 2, p);
    const into = tmp.subarray(0, counts[rb]!) as ReduceArray;
    sendrecvSync(c, bytesOf(acc, disp[sb]!, counts[sb]!), right, bytesOf(into), left);
    reduceInto(op, acc.subarray(disp[rb]!, disp[rb]! + counts[rb]!) as ReduceArray, into, counts[rb]!);
  }
  c.scratch.give(tmp);
}

function ringAllgathervSync(c: SyncComm, buf: ArrayBufferView, counts: readonly number[]): void {
  const p = c.size, r = c.rank;
  const disp = displacements(counts);
  const right = mod(r + 1, p), left = mod(r - 1, p);
  for (let s = 0; s < p - 1; s++) {
    const sb = mod(r - s, p);
    const rb = mod(r - s - 1, p);
    sendrecvSync(c, bytesOf(buf, disp[sb]!, counts[sb]!), right, bytesOf(buf, disp[rb]!, counts[rb]!), left);
  }
}

export function allreduceRingSync(c: SyncComm, send: ReduceArray, recv: ReduceArray, op: ReduceOp): void {
  const p = c.size, n = send.length;
  const counts = Array.from({ length: p }, (_, i) => Math.floor(n / p) + (i < n % p ? 1 : 0));
  recv.set(send as never);
  ringReduceScatterSync(c, recv, counts, op);
  ringAllgathervSync(c, recv, counts);
}

export function allgatherBruckSync(c: SyncComm, send: ArrayBufferView, recv: ArrayBufferView): void {
  const p = c.size, r = c.rank;
  const blk = send.byteLength;
  const tmp = new Uint8Array(blk * p);
  tmp.set(bytesOf(send), 0);
  for (let k = 1; k < p; k <<= 1) {
    const n = Math.min(k, p - k);
    sendrecvSync(c, tmp.subarray(0, n * blk), mod(r - k, p), tmp.subarray(k * blk, (k + n) * blk), mod(r + k, p));
  }
  const out = bytesOf(recv);
  for (let i = 0; i < p; i++) out.set(tmp.subarray(i * blk, (i + 1) * blk), mod(r + i, p) * blk);
}

export function allgatherRingSync(c: SyncComm, send: ArrayBufferView, recv: ArrayBufferView, counts: readonly number[]): void {
  const d = displacements(counts)[c.rank]!;
  const mine = bytesOf(recv, d, counts[c.rank]!);
  mine.set(bytesOf(send).subarray(0, mine.byteLength));
  ringAllgathervSync(c, recv, counts);
}
