// Every rank prints N lines and a last one, then calls process.exit() at once
// (after finalize, or without it and with a failing code): under railcomm run
// every line must still reach the launcher (its pipes take blocking writes).
//   railcomm run -n 4 [--threads-per-process 2] print-then-exit.mjs N CODE fin|nofin
import { init } from '../../dist/index.js';

const N = Number(process.argv[2] ?? 1000), CODE = Number(process.argv[3] ?? 0), FIN = process.argv[4] !== 'nofin';
const comm = await init();
await comm.barrier();
for (let i = 0; i < N; i++) console.log(`line ${i} of rank ${comm.rank}`);
console.error(`LAST-ERR ${comm.rank}`);
console.log(`LAST ${comm.rank}`);
if (FIN) await comm.finalize();
process.exit(CODE);
