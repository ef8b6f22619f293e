// Heap and allocation over many small messages, for the foundation issue's
// "flat heap over 1 million 8-byte messages, no allocation per message beyond
// the request and its promise". Run with:
//   node dist/cli/main.js run -n 2 node --expose-gc --min-semi-space-size=64 --max-semi-space-size=64 bench/heap-flat.mjs [messages]
// (add RAILCOMM_SPIN_US=0 to leave out what the polling loop allocates per poll)
// Rank 0 prints the heap after a full GC every 10% of the messages, and the
// bytes allocated per message in a burst without GC, next to what one
// Request + its promise + the await cost alone (measured the same way).

import v8 from 'node:v8';
import { PerformanceObserver } from 'node:perf_hooks';
import { init } from '../dist/index.js';
import { Request, KIND_SEND } from '../dist/proto/request.js';

if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const TOTAL = Number(process.argv[2] ?? 1_000_000); // messages, both directions counted
const comm = await init();
const peer = 1 - comm.rank;
const buf = new Uint8Array(8);
let gcs = 0;
new PerformanceObserver((list) => { gcs += list.getEntries().length; }).observe({ entryTypes: ['gc'] });

async function pingpong(roundTrips) {
  for (let i = 0; i < roundTrips; i++) {
    if (comm.rank === 0) { await comm.send(buf, peer, 1); await comm.recv(buf, peer, 1); }
    else { await comm.recv(buf, peer, 1); await comm.send(buf, peer, 1); }
  }
}

const used = () => v8.getHeapStatistics().used_heap_size;

/** Bytes allocated per iteration of fn over n iterations, from a burst with no GC in it. */
async function allocPer(n, fn) {
  // GC entries reach the observer asynchronously: let them arrive before
  // reading the count, so the forced GC is not taken for one in the burst.
  const settle = () => new Promise((r) => setTimeout(r, 20));
  for (let attempt = 0; attempt < 5; attempt++) {
    globalThis.gc();
    await settle();
    const g0 = gcs;
    const h0 = used();
    await fn(n);
    const h1 = used();
    await settle();
    if (gcs === g0) return (h1 - h0) / n;
  }
  return NaN;
}

// Warm up (JIT, free lists, connection).
await pingpong(20000);
await comm.barrier();

const series = [];
const step = TOTAL / 10;
globalThis.gc();
series.push({ messages: 0, heapMB: used() / 1e6 });
const t0 = performance.now();
for (let done = 0; done < TOTAL; done += step) {
  await pingpong(step / 2);
  globalThis.gc();
  series.push({ messages: done + step, heapMB: used() / 1e6 });
}
const secs = (performance.now() - t0) / 1000;

// Allocation per message: one round trip = 1 send + 1 receive on each rank.
const BURST = 2000;
await comm.barrier();
const perRoundTrip = await allocPer(BURST, pingpong);
await comm.barrier();
const baseline = await allocPer(BURST * 2, async (n) => {
  for (let i = 0; i < n; i++) {
    const r = new Request(KIND_SEND, buf);
    const p = r.wait();
    r.complete(0, 1, 8);
    await p;
  }
});

if (comm.rank === 0) {
  console.log(JSON.stringify({
    benchmark: 'heap', messages: TOTAL, seconds: Math.round(secs * 10) / 10,
    heapMB: series.map((s) => Math.round(s.heapMB * 100) / 100),
    heapGrowthMB: Math.round((series.at(-1).heapMB - series[1].heapMB) * 100) / 100,
    bytesPerMessage: Math.round(perRoundTrip / 2),
    bytesPerRequestAndPromise: Math.round(baseline),
  }));
}
await comm.finalize();
