// The first message after a rank has slept, and what the sleep cost (issue
// "ofi rail": idle CPU, and the extra latency of the first message after
// sleep). Rank 1 waits in recv while rank 0 sleeps S ms and then sends its
// clock (performance.timeOrigin + now: one clock for processes of one host);
// rank 1 prints how long the message took to arrive and its process's CPU time
// over the wait. Sleeps: 1 ms (the rank still spins), 50 ms, 500 ms, 3 s.
//   node dist/cli/main.js run -n 2 --rails ofi,self -x RAILCOMM_OFI_PROVIDERS=shm bench/wake-after-sleep.mjs
//   node dist/cli/main.js run -n 2 --rails shm,self bench/wake-after-sleep.mjs      (to compare)
import { init } from '../dist/index.js';

const comm = await init();
const sleeps = (process.argv[2] ?? '1,50,500,3000').split(',').map(Number);
const clock = new Float64Array(1);
const now = () => performance.timeOrigin + performance.now();
for (const ms of sleeps) {
  for (let rep = 0; rep < 3; rep++) {
    await comm.barrier();
    if (comm.rank === 0) {
      await new Promise((r) => setTimeout(r, ms));
      clock[0] = now();
      await comm.send(clock, 1, 7);
    } else if (comm.rank === 1) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await comm.recv(clock, 0, 7);
      const arrivedUs = (now() - clock[0]) * 1000;
      const c = process.cpuUsage(c0);
      const waited = performance.now() - t0;
      const lane = comm.world.ctx.endpointFor(0).lane;
      console.log(JSON.stringify({ benchmark: 'wake-after-sleep', rail: lane?.rail.name, sleepMs: ms, rep, arrivalUs: +arrivedUs.toFixed(1),
        cpuPercent: +(((c.user + c.system) / 1000 / waited) * 100).toFixed(2) }));
    }
  }
}
await comm.finalize();
