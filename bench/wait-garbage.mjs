// Garbage a waiting rank makes: rank 1 answers each of rank 0's 8-byte
// messages only after blocking DELAY_US (Atomics.wait: no allocation, no
// railcomm call), so rank 0 spends each round trip waiting in recv (async, or
// recvSync with SYNC=1). Prints rank 0's collections and heap allocation per
// round trip: the young-generation garbage its polling makes per DELAY_US of
// waiting (each reading of the clock allocates on Node 20, and so does each
// progress pass queued as a microtask).
//   DELAY_US=200 node dist/cli/main.js run -n 2 --rails shm,self bench/wait-garbage.mjs [round trips, 2000]
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import { init } from '../dist/index.js';

const comm = await init();
const N = Number(process.argv[2] ?? 2000);
const delayMs = Number(process.env.DELAY_US ?? 200) / 1000;
const sync = process.env.SYNC === '1';
const b = new Uint8Array(8), nap = new Int32Array(new SharedArrayBuffer(4));
let gcs = 0;
new PerformanceObserver((l) => { gcs += l.getEntries().length; }).observe({ entryTypes: ['gc'] });
async function run(n) {
  for (let i = 0; i < n; i++) {
    if (comm.rank === 0) {
      if (sync) { comm.sendSync(b, 1, 1); comm.recvSync(b, 1, 1); } else { await comm.send(b, 1, 1); await comm.recv(b, 1, 1); }
    } else {
      await comm.recv(b, 0, 1);
      Atomics.wait(nap, 0, 0, delayMs);
      await comm.send(b, 0, 1);
    }
  }
}
await run(Math.min(N, 500));
await new Promise((r) => setTimeout(r, 50));
gcs = 0;
// Bytes allocated: heap statistics' total minus what collections freed is not exposed; count
// the young generation's allocation through the heap code statistics' sibling: malloced + used deltas.
const used0 = v8.getHeapStatistics().used_heap_size;
const t0 = performance.now();
await run(N);
const dt = performance.now() - t0;
const used1 = v8.getHeapStatistics().used_heap_size;
await new Promise((r) => setTimeout(r, 50));
if (comm.rank === 0) console.log(JSON.stringify({ benchmark: 'wait-garbage', calls: sync ? 'sync' : 'async', delayUs: delayMs * 1000, roundTrips: N, usPerRoundTrip: +((dt * 1000) / N).toFixed(1), gcs, heapGrowthBytes: used1 - used0 }));
await comm.finalize();
