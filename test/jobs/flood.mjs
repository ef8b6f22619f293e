// A flood of small messages to a rank that does not receive for a while
// (issue "Hardening"): rank 1 sends argv[2] 64-byte messages with blocking
// sends; rank 0 sleeps argv[3] ms, then receives them all in order. Prints
// the sender's peak RSS and how long the receiver took to drain.
import { init } from '../../dist/index.js';

const n = Number(process.argv[2]);
const sleepMs = Number(process.argv[3]);
const comm = await init();
const b = new Uint8Array(64);
let peak = 0;
const sample = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 50);
if (comm.rank === 1) {
  for (let i = 0; i < n; i++) { b[0] = i & 0xff; await comm.send(b, 0, 1); }
  await comm.barrier();
  peak = Math.max(peak, process.memoryUsage().rss);
  console.log(`RESULT sender peak rss ${Math.round(peak / 1e6)} MB`);
} else {
  await new Promise((r) => setTimeout(r, sleepMs));
  const t0 = Date.now();
  let bad = 0;
  for (let i = 0; i < n; i++) { await comm.recv(b, 1, 1); if (b[0] !== (i & 0xff)) bad++; }
  console.log(`RESULT drained ${n} in ${Date.now() - t0} ms, ${bad} out of order`);
  await comm.barrier();
}
clearInterval(sample);
await comm.finalize();
