// Distribution of one collective's time per call (median, p90, p99, max,
// mean), for the shared-memory path or any other: 3000 warm-up calls, then
// 5000 timed one by one. Averages hide that most calls are fast and a few wait
// for a descheduled peer.
//   node dist/cli/main.js run -n 2 bench/coll-median.mjs            (processes: shm segment)
//   node dist/cli/main.js run -n 2 --threads bench/coll-median.mjs  (thread ranks)
//   RAILCOMM_COLL_SHARED_MAX=0 ...                                  (point-to-point algorithms)
import { init } from '../dist/index.js';

const comm = await init();
const n = Number(process.argv[2] ?? 1);
const s = new Float64Array(n).fill(1), r = new Float64Array(n);
for (let i = 0; i < 3000; i++) await comm.allreduce(s, r, 'sum');
const N = 5000, t = new Float64Array(N);
for (let i = 0; i < N; i++) { const t0 = performance.now(); await comm.allreduce(s, r, 'sum'); t[i] = (performance.now() - t0) * 1000; }
const mean = t.reduce((a, b) => a + b, 0) / N;
t.sort();
const q = (f) => +t[Math.min(N - 1, Math.floor(N * f))].toFixed(2);
console.log(JSON.stringify({ rank: comm.rank, ranks: comm.size, doubles: n, median: q(0.5), p90: q(0.9), p99: q(0.99), max: +t[N - 1].toFixed(0), mean: +mean.toFixed(2) }));
await comm.finalize();
