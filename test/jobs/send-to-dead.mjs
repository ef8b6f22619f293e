// A large send under way when its receiver dies: the receiver matches it
// (its clear-to-send goes out), then stops taking data (a busy loop: no acks
// over udp, a full socket over tcp) and is SIGKILLed. The sender's send fails
// with ERR_PEER_FAILED once the wire-up service's death notice comes (udp's
// own detection would take a port check or RAILCOMM_UDP_PEER_TIMEOUT).
// Rank 0 prints `RESULT <code> after <ms> ms` (ms from the receiver's death,
// at about 310 ms after the barrier).
import { init } from '../../dist/index.js';

// The launcher stops the job once a rank is killed: this rank stays to report (within --grace).
process.on('SIGTERM', () => {});
const comm = await init();
const N = 256 << 20;
const DEATH_MS = 310;
await comm.barrier();
if (comm.rank === 1) {
  comm.irecv(new Uint8Array(N), 0, 9);
  await new Promise((r) => setTimeout(r, 10));
  const t = Date.now();
  while (Date.now() - t < DEATH_MS - 10) { /* takes nothing more */ }
  process.kill(process.pid, 'SIGKILL');
}
const t0 = Date.now();
let code = 'none';
try {
  await comm.send(new Uint8Array(N), 1, 9);
} catch (e) {
  code = e.code;
}
console.log(`RESULT ${code} after ${Math.max(0, Date.now() - t0 - DEATH_MS)} ms`);
await comm.finalize();
