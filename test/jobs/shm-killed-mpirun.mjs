// A rank killed by SIGKILL removes none of its /dev/shm names, and under
// mpirun no launcher sweeps them: the survivors must. Rank 0 prints `PREFIX
// <this job's /dev/shm prefix>` first, for the test to look. KILL_AFTER=talk:
// the victim exchanges messages with every rank first (shm rings both ways);
// KILL_AFTER=init: it is killed at once, no rank ever talked to it.
import { init } from '../../dist/index.js';
import { shmJobPrefix } from '../../dist/native/addon.js';

const comm = await init();
const victim = comm.size - 1;
const launch = comm.world.ctx.launch;
if (comm.rank === 0) console.log(`PREFIX ${shmJobPrefix(launch.jobId, launch.jobKey)}`);
if (process.env.KILL_AFTER === 'talk') {
  const all = new Int32Array(comm.size);
  await comm.allgather(new Int32Array([comm.rank]), all);
  // Point-to-point too, so every pair has rings both ways.
  const reqs = [];
  for (let p = 0; p < comm.size; p++) if (p !== comm.rank) { reqs.push(comm.isend(new Uint8Array(64), p, 5), comm.irecv(new Uint8Array(64), p, 5)); }
  for (const r of reqs) await r.wait();
}
if (comm.rank === victim) process.kill(process.pid, 'SIGKILL');
// The survivors outlive the victim long enough to notice it (the shm rail checks every 500 ms).
await new Promise((r) => setTimeout(r, 1500));
console.log(`rank ${comm.rank}: finalizing`);
await comm.finalize().catch((e) => console.log(`rank ${comm.rank}: finalize: ${e.code}`));
