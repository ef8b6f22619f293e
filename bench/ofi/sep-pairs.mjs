// Thread ranks of two processes over the ofi rail, in pairs across the
// processes (rank r of the first with rank r+K of the second), all pairs
// ping-ponging 8 B at once: what a scalable endpoint (one domain and address
// per process, a context per rank) changes against a domain per rank
// (RAILCOMM_OFI_SEP=0). Rank 0 prints one JSON line: the pairs' mean half
// round trip, the aggregate message rate, and the first process's OS threads
// and open descriptors after the loops.
//   RAILCOMM_OFI_PROVIDERS=sockets node dist/cli/main.js run -n 8 --threads-per-process 4 --rails ofi bench/ofi/sep-pairs.mjs [iterations]
import { readFileSync, readdirSync } from 'node:fs';
import { init } from '../../dist/index.js';

const comm = await init();
const iters = Number(process.argv[2] ?? 5000);
const half = comm.size >> 1;
const first = comm.rank < half;
const peer = first ? comm.rank + half : comm.rank - half;
const b = new Uint8Array(8);
const loop = async (n) => {
  for (let i = 0; i < n; i++) {
    if (first) { await comm.send(b, peer); await comm.recv(b, peer); } else { await comm.recv(b, peer); await comm.send(b, peer); }
  }
};
await loop(500);
await comm.barrier();
const t0 = performance.now();
await loop(iters);
const ms = performance.now() - t0;
const threads = Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
const fds = readdirSync('/proc/self/fd').length;
const all = new Float64Array(comm.size * 3);
const mine = new Float64Array(comm.size * 3);
mine.set([ms, threads, fds], comm.rank * 3);
await comm.allreduce(mine, all, 'sum');
if (comm.rank === 0) {
  const pairs = [...Array(half).keys()].map((r) => all[r * 3]);
  const slowest = Math.max(...pairs);
  console.log(JSON.stringify({
    benchmark: 'ofi-sep-pairs', sep: process.env.RAILCOMM_OFI_SEP !== '0', pairs: half, iters,
    halfRttUs: +(pairs.reduce((a, x) => a + x, 0) / half / iters * 500).toFixed(2),
    msgsPerSec: Math.round(half * iters * 2 / (slowest / 1000)),
    threads: all[1], fds: all[2],
  }));
}
await comm.finalize();
