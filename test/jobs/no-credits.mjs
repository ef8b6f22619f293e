// Run with RAILCOMM_EAGER_CREDITS=0: every non-empty message finds no eager
// credit. Eager-sized sends must still complete without the receiver (the
// bytes are copied and go by rendezvous), and empty messages must flow.
import { init, waitAll } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern } from './harness.mjs';

const comm = await init();
const peer = 1 - comm.rank;
const cases = [
  ['barrier and empty messages', async () => {
    for (let i = 0; i < 20; i++) await comm.barrier();
    await comm.send(new Uint8Array(0), peer, 1);
    const st = await comm.recv(new Uint8Array(0), peer, 1);
    assert.equal(st.bytes, 0);
  }],
  ['eager-sized sends head to head never wait for the receiver', async () => {
    for (let i = 0; i < 300; i++) await comm.send(pattern(16384, i & 0xff), peer, 2);
    const b = new Uint8Array(16384);
    for (let i = 0; i < 300; i++) { await comm.recv(b, peer, 2); assert.ok(samePattern(b, 16384, i & 0xff), `message ${i}`); }
  }],
  ['sizes across the thresholds', async () => {
    const sizes = [1, 100, 16384, 16385, 65535, 65536, 1 << 20];
    const reqs = sizes.map((n, i) => comm.isend(pattern(n, i), peer, 10 + i));
    for (const [i, n] of sizes.entries()) { const b = new Uint8Array(n); await comm.recv(b, peer, 10 + i); assert.ok(samePattern(b, n, i)); }
    await waitAll(reqs);
  }],
];
const failed = await runCases(comm, cases);
await comm.finalize();
process.exitCode = failed ? 1 : 0;
