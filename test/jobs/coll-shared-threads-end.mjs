// Each communicator whose collectives ran on a /dev/shm segment has a native
// doorbell thread; finalize ends them all (dup() after dup() must not leave
// threads behind). Prints the process's thread count before, with and after.
//   RAILCOMM_RAILS=shm,self railcomm run -n 2 test/jobs/coll-shared-threads-end.mjs
import { readFileSync } from 'node:fs';
import { init } from '../../dist/index.js';

const threads = () => Number(/Threads:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
const comm = await init();
await comm.allreduce(new Float64Array(1), new Float64Array(1), 'sum');
const before = threads();
for (let i = 0; i < 4; i++) {
  const d = await comm.dup();
  await d.allreduce(new Float64Array(1), new Float64Array(1), 'sum');
}
const during = threads();
await comm.finalize();
await new Promise((r) => setTimeout(r, 100));
console.log(`THREADS ${before} ${during} ${threads()}`);
