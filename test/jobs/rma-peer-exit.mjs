// A one-sided target that dies: the origin's outstanding and later operations
// on it fail with ERR_PEER_FAILED, and a lock queued behind the dead holder
// is granted (the dead rank's lock is released). Run with 3 ranks.

import { init, ErrorCode } from '../../dist/index.js';
import { assert, rejectsWith, throwsWith } from './harness.mjs';

// Survivors stay to report even though the launcher stops the job.
process.on('SIGTERM', () => {});
const comm = await init();
const w = await comm.allocWindow(1 << 20);
if (comm.rank === 1) {
  // Hold rank 2's lock, then die without unlocking.
  await w.lock(2, 'exclusive');
  await comm.send(new Uint8Array(1), 0, 1);
  await comm.recv(new Uint8Array(1), 0, 1); // rank 0 holds our lock now
  // Busy (serving nothing) while rank 0's next operations arrive, then die.
  const until = Date.now() + 500;
  while (Date.now() < until) { /* compute */ }
  process.exit(3);
}
if (comm.rank === 0) {
  await comm.recv(new Uint8Array(1), 1, 1);
  await w.lock(1, 'shared');
  await comm.send(new Uint8Array(1), 1, 1);
  await new Promise((r) => setTimeout(r, 100));
  let e;
  if (process.env.RMA_DIRECT === '1') {
    // Rank 1's window is mapped here: nothing is in flight. Once rank 1 is
    // known dead, operations on it fail even though its memory is still mapped.
    await rejectsWith(() => comm.recv(new Uint8Array(1), 1, 5), ErrorCode.PEER_FAILED);
    e = await rejectsWith(() => w.get(new Uint8Array(1 << 20), 1, 0), ErrorCode.PEER_FAILED);
  } else {
    // Rank 1 is busy and dies before answering: the get in flight fails, it does not hang.
    e = await rejectsWith(() => w.get(new Uint8Array(1 << 20), 1, 0), ErrorCode.PEER_FAILED);
  }
  await rejectsWith(() => w.put(new Uint8Array(1 << 20), 1, 0), ErrorCode.PEER_FAILED);
  // Not awaited (MPI_Put's shape): the flush reports the failure, and the
  // operations' own rejections do not end the process as unhandled.
  void w.put(new Uint8Array(8), 1, 0);
  void w.get(new Uint8Array(8), 1, 0);
  void w.accumulate(new Int32Array(2), 1, 0, 'sum');
  throwsWith(() => w.testFlush(1), ErrorCode.PEER_FAILED);
  await rejectsWith(() => w.flush(1), ErrorCode.PEER_FAILED);
  // Another operation not awaited: a flush of every rank reports it.
  void w.put(new Uint8Array(8), 1, 0);
  await rejectsWith(() => w.flushAll(), ErrorCode.PEER_FAILED);
  await new Promise((r) => setTimeout(r, 20));
  await rejectsWith(() => w.fetchAndOp(1, 1, 0, 'sum', 'i32'), ErrorCode.PEER_FAILED);
  await rejectsWith(() => w.accumulate(new Int32Array(1), 1, 0, 'sum'), ErrorCode.PEER_FAILED);
  // Queued behind rank 1's exclusive lock; granted once rank 2 learns rank 1 died.
  await w.lock(2, 'exclusive');
  await w.put(new Uint8Array([9]), 2, 0);
  await w.unlock(2);
  await rejectsWith(() => w.unlock(1), ErrorCode.PEER_FAILED);
  console.log(`RESULT ok ${e.code}`);
  await comm.send(new Uint8Array(1), 2, 2);
}
if (comm.rank === 2) {
  await comm.recv(new Uint8Array(1), 0, 2);
  assert.equal(w.buffer[0], 9);
  // This rank never targeted rank 1: a flush of every rank, rank 1's too, has nothing to report.
  await w.flushAll();
  console.log('RESULT ok target');
}
await comm.finalize();
