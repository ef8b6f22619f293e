// A rank that waits in recv with nothing arriving uses (almost) no CPU: after
// RAILCOMM_SPIN_US of polling it sleeps (a futex doorbell between processes,
// Atomics.waitAsync between threads). Rank 0 sleeps `seconds` and then sends;
// every other rank prints the CPU time of its whole process (all threads) over
// its wait. Meant for ranks that do not outnumber the CPUs, where progress
// spins before it sleeps (oversubscribed ranks never spin):
//   RAILCOMM_RAILS=shm,self railcomm run -n 2 test/jobs/idle-wait.mjs 2
//   railcomm run -n 2 --threads test/jobs/idle-wait.mjs 2
// prints `IDLE <rail> <cpu ms> <waited ms>` per waiting rank.

import { init } from '../../dist/index.js';

const comm = await init();
const secs = Number(process.argv[2] ?? 2);
const peer = comm.rank === 0 ? 1 : 0;
// Warm up: the rings exist and the paths to a wait and to sleep are compiled.
const b = new Uint8Array(8);
for (let i = 0; i < 200 && comm.rank < 2; i++) {
  if (comm.rank === 0) { await comm.send(b, peer, 1); await comm.recv(b, peer, 1); } else { await comm.recv(b, peer, 1); await comm.send(b, peer, 1); }
}
// Let V8 finish the optimizing compiles that warm-up started (they run on
// helper threads, whose CPU time counts in the process's), then start together.
await new Promise((r) => setTimeout(r, 300));
await comm.barrier();
if (comm.rank === 0) {
  await new Promise((r) => setTimeout(r, secs * 1000));
  for (let d = 1; d < comm.size; d++) await comm.send(b, d, 2);
} else {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await comm.recv(b, 0, 2);
  const c = process.cpuUsage(c0);
  const rail = comm.world.ctx.endpointFor(0).lane?.rail.component ?? '?';
  console.log(`IDLE ${rail} ${((c.user + c.system) / 1000).toFixed(1)} ${(performance.now() - t0).toFixed(0)}`);
}
await comm.finalize();
