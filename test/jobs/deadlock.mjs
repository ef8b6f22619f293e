// A deadlock for the hang report: every rank first receives from the next
// rank (a cycle of receives nobody will ever send), so with
// RAILCOMM_HANG_TIMEOUT set the launcher must name the cycle. The test stops
// the job once the report is out.
import { init } from '../../dist/index.js';

const comm = await init();
const next = (comm.rank + 1) % comm.size;
const buf = new Int32Array(1);
await comm.recv(buf, next, 7);
await comm.send(buf, (comm.rank - 1 + comm.size) % comm.size, 7);
await comm.finalize();
