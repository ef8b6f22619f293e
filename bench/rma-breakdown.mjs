// Where the time of an 8-byte one-sided operation goes, through the public API:
// a put not awaited (argument checks + the copy), a put awaited (+ one promise),
// a fetch-add awaited, a one-element accumulate of a double and of an int32
// (not awaited), a flush with nothing outstanding, and the three put +
// flush forms (testFlush, an awaited flush, the put awaited too). Rank 0 works on
// rank 1's window; five rounds of 200,000 calls each (V8 optimises late).
//   node dist/cli/main.js run -n 2 bench/rma-breakdown.mjs            (processes, shm)
//   node dist/cli/main.js run -n 2 --threads bench/rma-breakdown.mjs  (thread ranks)
import { init } from '../dist/index.js';

const comm = await init();
const win = await comm.allocWindow(1 << 16);
await win.fence();
const msg = new Uint8Array(8);
const oneDouble = new Float64Array([1.5]);
const oneInt = new Int32Array([3]);
const N = 200000;
const us = (t0) => (((performance.now() - t0) * 1000) / N).toFixed(3);
if (comm.rank === 0) {
  for (let round = 0; round < 5; round++) {
    let t0 = performance.now();
    for (let i = 0; i < N; i++) win.put(msg, 1, 0);
    const bare = us(t0);
    t0 = performance.now();
    for (let i = 0; i < N; i++) await win.put(msg, 1, 0);
    const put = us(t0);
    t0 = performance.now();
    for (let i = 0; i < N; i++) await win.fetchAndOp(1n, 1, 0, 'sum', 'i64');
    const fadd = us(t0);
    t0 = performance.now();
    for (let i = 0; i < N; i++) win.accumulate(oneDouble, 1, 8, 'sum');
    const accF64 = us(t0);
    t0 = performance.now();
    for (let i = 0; i < N; i++) win.accumulate(oneInt, 1, 16, 'sum');
    const accI32 = us(t0);
    t0 = performance.now();
    for (let i = 0; i < N; i++) await win.flush(1);
    const flush = us(t0);
    // The put + flush forms of `railcomm bench put` (osu_put_latency's MPI_Put + MPI_Win_flush).
    t0 = performance.now();
    for (let i = 0; i < N; i++) { void win.put(msg, 1, 0); if (!win.testFlush(1)) await win.flush(1); }
    const putTestFlush = us(t0);
    t0 = performance.now();
    for (let i = 0; i < N; i++) { void win.put(msg, 1, 0); await win.flush(1); }
    const putFlush = us(t0);
    t0 = performance.now();
    for (let i = 0; i < N; i++) { await win.put(msg, 1, 0); await win.flush(1); }
    const putAwaitedFlush = us(t0);
    console.log(JSON.stringify({ round, putNotAwaited: +bare, putAwaited: +put, fetchAdd: +fadd, accumulateF64: +accF64, accumulateI32: +accI32, flushIdle: +flush, putTestFlush: +putTestFlush, putFlush: +putFlush, putAwaitedFlush: +putAwaitedFlush }));
  }
}
await win.fence();
await win.free();
await comm.finalize();
