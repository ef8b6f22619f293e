// A synchronous wait spins for RAILCOMM_SPIN_US of time before it blocks on
// the doorbell (comm/sync.ts spinSpent). 2 ranks, the test sets a 200 ms
// budget: rank 1 sends after 30 ms (a wait well inside the budget: no block;
// counting polls as time, the wait blocked after about 2 ms on a fast
// machine), then after 600 ms (past the budget: it blocks, and still gets the
// message). Prints the blocks of rank 0's two waits (p2p snapshot syncBlocks).
import { init } from '../../dist/index.js';

const comm = await init();
const one = new Uint8Array(8);
const blocks = () => comm.world.ctx.p2p.snapshot().syncBlocks;
await comm.barrier();
if (comm.rank === 0) {
  const b0 = blocks();
  comm.recvSync(one, 1, 1);
  const b1 = blocks();
  comm.recvSync(one, 1, 2);
  const b2 = blocks();
  console.log(`SHORT ${b1 - b0}`);
  console.log(`LONG ${b2 - b1 > 0 ? 'blocked' : 'spun'} ${one[0]}`);
} else {
  await new Promise((r) => setTimeout(r, 30));
  await comm.send(Uint8Array.of(1), 0, 1);
  await new Promise((r) => setTimeout(r, 600));
  await comm.send(Uint8Array.of(2), 0, 2);
}
await comm.barrier();
await comm.finalize();
