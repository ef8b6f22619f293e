// One-sided gets completing in a steady stream (always some in flight,
// applied by the target over a network rail) are progress: rank 0 makes no
// hang report (rank 1, waiting in the barrier meanwhile, rightly may).
//   RAILCOMM_HANG_TIMEOUT=300 railcomm run -n 2 --rails tcp test/jobs/rma-busy-no-hang.mjs
import { init } from '../../dist/index.js';

const comm = await init();
const w = await comm.allocWindow(1024);
if (comm.rank === 0) {
  await w.lock(1, 'shared');
  const inFlight = new Set();
  const until = Date.now() + 1500;
  while (Date.now() < until) {
    while (inFlight.size < 16) { const p = w.get(new Uint8Array(64), 1, 0); inFlight.add(p); void p.then(() => inFlight.delete(p)); }
    await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await w.unlock(1);
}
await comm.barrier();
await w.free();
console.log('RESULT done');
await comm.finalize();
