// What a flooding sender holds (test/jobs/flood.mjs's job, measured): rank 1
// sends N 64-byte messages with awaited sends while rank 0 sleeps S ms, then
// receives them all. Rank 1 prints its peak RSS; with SNAPSHOT=file it writes
// a heap snapshot 2.5 s in (summarise it with bench/heap-classes.mjs), and
// run with --expose-gc it forces a GC at 1, 2.5, 4 and 5.5 s and prints the
// live heap each time:
//   node dist/cli/main.js run -n 2 --rails tcp bench/flood-heap.mjs 1000000 3000
//   node dist/cli/main.js run -n 2 --rails tcp -x SNAPSHOT=/tmp/flood.heapsnapshot bench/flood-heap.mjs
//   RAILCOMM_NODE_FLAGS="--max-inlined-bytecode-size-cumulative=3000 --max-inlined-bytecode-size=1000 --expose-gc" \
//     node dist/cli/main.js run -n 2 --rails tcp bench/flood-heap.mjs   (railcomm's default flags plus --expose-gc)
import { writeHeapSnapshot } from 'node:v8';
import { init } from '../dist/index.js';

const n = Number(process.argv[2] ?? 1_000_000);
const sleepMs = Number(process.argv[3] ?? 3000);
const comm = await init();
const mb = (x) => Math.round(x / 1e6);
const b = new Uint8Array(64);
let peak = 0;
const sample = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 50);
if (comm.rank === 1) {
  const timers = [];
  if (process.env.SNAPSHOT) timers.push(setTimeout(() => console.log(`RESULT snapshot ${writeHeapSnapshot(process.env.SNAPSHOT)}`), 2500));
  const gc = globalThis.gc;
  if (typeof gc === 'function') {
    for (const t of [1000, 2500, 4000, 5500]) {
      timers.push(setTimeout(() => { const before = process.memoryUsage().heapUsed; gc(); console.log(`RESULT gc at ${t} ms: heap used ${mb(before)} -> ${mb(process.memoryUsage().heapUsed)} MB`); }, t));
    }
  }
  for (let i = 0; i < n; i++) { b[0] = i & 0xff; await comm.send(b, 0, 1); }
  await comm.barrier();
  for (const t of timers) clearTimeout(t);
  console.log(`RESULT sender peak rss ${mb(Math.max(peak, process.memoryUsage().rss))} MB`);
} else {
  await new Promise((r) => setTimeout(r, sleepMs));
  const t0 = Date.now();
  for (let i = 0; i < n; i++) await comm.recv(b, 1, 1);
  console.log(`RESULT drained ${n} in ${Date.now() - t0} ms`);
  await comm.barrier();
}
clearInterval(sample);
await comm.finalize();
