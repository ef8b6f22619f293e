// Rendezvous by remote read over the ofi rail (proto/rndv/rdma.ts): rank 0
// sends messages across RAILCOMM_RDMA_RGET_MIN (64 KiB) to rank 1, which
// checks every byte: posted before and after the announcement arrived, into a
// larger buffer, several at once, and one too large for its buffer
// (truncation there, the sender unharmed). Prints CASE lines (harness.mjs)
// and `RGET <reads> <bytes> <fell back>` per rank.
//   railcomm run -n 2 --rails ofi test/jobs/ofi-rget.mjs

import { init } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern, rejectsWith } from './harness.mjs';

const comm = await init();
const peer = 1 - comm.rank;

const failed = await runCases(comm, [
  ['sizes across the threshold, data checked', async () => {
    for (const n of [65535, 65536, 65537, 1 << 20, (4 << 20) + 3]) {
      if (comm.rank === 0) { await comm.send(pattern(n, n & 63), peer, 1); continue; }
      const b = new Uint8Array(n);
      await comm.recv(b, peer, 1);
      assert.ok(samePattern(b, n, n & 63), `${n} bytes`);
    }
  }],
  ['announced before the receive is posted', async () => {
    const n = 1 << 20;
    if (comm.rank === 0) { await comm.send(pattern(n, 3), peer, 2); return; }
    await new Promise((r) => setTimeout(r, 150));
    const b = new Uint8Array(n);
    await comm.recv(b, peer, 2);
    assert.ok(samePattern(b, n, 3));
  }],
  ['into larger buffers, three at once', async () => {
    if (comm.rank === 0) { await Promise.all([1, 2, 3].map((k) => comm.send(pattern(200000 + k, k), peer, 10 + k))); return; }
    const bufs = [1, 2, 3].map(() => new Uint8Array(300000));
    await Promise.all(bufs.map((b, i) => comm.recv(b, peer, 11 + i)));
    bufs.forEach((b, i) => assert.ok(samePattern(b, 200001 + i, i + 1), `message ${i}`));
  }],
  ['a receive buffer too small: ERR_TRUNCATE there, the send completes', async () => {
    if (comm.rank === 0) { await comm.send(pattern(100000, 5), peer, 20); return; }
    await rejectsWith(comm.recv(new Uint8Array(70000), peer, 20), 'ERR_TRUNCATE');
  }],
]);
const s = comm.world.ctx.p2p.snapshot();
console.log(`RGET ${s.rdmaReads} ${s.rdmaReadBytes} ${s.rdmaFellBack}`);
await comm.finalize();
process.exitCode = failed > 0 ? 1 : 0;
