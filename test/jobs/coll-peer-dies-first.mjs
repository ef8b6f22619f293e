// A rank dies before the first collective, whose shared segment rank 0 has
// just named in /dev/shm: the others fail the collective (ERR_PEER_FAILED) and
// rank 0 removes the name (under mpirun no launcher sweeps /dev/shm). Rank 0
// prints `PREFIX <this job's /dev/shm prefix>` first, for the test to look.
import { init } from '../../dist/index.js';
import { shmJobPrefix } from '../../dist/native/addon.js';

const comm = await init();
if (comm.rank === 1) {
  await new Promise((r) => setTimeout(r, 200));
  throw new Error('rank 1 dies before the first collective');
}
const launch = comm.world.ctx.launch;
if (comm.rank === 0) console.log(`PREFIX ${shmJobPrefix(launch.jobId, launch.jobKey)}`);
try {
  await comm.allreduce(new Float64Array(8), new Float64Array(8), 'sum');
  console.log(`rank ${comm.rank}: allreduce completed?!`);
} catch (e) {
  console.log(`rank ${comm.rank}: allreduce failed: ${e.code}`);
}
await comm.finalize().catch(() => {});
