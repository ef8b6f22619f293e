// A plain 2-rank ping-pong through railcomm's public API that reports the
// median, p90 and mean half round trip over many iterations (after a long
// warm-up), for whatever rail the launcher gives:
//   node dist/cli/main.js run -n 2 --threads bench/pingpong-median.mjs [bytes] [iterations]
//   node dist/cli/main.js run -n 2 bench/pingpong-median.mjs 8
import { init } from '../dist/index.js';

const comm = await init();
const size = Number(process.argv[2] ?? 8);
const iters = Number(process.argv[3] ?? 20000);
const b = new Uint8Array(size);
const peer = 1 - comm.rank;
// The calls are written out in the loops, as osu_latency's C loop does: an
// async wrapper per round trip would add its own promise and awaits.
const first = comm.rank === 0;
for (let i = 0; i < iters; i++) {
  if (first) { await comm.send(b, peer); await comm.recv(b, peer); } else { await comm.recv(b, peer); await comm.send(b, peer); }
}
const t = new Float64Array(iters);
// Only rank 0 reads the clock (48 ns a read here): rank 1's reads would lengthen each round trip.
for (let i = 0; i < iters; i++) {
  const t0 = first ? performance.now() : 0;
  if (first) { await comm.send(b, peer); await comm.recv(b, peer); } else { await comm.recv(b, peer); await comm.send(b, peer); }
  if (first) t[i] = (performance.now() - t0) * 500;
}
t.sort();
if (comm.rank === 0) {
  const lane = comm.world.ctx.endpointFor(peer).lane;
  console.log(JSON.stringify({ benchmark: 'pingpong-median', rails: lane?.rail.component, size,
    median: +t[iters >> 1].toFixed(3), p90: +t[Math.floor(iters * 0.9)].toFixed(3), mean: +(t.reduce((a, x) => a + x, 0) / iters).toFixed(3) }));
}
await comm.finalize();
