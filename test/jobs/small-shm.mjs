// Runs in a 1-MiB /dev/shm (test/integration/small-shm.test.mjs): a ring
// exchange and allreduce; prints done, or the error each rank got. Never hangs.
import { init } from '../../dist/index.js';

const comm = await init();
const b = new Float64Array(4);
try {
  for (let i = 0; i < 20; i++) {
    const r = comm.irecv(b, (comm.rank + comm.size - 1) % comm.size, 1);
    await comm.send(new Float64Array(4).fill(i), (comm.rank + 1) % comm.size, 1);
    await r.wait();
    if (b[0] !== i) throw new Error(`got ${b[0]}, expected ${i}`);
    await comm.allreduce(new Float64Array([1]), new Float64Array(1), 'sum');
  }
  console.log('RESULT done');
} catch (e) {
  console.log(`RESULT ${e.code} ${/No space left|could not create its ring|rank \d+ failed|finalize/.test(e.message) ? 'says why' : e.message}`);
}
await comm.finalize();
