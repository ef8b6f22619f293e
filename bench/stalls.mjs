// Where the tail latency comes from: a 2-rank ping-pong (8 bytes unless a
// size is given) that records, on both ranks, the round trips slower than
// 0.3 ms and the V8 GC pauses (absolute times), then counts on rank 0 how
// many slow round trips overlap a GC on either rank, and prints the first
// slow ones (index: ms). Usage:
//   node dist/cli/main.js run -n 2 bench/stalls.mjs [iterations] [size] [warm-up round trips]   (or --threads)
// With `node --trace-deopt` in place of the script's node (`run -n 2 node
// --trace-deopt bench/stalls.mjs ...`), deoptimizations show up beside them.
import { PerformanceObserver } from 'node:perf_hooks';
import { init } from '../dist/index.js';

const comm = await init();
const N = Number(process.argv[2] ?? 20000);
const size = Number(process.argv[3] ?? 8);
const warm = Number(process.argv[4] ?? 3000);
const gcs = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcs.push([performance.timeOrigin + e.startTime, e.duration]); }).observe({ entryTypes: ['gc'] });
const b = new Uint8Array(size), peer = 1 - comm.rank;
const once = async () => {
  if (comm.rank === 0) { await comm.send(b, peer); await comm.recv(b, peer); }
  else { await comm.recv(b, peer); await comm.send(b, peer); }
};
for (let i = 0; i < warm; i++) await once();
const slow = [];
for (let i = 0; i < N; i++) {
  const t0 = performance.now();
  await once();
  const dt = performance.now() - t0;
  if (dt > 0.3) slow.push([performance.timeOrigin + t0, dt, i]);
}
await new Promise((r) => setTimeout(r, 50));
if (comm.rank === 1) {
  await comm.sendObject(gcs, 0, 99);
} else {
  const { value: peerGcs } = await comm.recvObject(1, 99);
  const all = [...gcs, ...peerGcs];
  const overlapping = slow.filter(([t, dt]) => all.some(([g, d]) => g <= t + dt && g + d >= t - 0.5)).length;
  console.log(JSON.stringify({ benchmark: 'stalls', size, warmup: warm, iterations: N, slowIterations: slow.length, overlappingAGc: overlapping,
    gcsRank0: gcs.length, gcsRank1: peerGcs.length, gcMsRank0: +gcs.reduce((a, [, d]) => a + d, 0).toFixed(1),
    firstSlow: slow.slice(0, 12).map(([, dt, i]) => `${i}: ${dt.toFixed(2)}`) }));
}
await comm.finalize();
