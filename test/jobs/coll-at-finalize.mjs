// finalize() while this rank's shared-memory collectives still run (not
// awaited: erroneous, as in MPI): they fail with ERR_FINALIZED instead of
// never settling (a thread rank then ended with exit code 13 and no word).
// Rank 0 starts first, so its copy waits on a phase; a second one queues
// behind it (V=b: the first alone). Each rank prints `RESULT <code>`.
import { init } from '../../dist/index.js';

const comm = await init();
const { rank: me } = comm;
await comm.barrier();
const n = 70000;
const g = new Float64Array(n), g2 = new Float64Array(3);
if (me !== 0) { const t = Date.now(); while (Date.now() - t < 20) { /* arrive later */ } }
const r = comm.iallreduce(new Float64Array(n).fill(me + 1), g, 'sum');
const r2 = process.env.V === 'b' ? null : comm.iallreduce(new Float64Array(3).fill(me + 1), g2, 'sum');
await comm.finalize();
let code = 'ok';
try { await r.wait(); if (r2) await r2.wait(); } catch (e) { code = e.code; }
console.log(`RESULT ${code}`);
