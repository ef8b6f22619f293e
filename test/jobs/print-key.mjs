// Prints the job key this rank was given (for the test that checks it never
// appeared on a command line), holds the job open a moment, then exchanges a
// message so the key is shown to work.
import { init } from '../../dist/index.js';

const comm = await init();
console.log(`KEY ${process.env.RAILCOMM_JOB_KEY ?? ''}`);
await new Promise((r) => setTimeout(r, 600));
const b = new Int32Array([comm.rank]);
if (comm.rank === 0) { await comm.recv(b, 1); console.log(`GOT ${b[0]}`); } else if (comm.rank === 1) await comm.send(b, 0);
await comm.finalize();
