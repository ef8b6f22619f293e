// A message a rank saw complete before it exited is received, not failed: the
// survivor learns of the death (the wire-up service) while the message still
// waits, unread, in a polled rail (a ring). Rank 0 sends and exits at once;
// rank 1 is busy, then lets the event loop run (the death notice arrives),
// then receives. Prints RESULT got <value> or RESULT failed <code>.
import { init } from '../../dist/index.js';

process.on('SIGTERM', () => {}); // the launcher stops the job once rank 0 exits unfinalized: stay to report
const comm = await init();
await comm.barrier();
if (comm.rank === 0) {
  await comm.send(new Int32Array([7]), 1, 9);
  process.exit(0);
}
if (comm.rank === 1) {
  const t = Date.now();
  while (Date.now() - t < 300) { /* busy: rank 0 exits meanwhile */ }
  await new Promise((r) => setTimeout(r, 50));
  try {
    const v = new Int32Array(1);
    await comm.recv(v, 0, 9);
    console.log(`RESULT got ${v[0]}`);
  } catch (e) {
    console.log(`RESULT failed ${e.code}`);
  }
}
await comm.finalize().catch(() => undefined);
process.exit(0);
