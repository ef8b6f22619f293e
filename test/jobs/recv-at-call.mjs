// Two ranks on shared memory (processes or threads): blocking receives that
// wait at the call keep MPI matching, and some did wait there.
//   railcomm run -n 2 [--threads] test/jobs/recv-at-call.mjs
import { init } from '../../dist/index.js';
import { runCases } from './harness.mjs';
import { atCallCase } from './at-call-case.mjs';

const comm = await init();
await runCases(comm, [
  ['blocking receives that wait at the call keep MPI matching', () => atCallCase(comm)],
]);
console.log(`ATCALL ${comm.world.ctx.p2p.snapshot().recvsAtCall}`);
await comm.finalize();
