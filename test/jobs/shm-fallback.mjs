// Single copy refused or half refused, in a real job (the kernel's answers are
// simulated by replacing a lane's CMA functions): a receiver that may not read
// (EPERM, as under Yama) makes the sender give up after one answer and use the
// ring; a sender that may read but not write falls back to streaming its half.
// Data arrives intact either way and nothing hangs.
//   RAILCOMM_RAILS=shm,self railcomm run -n 3 test/jobs/shm-fallback.mjs

import { init } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern } from './harness.mjs';

const comm = await init();
const N = 1 << 20;
const EPERM = -1;
const lane = (peer) => comm.world.ctx.endpointFor(peer).lane;
const state = (peer) => comm.stats().singleCopy[String(peer)];

// Connect 0 <-> 1 and 0 <-> 2 first, so that the lanes exist to be tampered with.
if (comm.rank === 0) for (const p of [1, 2]) { await comm.send(new Uint8Array(1), p, 99); await comm.recv(new Uint8Array(1), p, 99); }
else { await comm.recv(new Uint8Array(1), 0, 99); await comm.send(new Uint8Array(1), 0, 99); }

const failed = await runCases(comm, [
  ['refused (EPERM): the sender gives up at once, the ring carries everything', async () => {
    // Rank 1 cannot read rank 0's memory.
    if (comm.rank === 1) lane(0).ipc.read = () => EPERM;
    await comm.barrier();
    for (let i = 0; i < 3; i++) {
      if (comm.rank === 0) await comm.send(pattern(N, i), 1, i);
      else if (comm.rank === 1) { const b = new Uint8Array(N); await comm.recv(b, 0, i); assert.ok(samePattern(b, N, i), `message ${i}`); }
    }
    if (comm.rank === 0) assert.deepEqual([state(1).tx, state(1).tries], ['BAD', 1]);
    if (comm.rank === 1) { assert.equal(state(0).rx, 'BAD'); assert.equal(comm.stats().protocol.rgetMsgs, 0); }
  }],
  ['the sender may not write: its half goes through the ring, the receiver still reads the rest', async () => {
    // Rank 2 reads rank 0 (split copy), but rank 0 cannot write into rank 2.
    if (comm.rank === 0) lane(2).ipc.write = () => EPERM;
    await comm.barrier();
    for (let i = 0; i < 3; i++) {
      if (comm.rank === 0) await comm.send(pattern(N, 10 + i), 2, i);
      else if (comm.rank === 2) { const b = new Uint8Array(N); await comm.recv(b, 0, i); assert.ok(samePattern(b, N, 10 + i), `message ${i}`); }
    }
    if (comm.rank === 2) assert.ok(comm.stats().protocol.rgetMsgs >= 1, 'split transfers happened');
  }],
]);
await comm.finalize();
process.exit(failed > 0 ? 1 : 0);
