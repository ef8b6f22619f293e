// All-to-all: every rank sends block i to rank i. Small blocks: all
// exchanges posted at once (one round of latency); large blocks: pairwise
// exchange, one partner per step (p-1 steps), so no rank is flooded.

import { bytesOf, displacements, mod, sendrecv, waitAllOrCancel, type CollComm } from './engine.js';
import type { Request } from '../../proto/request.js';

export async function alltoallv(c: CollComm, send: ArrayBufferView, sendCounts: readonly number[], recv: ArrayBufferView, recvCounts: readonly number[], pairwise: boolean): Promise<void> {
  const p = c.size, r = c.rank;
  const sd = displacements(sendCounts), rd = displacements(recvCounts);
  bytesOf(recv, rd[r]!, recvCounts[r]!).set(bytesOf(send, sd[r]!, sendCounts[r]!));
  if (pairwise) {
    for (let s = 1; s < p; s++) {
      const to = mod(r + s, p), from = mod(r - s, p);
      await sendrecv(c, bytesOf(send, sd[to]!, sendCounts[to]!), to, bytesOf(recv, rd[from]!, recvCounts[from]!), from);
    }
    return;
  }
  const reqs: Request[] = [];
  for (let s = 1; s < p; s++) {
    const from = mod(r - s, p);
    reqs.push(c.recv(bytesOf(recv, rd[from]!, recvCounts[from]!), from));
  }
  for (let s = 1; s < p; s++) {
    const to = mod(r + s, p);
    reqs.push(c.send(bytesOf(send, sd[to]!, sendCounts[to]!), to));
  }
  await waitAllOrCancel(reqs);
}
