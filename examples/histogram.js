// A distributed histogram with one-sided operations: every rank draws
// samples and adds its counts straight into rank 0's window with accumulate
// (no receive posted anywhere), while a shared ticket counter hands out
// batch numbers with fetchAndOp. Run: npx railcomm run -n 4 examples/histogram.js
import { init } from 'railcomm';

const comm = await init();
const BINS = 16, BATCHES = 40, PER_BATCH = 1000;
// Rank 0's window: 8 bytes of ticket counter, then BINS 32-bit counts.
const win = await comm.allocWindow(8 + 4 * BINS);
let seed = 12345 + comm.rank;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);

await win.lock(0, 'shared');
let mine = 0;
for (;;) {
  const ticket = await win.fetchAndOp(1n, 0, 0, 'sum', 'i64');   // the next batch, first come first served
  if (ticket >= BigInt(BATCHES)) break;
  const counts = new Int32Array(BINS);
  for (let i = 0; i < PER_BATCH; i++) counts[Math.min(BINS - 1, Math.floor(-Math.log(1 - random()) * 4))]++;
  await win.accumulate(counts, 0, 8, 'sum');                     // atomic per element at the target
  mine++;
}
await win.unlock(0);                                             // everything this rank sent is in place
await win.fence();

if (comm.rank === 0) {
  const hist = new Int32Array(win.buffer.buffer, win.buffer.byteOffset + 8, BINS);
  const total = hist.reduce((a, b) => a + b, 0);
  console.log(`${total} samples in ${BATCHES} batches (this rank did ${mine}); histogram: ${[...hist].join(' ')}`);
}
await win.free();
await comm.finalize();
