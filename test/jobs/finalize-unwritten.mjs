// A rank that bound its lane to a peer with no traffic either way (as a
// synchronous collective binds every member's lane at the call: bindLocal,
// called here directly), finalizing after that peer finalized and removed its
// inbox: the goodbye it owes finds the inbox gone, which is expected at that
// point, not a failure (16 ranks of sync collectives printed "dropping peer
// ...: cannot map its inbox" at finalize). Rank 1 prints RESULT lines;
// stderr must stay quiet.
//   railcomm run -n 2 --rails shm,self test/jobs/finalize-unwritten.mjs

import { existsSync } from 'node:fs';
import { init } from '../../dist/index.js';
import { inboxName } from '../../dist/rail/shm/wire.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const comm = await init();
if (comm.rank === 0) {
  await comm.finalize();
} else {
  comm.world.ctx.bindLocal(0);
  const shm = comm.world.ctx.rails.find((r) => r.component === 'shm');
  const inbox = `/dev/shm/${inboxName(shm.prefix, 0)}`;
  let gone = false;
  for (let i = 0; i < 1000 && !gone; i++) { gone = !existsSync(inbox); if (!gone) await sleep(10); }
  console.log(`RESULT rank 0's inbox gone: ${gone}`);
  await comm.finalize();
  console.log('RESULT finalized');
}
