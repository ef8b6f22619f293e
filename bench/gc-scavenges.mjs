// Garbage collections during a 2-rank 8-byte ping-pong: how many, and how long
// in all, per 100,000 round trips (after 20,000 warm-up ones). Polling that
// allocates while a rank waits shows up here as scavenges, the latency tail.
//   node dist/cli/main.js run -n 2 --threads bench/gc-scavenges.mjs
//   node dist/cli/main.js run -n 2 bench/gc-scavenges.mjs
import { PerformanceObserver } from 'node:perf_hooks';
import { init } from '../dist/index.js';

const comm = await init();
let gcs = 0, gcMs = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) { gcs++; gcMs += e.duration; } }).observe({ entryTypes: ['gc'] });
const b = new Uint8Array(8);
const peer = 1 - comm.rank;
const once = async () => {
  if (comm.rank === 0) { await comm.send(b, peer); await comm.recv(b, peer); }
  else { await comm.recv(b, peer); await comm.send(b, peer); }
};
for (let i = 0; i < 20000; i++) await once();
gcs = 0; gcMs = 0;
const N = 100000;
const t0 = performance.now();
for (let i = 0; i < N; i++) await once();
const dt = performance.now() - t0;
await new Promise((r) => setTimeout(r, 50));
console.log(JSON.stringify({ rank: comm.rank, roundTrips: N, halfRttMeanUs: +((dt * 500) / N).toFixed(3), gcs, gcMs: +gcMs.toFixed(1) }));
await comm.finalize();
