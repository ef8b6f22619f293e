// A peer dies while this rank waits in a synchronous call: recvSync from it,
// and then a synchronous collective that needs it, fail with ERR_PEER_FAILED
// within the rail's detection time (shm: the dead-pid check; tbsm: the
// thread's exit), never hang, though the waiting rank runs no event loop.
//   railcomm run -n 2 [--threads] test/jobs/sync-peer-exit.mjs   (exits with rank 1's code, 3)

import { init } from '../../dist/index.js';

// The survivor stays to report even though the launcher stops the job.
process.on('SIGTERM', () => {});
const comm = await init();
await comm.barrier(); // attaches the shared segment: barrierSync below waits there
if (comm.rank === 1) {
  // Rank 0 is in recvSync by now.
  await new Promise((r) => setTimeout(r, 300));
  process.exit(3);
}
const t0 = Date.now();
try {
  comm.recvSync(new Uint8Array(8), 1, 5);
  console.log('RESULT recvSync: returned (wrong)');
} catch (e) {
  console.log(`RESULT recvSync: ${e.code}`);
}
console.log(`ELAPSED ${Date.now() - t0 - 300}`);
try {
  comm.barrierSync();
  console.log('RESULT barrierSync: returned (wrong)');
} catch (e) {
  console.log(`RESULT barrierSync: ${e.code}`);
}
try {
  comm.sendSync(new Uint8Array(8), 1, 6);
  console.log('RESULT sendSync: returned (wrong)');
} catch (e) {
  console.log(`RESULT sendSync: ${e.code}`);
}
await comm.finalize();
process.exit(0);
