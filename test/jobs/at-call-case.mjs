// A blocking receive from one source on shared memory waits for its message
// at the call for a moment before it posts a Request (ranks that do not
// outnumber the cores). This case checks that MPI matching holds either way:
// run by test/jobs/p2p-suite.mjs (4 ranks) and test/jobs/recv-at-call.mjs
// (2 ranks, where most receives below do wait at the call).

import { ANY_TAG } from '../../dist/index.js';
import { assert, pattern, samePattern, rejectsWith } from './harness.mjs';

export async function atCallCase(comm) {
  const { rank, size } = comm;
  // On shared memory a blocking recv from one source polls for its message
  // at the call for a moment before it posts a Request; an earlier posted
  // receive still takes the first message it matches, and whatever is not
  // for the call (another tag, too large, a rendezvous) is queued as usual.
  // Each round is short, so that most receives below wait at the call.
  if (size < 2) return;
  const go = new Uint8Array(1);
  const c = new Int32Array(1);
  for (let round = 0; round < 20; round++) {
    if (rank === 1) {
      await comm.recv(go, 0, 40);
      await comm.send(new Int32Array([1]), 0, 41);  // for the posted irecv (ANY_TAG), not the recv of tag 41
      await comm.send(new Int32Array([2]), 0, 41);  // for the recv of tag 41
      await comm.recv(go, 0, 40);
      await comm.send(new Int32Array([3]), 0, 43);  // another tag: queued while rank 0 waits for tag 42
      await comm.send(pattern(64, 5), 0, 42);       // too large for the 8-byte receive: truncation
      await comm.send(new Int32Array([4]), 0, 42);
      await comm.recv(go, 0, 40);
      if (round % 5 === 0) await comm.send(pattern(300000, 6), 0, 44); // rendezvous while rank 0 waits
      await comm.send(new Int32Array([7]), 0, 45);
    } else if (rank === 0) {
      const a = new Int32Array(1);
      const first = comm.irecv(a, 1, ANY_TAG);
      await comm.send(go, 1, 40);
      const b = new Int32Array(1);
      const st = await comm.recv(b, 1, 41);
      await first;
      assert.deepEqual([a[0], b[0], st.tag, st.bytes], [1, 2, 41, 4], 'the posted receive took the first message');
      await comm.send(go, 1, 40);
      await rejectsWith(comm.recv(new Uint8Array(8), 1, 42), 'ERR_TRUNCATE');
      assert.equal((await comm.recv(c, 1, 42)).bytes, 4);
      assert.equal(c[0], 4);
      assert.equal((await comm.recv(c, 1, 43)).tag, 43);
      assert.equal(c[0], 3);
      await comm.send(go, 1, 40);
      if (round % 5 === 0) {
        const big = new Uint8Array(300000);
        assert.equal((await comm.recv(big, 1, 44)).bytes, 300000);
        assert.ok(samePattern(big, 300000, 6));
      }
      assert.equal((await comm.recv(c, 1, ANY_TAG)).tag, 45);
      assert.equal(c[0], 7);
    }
  }
  // A match queued before the call that the call cannot take (a rendezvous,
  // a message too large for the buffer) goes first: a later small message for
  // the same receive must not overtake it while the receive waits at the call.
  for (let round = 0; round < 5; round++) {
    if (rank === 1) {
      const big = comm.isend(pattern(300000, 8), 0, 46);
      await comm.send(pattern(64, 9), 0, 48);
      await comm.send(go, 0, 47);          // rank 0 has the rendezvous and the 64 bytes queued once this is in
      await comm.recv(go, 0, 40);
      await comm.send(new Int32Array([10]), 0, 46);
      await comm.send(new Int32Array([11]), 0, 48);
      await big;
    } else if (rank === 0) {
      await comm.recv(go, 1, 47);
      await comm.send(go, 1, 40);
      const big = new Uint8Array(300000);
      const st = await comm.recv(big, 1, 46);
      assert.equal(st.bytes, 300000, 'the queued rendezvous first');
      assert.ok(samePattern(big, 300000, 8));
      await rejectsWith(comm.recv(new Uint8Array(8), 1, 48), 'ERR_TRUNCATE');
      assert.equal((await comm.recv(c, 1, 46)).bytes, 4);
      assert.equal(c[0], 10);
      assert.equal((await comm.recv(c, 1, 48)).bytes, 4);
      assert.equal(c[0], 11);
    }
  }
}
