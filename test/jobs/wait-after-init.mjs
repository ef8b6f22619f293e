// Wires up, prints its pid, then waits (up to 60 s) before finalizing: for
// tests that kill the launcher and check that no rank is left behind.
import { init } from '../../dist/index.js';
import { shmJobPrefix } from '../../dist/native/addon.js';

const comm = await init();
console.log(`UP rank=${comm.rank} pid=${process.pid} job=${shmJobPrefix(comm.world.ctx.launch.jobId, comm.world.ctx.launch.jobKey)}`);
await new Promise((r) => setTimeout(r, 60_000));
await comm.finalize();
