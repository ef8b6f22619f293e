// CPU used by ranks that wait with nothing arriving (issue 4: idle ranks use
// no CPU). Rank 0 sleeps 5 s and then sends; every other rank waits in recv
// meanwhile and reports the CPU time of its whole process (all threads,
// including the addon's doorbell thread) over the wait:
//   flock /tmp/railcomm-bench.lock node dist/cli/main.js run -n 2 --rails shm bench/idle-cpu.mjs [seconds] [timer]
// With `timer`, the other ranks sleep in a timer instead, nothing outstanding
// (a rank computing between messages), and receive afterwards.
import { init } from '../dist/index.js';

const comm = await init();
const secs = Number(process.argv[2] ?? 5);
await comm.barrier();
if (comm.rank === 0) {
  await new Promise((r) => setTimeout(r, secs * 1000));
  for (let d = 1; d < comm.size; d++) await comm.send(new Uint8Array(8), d, 1);
} else {
  const timer = process.argv[3] === 'timer';
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  if (timer) await new Promise((r) => setTimeout(r, secs * 1000));
  else await comm.recv(new Uint8Array(8), 0, 1);
  const c = process.cpuUsage(c0);
  if (timer) await comm.recv(new Uint8Array(8), 0, 1);
  const lane = comm.world.ctx.endpointFor(0).lane;
  console.log(JSON.stringify({ benchmark: 'idle-cpu', rails: lane?.rail.component, waitedIn: timer ? 'timer' : 'recv', waitedMs: Math.round(performance.now() - t0),
    cpuMs: +((c.user + c.system) / 1000).toFixed(1), cpuPercent: +(((c.user + c.system) / 1000) / (performance.now() - t0) * 100).toFixed(2) }));
}
await comm.finalize();
