// Sends a udp rail packs until the run of JavaScript ends go out when a
// synchronous call starts to wait (it runs no microtasks). 4 ranks as 2
// processes x 2 threads over --rails udp,tbsm,self: rank 0 isends two
// messages to rank 2 (udp; the second is packed), then waits in recvSync for
// rank 1 (its thread neighbour), which sends only once rank 2 has both and
// told it so. Held back, the second message would wait for rank 0's
// microtasks, which never run while it waits: a hang.
import { init } from '../../dist/index.js';

const comm = await init();
const one = new Uint8Array(8);
const r = comm.rank;
await comm.barrier();
let got = -1;
if (r === 0) {
  comm.isend(Uint8Array.of(1), 2, 5);
  comm.isend(Uint8Array.of(2), 2, 5);
  comm.recvSync(one, 1, 6);
  got = one[0];
} else if (r === 2) {
  const a = new Uint8Array(1), b = new Uint8Array(1);
  await comm.recv(a, 0, 5);
  await comm.recv(b, 0, 5);
  await comm.send(Uint8Array.of(a[0] + b[0]), 1, 7);
} else if (r === 1) {
  const s = new Uint8Array(1);
  await comm.recv(s, 2, 7);
  comm.sendSync(Uint8Array.of(s[0] * 10), 0, 6);
}
if (r === 0) console.log(`RESULT ${got}`);
await comm.barrier();
await comm.finalize();
