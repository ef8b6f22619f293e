// Rank 0 waits in recvSync for a message rank 1 sends only after 1.5 s: with
// RAILCOMM_HANG_TIMEOUT=400 the waiting rank says what it waits for (from
// inside the synchronous wait: it runs no timers), then receives it.
//   RAILCOMM_HANG_TIMEOUT=400 railcomm run -n 2 [--threads] test/jobs/sync-hang.mjs

import { init } from '../../dist/index.js';

const comm = await init();
await comm.barrier();
const b = new Int32Array(1);
if (comm.rank === 0) {
  comm.recvSync(b, 1, 7);
  console.log(`GOT ${b[0]}`);
} else {
  await new Promise((r) => setTimeout(r, 1500));
  comm.sendSync(new Int32Array([42]), 0, 7);
}
await comm.finalize();
