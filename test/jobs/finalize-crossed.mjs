// Finalize is a protocol, not a wait (2 ranks): both isend a rendezvous-sized
// message and an eager one to each other and never receive them; rank 0 also
// waits for a message rank 1 never sends, and then both call finalize(). Both
// finish; the large sends fail with ERR_PEER_FAILED naming the finalized
// receiver, the lonely receive fails once rank 1's BYE arrived.
import { init } from '../../dist/index.js';

const comm = await init();
const peer = 1 - comm.rank;
const t0 = Date.now();
const big = comm.isend(new Uint8Array(300_000).fill(comm.rank + 1), peer, 1);
await comm.send(new Uint8Array(100), peer, 2);
if (comm.rank === 0) {
  try { await comm.recv(new Uint8Array(8), 1, 9); console.log('RESULT lonely receive: completed (wrong)'); }
  catch (e) { console.log(`RESULT lonely receive: ${e.code} ${/finalize\(\) without sending/.test(e.message) ? 'names the finalize' : e.message}`); }
}
await comm.finalize();
console.log(`RESULT finalize done in ${Date.now() - t0} ms`);
try { await big.wait(); console.log('RESULT big send: completed (wrong: nobody received it)'); }
catch (e) { console.log(`RESULT big send: ${e.code} ${/finalized without receiving/.test(e.message) ? 'names the finalize' : e.message}`); }
