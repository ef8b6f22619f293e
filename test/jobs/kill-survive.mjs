// Survivors of a kill -9 finish (issue "Hardening"): ranks loop on allreduce
// or on a ring of rendezvous-sized messages until the victim (argv[3]) kills
// itself with SIGKILL mid-loop; every survivor gets ERR_PEER_FAILED, calls
// finalize() and prints how long both took. argv[2]: 'allreduce' or 'p2p'.
import { init } from '../../dist/index.js';

const [mode, victimArg] = process.argv.slice(2);
const victim = Number(victimArg ?? 2);
const comm = await init();
const right = (comm.rank + 1) % comm.size;
const left = (comm.rank - 1 + comm.size) % comm.size;
const send = new Float64Array(mode === 'p2p' ? 16384 : 8).fill(1);
const recv = new Float64Array(send.length);
let t0 = 0;
let code = 'none';
let throwNow = false;
try {
  for (let i = 0; i < 100_000; i++) {
    if (i === 50 && comm.rank === victim) {
      if (process.env.HOW === 'throw') { throwNow = true; break; }
      process.kill(process.pid, 'SIGKILL');
    }
    // From the iteration before the kill: a survivor still finishing iteration 49 when the
    // victim (already past it) dies fails there, and had no start time (CI: "failed after 1.8e12 ms").
    if (i === 49) t0 = Date.now();
    if (mode === 'p2p') {
      const r = comm.irecv(recv, left, 1);
      await comm.send(send, right, 1);
      await r.wait();
    } else {
      await comm.allreduce(send, recv, 'sum');
    }
  }
} catch (e) {
  code = e.code;
}
// An uncaught error ends this rank (a thread rank's worker, or the process).
if (throwNow) throw new Error(`rank ${comm.rank} dies on purpose`);
const failedIn = Date.now() - t0;
const t1 = Date.now();
await comm.finalize();
console.log(`RESULT rank ${comm.rank} got ${code} after ${failedIn} ms, finalized in ${Date.now() - t1} ms`);
