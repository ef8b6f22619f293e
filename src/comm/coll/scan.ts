// Prefix reductions. A chain: rank r receives the prefix of ranks 0..r-1 from
// r-1, combines it with its own vector (prefix op own, the sequential order),
// and passes the new prefix on. p-1 rounds; results match a sequential loop.

import { bytesOf, type CollComm } from './engine.js';
import { reduceInto, type ReduceOp, type ReduceArray } from './ops.js';

export async function scanChain(c: CollComm, send: ReduceArray, recv: ReduceArray, op: ReduceOp, exclusive: boolean): Promise<void> {
  const r = c.rank, p = c.size, n = send.length;
  const prefix = c.scratch.take(send, n);
  if (r > 0) {
    await c.recv(bytesOf(prefix), r - 1).wait();
    if (exclusive) {
      // recv takes the prefix before this rank's own vector joins it: a copy
      // of send first, since recv may be send itself (exscan(a, a, op)).
      const own = c.scratch.take(send, n);
      own.set(send as never);
      recv.set(prefix as never);
      reduceInto(op, prefix, own, n);
      c.scratch.give(own);
    } else {
      reduceInto(op, prefix, send, n);
    }
  } else {
    prefix.set(send as never);
  }
  if (!exclusive) recv.set(prefix as never);
  if (r + 1 < p) await c.send(bytesOf(prefix), r + 1).wait();
  c.scratch.give(prefix);
}
