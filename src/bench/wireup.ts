// The rank program behind `railcomm bench wireup`: how long from this rank's
// start (process or worker thread) until it can exchange messages with every
// other rank (init() plus a first barrier). Rank 0 prints the slowest rank's
// time and the median, in ms. Works under any launcher (mpirun, env://).

import { init } from '../index.js';

async function main(): Promise<void> {
  const comm = await init();
  await comm.barrier();
  const mine = performance.now(); // ms since this process or worker started
  const all = new Float64Array(comm.size);
  await comm.allgather(new Float64Array([mine]), all);
  if (comm.rank === 0) {
    const sorted = Array.from(all).sort((a, b) => a - b);
    const ctx = comm.world.ctx;
    process.stdout.write(JSON.stringify({
      benchmark: 'wireup', launcher: ctx.launch.launcher, threads: ctx.launch.threads, ranks: comm.size,
      rails: ctx.rails.map((r) => r.component).join(','),
      maxMs: Math.round(sorted[sorted.length - 1]! * 10) / 10, medianMs: Math.round(sorted[sorted.length >> 1]! * 10) / 10,
    }) + '\n');
  }
  await comm.finalize();
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exitCode = 1;
});
