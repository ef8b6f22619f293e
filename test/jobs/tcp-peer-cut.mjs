// Two ranks on two hosts over one tcp lane (RAILCOMM_TCP_DEVICES=l1), for
// RAILCOMM_TCP_PEER_TIMEOUT (rail/tcp/peer-check.ts). MODE:
//   idle  both wait to receive from each other; rank 0 runs $CUT (both ways) first
//   send  rank 0 sends 64 MiB, rank 1 waits to receive it; $CUT first
//   busy  rank 1 computes for $BUSY_MS without its event loop while rank 0 sends it 64 MiB: no cut
// Each rank prints `RESULT <code or ok> <ms after the cut or start>`, then
// leaves the other time to reach its own verdict (LINGER_MS) and finalizes.
import { execSync } from 'node:child_process';
import { init } from '../../dist/index.js';

const comm = await init();
const me = comm.rank, peer = 1 - me, mode = process.env.MODE;
const BIG = 64 << 20;
await comm.barrier();
const t0 = Date.now();
try {
  if (mode === 'busy') {
    if (me === 1) {
      const end = Date.now() + Number(process.env.BUSY_MS);
      while (Date.now() < end) { /* computing: no event loop, no heartbeat */ }
      const into = new Uint8Array(BIG);
      await comm.recv(into, 0, 5);
      if (into[BIG - 1] !== 7) throw new Error(`last byte ${into[BIG - 1]}`);
    } else {
      await comm.send(new Uint8Array(BIG).fill(7), 1, 5);
    }
  } else {
    if (me === 0) execSync(process.env.CUT);
    if (mode === 'idle') await comm.recv(new Uint8Array(8), peer, 5);
    else if (me === 0) await comm.send(new Uint8Array(BIG).fill(7), 1, 5);
    else await comm.recv(new Uint8Array(BIG), 0, 5);
  }
  console.log(`RESULT ok ${Date.now() - t0}`);
} catch (e) {
  console.log(`RESULT ${e.code} ${Date.now() - t0} ${String(e.message).replace(/\n/g, ' ')}`);
}
await new Promise((r) => setTimeout(r, Number(process.env.LINGER_MS ?? 0)));
await comm.finalize();
