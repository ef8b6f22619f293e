// Which 8-byte puts over the ofi rail are not complete at the call: rank 0
// puts into rank 1's window 20,000 times, each followed by testFlush (and an
// awaited flush when it says no), timing each; prints how many said no, at
// which put and how long their flush waited (us), and the per-put median,
// 90th and 99th percentiles, average and maximum. Rank 1 only waits (in a
// barrier: asleep on its rail's timer unless RAILCOMM_SPIN_US keeps it spinning).
//   RAILCOMM_OFI_PROVIDERS=shm node dist/cli/main.js run -n 2 --rails ofi,self bench/ofi/put-misses.mjs [puts, 20000]
import { init } from '../../dist/index.js';

const comm = await init();
const N = Number(process.argv[2] ?? 20000);
const win = await comm.allocWindow(4096);
const msg = new Uint8Array(8).fill(3);
if (comm.rank === 0) {
  await win.lock(1, 'shared');
  const us = new Float64Array(N);
  let misses = [];
  // Twice: the first pass warms the path up, the second is reported.
  for (let pass = 0; pass < 2; pass++) {
    misses = [];
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      void win.put(msg, 1, 0);
      if (!win.testFlush(1)) {
        const t1 = performance.now();
        await win.flush(1);
        misses.push([i, +((performance.now() - t1) * 1000).toFixed(1)]);
      }
      us[i] = (performance.now() - t0) * 1000;
    }
  }
  let sum = 0;
  for (let i = 0; i < N; i++) sum += us[i];
  const s = Float64Array.from(us).sort();
  const q = (f) => +s[Math.min(N - 1, Math.floor(N * f))].toFixed(3);
  console.log(JSON.stringify({ benchmark: 'put-misses', puts: N, misses: misses.length, missAtAndWaitUs: misses, medianUs: q(0.5), p90Us: q(0.9), p99Us: q(0.99), avgUs: +(sum / N).toFixed(3), maxUs: +s[N - 1].toFixed(1) }));
  await win.unlock(1);
}
await comm.barrier();
await win.free();
await comm.finalize();
