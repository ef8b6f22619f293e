// The synchronous calls over the ofi rail (run with --rails ofi,self): before
// any message ERR_NO_RAIL at the call, saying to exchange one async message
// first; after it, a sendSync/recvSync ping-pong with every byte checked (and
// how many receives took their message at the call: ATCALL n); and
// a recvSync that waits long blocks on the completion queue instead of
// spinning (its CPU time over the wait is printed: WAITCPU ms-of-cpu ms-waited).
//   railcomm run -n 2 --rails ofi,self test/jobs/sync-ofi.mjs

import { init } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern } from './harness.mjs';

const comm = await init();
const me = comm.rank, peer = 1 - me;
const b = new Uint8Array(8);

const cases = [
  ['before any message: ERR_NO_RAIL saying the lane comes with a first async message', async () => {
    assert.throws(() => comm.sendSync(b, peer, 0), (e) => {
      assert.equal(e.code, 'ERR_NO_RAIL', e.message);
      for (const w of [`rank ${peer}`, 'ofi', 'await comm.send()']) assert.ok(e.message.includes(w), `'${w}' in: ${e.message}`);
      return true;
    });
  }],
  ['after one async message: 2000 sendSync/recvSync round trips, 8 B to 200 KB, every byte checked', async () => {
    if (me === 0) { await comm.send(b, 1); await comm.recv(b, 1); } else { await comm.recv(b, 0); await comm.send(b, 0); }
    const sizes = [0, 8, 4096, 65536, 200000];
    const before = comm.world.ctx.p2p.snapshot().recvsAtCall;
    for (let i = 0; i < 2000; i++) {
      const n = sizes[i % sizes.length];
      const into = new Uint8Array(n);
      if (me === 0) {
        comm.sendSync(pattern(n, i), 1, 3);
        const st = comm.recvSync(into, 1, 4);
        assert.equal(st.bytes, n);
        assert.ok(samePattern(into, n, i + 1), `round trip ${i}, ${n} bytes back`);
      } else {
        const st = comm.recvSync(into, 0, 3);
        assert.equal(st.bytes, n);
        assert.ok(samePattern(into, n, i), `round trip ${i}, ${n} bytes`);
        comm.sendSync(pattern(n, i + 1), 0, 4);
      }
    }
    // Receives that took their message in the at-call slot (no queue entry, no Request).
    console.log(`ATCALL ${comm.world.ctx.p2p.snapshot().recvsAtCall - before}`);
  }],
  ['a recvSync that waits 600 ms blocks on the completion queue (CPU well under the wait)', async () => {
    if (me === 1) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600);
      comm.sendSync(b, 0, 9);
      return;
    }
    const c0 = process.cpuUsage(), t0 = performance.now();
    comm.recvSync(b, 1, 9);
    const waited = performance.now() - t0, c = process.cpuUsage(c0);
    const cpu = (c.user + c.system) / 1000;
    console.log(`WAITCPU ${cpu.toFixed(1)} ${waited.toFixed(1)}`);
    assert.ok(waited > 400, `waited ${waited} ms`);
  }],
];
const failed = await runCases(comm, cases, { timeoutMs: 60000 });
await comm.finalize();
process.exit(failed === 0 ? 0 : 1);
