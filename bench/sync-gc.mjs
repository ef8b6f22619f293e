// The synchronous calls allocate nothing per call: a 2-rank 8-byte ping-pong
// through sendSync/recvSync (and, with SYNC_GC_COLL=1, allreduceSync of one
// double) after a warm-up, counting V8's garbage collections and the heap's
// growth over the timed calls (no allocation: no collection, and the heap
// does not move). Prints one JSON line per rank.
//   node dist/cli/main.js run -n 2 bench/sync-gc.mjs [round trips, default 1000000] [warm-up, 200000]
//   node dist/cli/main.js run -n 2 --threads bench/sync-gc.mjs 10000000     (the 10-million-call check)
import { PerformanceObserver } from 'node:perf_hooks';
import { init } from '../dist/index.js';

const comm = await init();
const N = Number(process.argv[2] ?? 1000000);
const W = Number(process.argv[3] ?? 200000);
const coll = process.env.SYNC_GC_COLL === '1';
import { constants } from 'node:perf_hooks';
let gcs = 0, gcMs = 0, kinds = {};
const KIND = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
new PerformanceObserver((l) => { for (const e of l.getEntries()) { gcs++; gcMs += e.duration; const k = KIND[e.detail?.kind] ?? String(e.detail?.kind); kinds[k] = (kinds[k] ?? 0) + 1; } }).observe({ entryTypes: ['gc'] });
const b = new Uint8Array(8), peer = 1 - comm.rank;
const x = new Float64Array(1), y = new Float64Array(1);
function run(n) {
  if (coll) { for (let i = 0; i < n; i++) comm.allreduceSync(x, y, 'sum'); return; }
  if (comm.rank === 0) for (let i = 0; i < n; i++) { comm.sendSync(b, peer, 1); comm.recvSync(b, peer, 1); }
  else for (let i = 0; i < n; i++) { comm.recvSync(b, peer, 1); comm.sendSync(b, peer, 1); }
}
run(W);
// Collections the warm-up caused are reported by now.
await new Promise((r) => setTimeout(r, 50));
comm.barrierSync();
gcs = 0; gcMs = 0; kinds = {};
const heap0 = process.memoryUsage().heapUsed;
const t0 = performance.now();
run(N);
const dt = performance.now() - t0;
const heap1 = process.memoryUsage().heapUsed;
await new Promise((r) => setTimeout(r, 50));
console.log(JSON.stringify({ benchmark: 'sync-gc', call: coll ? 'allreduceSync' : 'sendSync/recvSync', rank: comm.rank, roundTrips: N,
  usPerCall: +((dt * 1000) / N / (coll ? 1 : 2)).toFixed(3), gcs, gcKinds: kinds, gcMs: +gcMs.toFixed(1), heapGrowthBytes: heap1 - heap0 }));
await comm.finalize();
