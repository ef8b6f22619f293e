// A large send under way when its receiver dies (SIGKILL, just after posting
// the receive): the sender's send fails with ERR_PEER_FAILED once the wire-up
// service's death notice comes, whatever the rail (udp's own detection would
// take a port check or RAILCOMM_UDP_PEER_TIMEOUT). Rank 0 prints
// `RESULT <code> after <ms> ms` (ms from the receiver's death).
import { init } from '../../dist/index.js';

// The launcher stops the job once a rank is killed: this rank stays to report (within --grace).
process.on('SIGTERM', () => {});
const comm = await init();
const N = 64 << 20;
await comm.barrier();
if (comm.rank === 1) {
  comm.irecv(new Uint8Array(N), 0, 9);
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), 20);
  await new Promise((r) => setTimeout(r, 60_000));
}
const t0 = Date.now();
let code = 'none';
try {
  await comm.send(new Uint8Array(N), 1, 9);
} catch (e) {
  code = e.code;
}
// The receiver died about 20 ms after the barrier.
console.log(`RESULT ${code} after ${Math.max(0, Date.now() - t0 - 20)} ms`);
await comm.finalize();
