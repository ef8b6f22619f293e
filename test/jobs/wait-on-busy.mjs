// Rank 0 waits on a receive while rank 1 computes without yielding for 2 s
// before it sends: rank 1 makes progress of its own, so with a short
// RAILCOMM_HANG_TIMEOUT the launcher must print no hang report.
import { init } from '../../dist/index.js';

const comm = await init();
const buf = new Int32Array(1);
if (comm.rank === 0) {
  await comm.recv(buf, 1, 3);
  console.log(`RESULT got ${buf[0]}`);
} else {
  const until = Date.now() + 2000;
  let x = 0;
  while (Date.now() < until) x++;
  buf[0] = x > 0 ? 42 : 0;
  await comm.send(buf, 0, 3);
}
await comm.finalize();
