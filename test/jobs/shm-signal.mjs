// A rank started without railcomm run that is stopped by a signal: it prints
// READY and the /dev/shm prefix of its job, then idles until the signal.
// argv[2] 'own-handler': the program handles SIGTERM itself (prints OWN and exits 0).
//   RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p node test/jobs/shm-signal.mjs [own-handler]

import { init } from '../../dist/index.js';
import { shmJobPrefix } from '../../dist/native/addon.js';

const comm = await init();
if (process.argv[2] === 'own-handler') process.on('SIGTERM', () => { console.log('OWN'); process.exit(0); });
console.log(`READY ${shmJobPrefix(comm.world.ctx.launch.jobId, comm.world.ctx.launch.jobKey)} ${comm.world.ctx.rails.map((r) => r.component).join(',')}`);
setInterval(() => {}, 1000);
