// Passive-target one-sided operations against a rank that makes no railcomm
// call at all: rank 1 exposes a window and sleeps in a timer while rank 0
// runs lock / put / unlock loops (and fetch-and-add) on it. Over the ofi rail
// with a manual-progress provider the target's provider only moves data when
// its queue is read: the rail's wait fd (or its timer) must serve it asleep.
//   RAILCOMM_RAILS=ofi,self railcomm run -n 2 test/jobs/ofi-passive.mjs
// Prints PASSIVE <iterations> <us per lock/put/unlock> <us per fetch-and-add>, then RESULT ok.

import { init } from '../../dist/index.js';
import assert from 'node:assert/strict';

const comm = await init();
const N = Number(process.env.ITERS ?? 200);
const w = await comm.allocWindow(8 * N + 8);
await w.fence();
if (comm.rank === 1) {
  // No railcomm call until rank 0 is done: only the rail's sleep serves the window.
  await new Promise((r) => setTimeout(r, Number(process.env.SLEEP_MS ?? 2500)));
} else {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    await w.lock(1, 'exclusive');
    await w.put(new Float64Array([i + 0.5]), 1, 8 * i);
    await w.unlock(1);
  }
  const t1 = performance.now();
  await w.lock(1, 'exclusive');
  for (let i = 0; i < N; i++) await w.fetchAndOp(1n, 1, 8 * N, 'sum', 'i64');
  await w.unlock(1);
  const t2 = performance.now();
  console.log(`PASSIVE ${N} ${((t1 - t0) * 1000 / N).toFixed(1)} ${((t2 - t1) * 1000 / N).toFixed(1)}`);
}
await comm.barrier();
if (comm.rank === 1) {
  const f = new Float64Array(w.buffer.buffer, w.buffer.byteOffset, N);
  for (let i = 0; i < N; i++) assert.equal(f[i], i + 0.5, `element ${i}`);
  assert.equal(new BigInt64Array(w.buffer.buffer, w.buffer.byteOffset + 8 * N, 1)[0], BigInt(N));
}
console.log(`RMA native ${comm.world.ctx.rma.nativeOps} emulated ${comm.world.ctx.rma.emulatedOps}`);
await w.free();
console.log('RESULT ok');
await comm.finalize();
