// Where the time of an 8-byte one-sided operation goes, through the public API:
// a put not awaited (argument checks + the copy), a put awaited (+ one promise),
// a fetch-add awaited, and a flush with nothing outstanding. Rank 0 works on
// rank 1's window; three rounds of 200,000 calls each (V8 optimises late).
//   node dist/cli/main.js run -n 2 bench/rma-breakdown.mjs            (processes, shm)
//   node dist/cli/main.js run -n 2 --threads bench/rma-breakdown.mjs  (thread ranks)
import { init } from '../dist/index.js';

const comm = await init();
const win = await comm.allocWindow(1 << 16);
await win.fence();
const msg = new Uint8Array(8);
const N = 200000;
const us = (t0) => (((performance.now() - t0) * 1000) / N).toFixed(3);
if (comm.rank === 0) {
  for (let round = 0; round < 3; round++) {
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
    for (let i = 0; i < N; i++) await win.flush(1);
    const flush = us(t0);
    console.log(JSON.stringify({ round, putNotAwaited: +bare, putAwaited: +put, fetchAdd: +fadd, flushIdle: +flush }));
  }
}
await win.fence();
await win.free();
await comm.finalize();
