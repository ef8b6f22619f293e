// Single copy refused by the kernel, in a real job: rank 1 runs in a user
// namespace of its own (railcomm run ... sh -c 'exec unshare --user
// --map-root-user node ...' for rank 1; see shm.test.mjs), so
// process_vm_readv/writev from it into ranks 0 and 2 fail with EPERM (it
// holds no CAP_SYS_PTRACE over their namespace), while they may still read
// and write it (they own its namespace). Hence:
//  - rank 0 -> 1: rank 1 may not read rank 0: the sender gives up after one
//    answer and the ring carries everything;
//  - rank 1 -> 2: rank 2 reads rank 1, but rank 1 may not read (nor write)
//    rank 2, so no split copy: rank 2 reads each message whole;
//  - rank 0 -> 2 (one namespace): split single copy, rank 0 writes its halves.
// Read and write permission are one kernel check (ptrace attach), so a
// sender that may read its receiver but not write it cannot be made for real:
// the last case simulates that refusal (a patched lane) for the ring fallback.
// Data arrives intact each time and nothing hangs.
//   railcomm run -n 3 -- sh -c '[ "$RAILCOMM_RANK" = 1 ] && exec unshare --user --map-root-user "$@"; exec "$@"' sh node test/jobs/shm-fallback.mjs

import { readlinkSync } from 'node:fs';
import { init } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern } from './harness.mjs';

const comm = await init();
const N = 1 << 20;
const state = (peer) => comm.stats().singleCopy[String(peer)];
const ringBytes = () => comm.stats().rails.shm.bytesSent;
const rgets = () => comm.stats().protocol.rgetMsgs;
console.log(`USERNS ${readlinkSync('/proc/self/ns/user')}`);

/** `from` sends 3 messages of N bytes to `to`; resolves with the ring bytes the sender sent meanwhile. */
async function transfer(from, to, seed) {
  await comm.barrier();
  const b0 = ringBytes();
  for (let i = 0; i < 3; i++) {
    if (comm.rank === from) await comm.send(pattern(N, seed + i), to, i);
    else if (comm.rank === to) { const b = new Uint8Array(N); await comm.recv(b, from, i); assert.ok(samePattern(b, N, seed + i), `message ${i}`); }
  }
  await comm.barrier();
  return ringBytes() - b0;
}

const failed = await runCases(comm, [
  ['refused (EPERM): rank 1 may not read rank 0, which gives up after one answer; the ring carries everything', async () => {
    const r0 = rgets();
    const ring = await transfer(0, 1, 0);
    if (comm.rank === 0) {
      assert.deepEqual([state(1).tx, state(1).tries], ['BAD', 1]);
      assert.ok(ring >= 3 * N, `the ring carried ${ring} B of 3 MiB`);
    }
    if (comm.rank === 1) { assert.equal(state(0).rx, 'BAD'); assert.equal(rgets() - r0, 0, 'no single-copy read'); }
  }],
  ['refused one way: rank 2 reads rank 1 whole (rank 1 may not read it back, so no split)', async () => {
    const r0 = rgets();
    const ring = await transfer(1, 2, 10);
    if (comm.rank === 2) {
      assert.ok(rgets() - r0 >= 2, 'rank 2 read rank 1 directly after the first message');
      assert.equal(state(1).tx, 'BAD', 'rank 1 answered that it cannot read rank 2');
    }
    if (comm.rank === 1) {
      assert.deepEqual([state(2).tx, state(2).rx], ['OK', 'BAD']);
      assert.ok(ring < N + N / 2, `the ring carried ${ring} B: only the first message`);
    }
  }],
  ['allowed (one namespace): rank 0 -> 2 is copied once, rank 0 writing its halves', async () => {
    const r0 = rgets();
    const ring = await transfer(0, 2, 20);
    if (comm.rank === 2) assert.ok(rgets() - r0 >= 2, 'rank 2 read rank 0 directly');
    if (comm.rank === 0) assert.ok(ring < N + N / 2, `the ring carried ${ring} B: rank 0 wrote its halves directly`);
  }],
  ['simulated: a sender that may read but not write its receiver streams its half through the ring', async () => {
    if (comm.rank === 0) comm.world.ctx.endpointFor(2).lane.ipc.write = () => -1; // EPERM
    const r0 = rgets();
    const ring = await transfer(0, 2, 30);
    if (comm.rank === 2) assert.ok(rgets() - r0 >= 3, 'rank 2 still read its halves directly');
    if (comm.rank === 0) assert.ok(ring >= 3 * (N / 2), `the ring carried ${ring} B: rank 0's halves`);
  }],
]);
await comm.finalize();
process.exit(failed > 0 ? 1 : 0);
