// A rank with a receive outstanding for longer than RAILCOMM_HANG_TIMEOUT is
// not hung while it keeps exchanging small messages (which complete at the
// call, without a Request): no hang report may be printed.
import { init } from '../../dist/index.js';

const comm = await init();
const peer = 1 - comm.rank;
const late = comm.irecv(new Uint8Array(4), peer, 99);
const b = new Uint8Array(8);
// 75 rounds of 200 sends, a 20 ms pause, then 200 receives of messages that
// are here already: every one completes at the call, for 1.5 s or more.
const ROUNDS = 75;
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < 200; i++) await comm.send(b, peer, 1);
  await new Promise((res) => setTimeout(res, 20));
  for (let i = 0; i < 200; i++) await comm.recv(b, peer, 1);
}
await comm.send(new Uint8Array(4), peer, 99);
await late.wait();
console.log('RESULT done');
await comm.finalize();
