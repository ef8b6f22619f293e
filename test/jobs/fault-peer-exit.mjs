// A rank dies mid-job without finalize. The survivors' requests that involve
// it fail with ERR_PEER_FAILED within seconds; traffic among survivors works.
//   railcomm run -n 3 test/jobs/fault-peer-exit.mjs  (exits with rank 2's code, 3)

import { init, ANY_SOURCE } from '../../dist/index.js';
import assert from 'node:assert/strict';

// Survivors stay to report even though the launcher stops the job.
process.on('SIGTERM', () => {});
const comm = await init();
const { rank } = comm;
await comm.barrier();

// Rank 2 dies only once everything it sent has arrived (a dying process loses
// what is still in flight, by design): both survivors acknowledge.
if (rank === 2) {
  await comm.recv(new Uint8Array(1), 1, 9);
  await comm.send(new Uint8Array(8), 0, 1);
  await comm.recv(new Uint8Array(1), 0, 9);
  process.exit(3);
}
if (rank === 1) await comm.send(new Uint8Array(1), 2, 9);

const t0 = Date.now();
const results = [];
const expectFail = async (what, p) => {
  try { await p; results.push(`${what}: resolved (wrong)`); }
  catch (e) { results.push(`${what}: ${e.code}`); }
};
if (rank === 0) {
  await comm.recv(new Uint8Array(8), 2, 1);
  await comm.send(new Uint8Array(1), 2, 9);
  await Promise.all([
    expectFail('recv from dead rank', comm.recv(new Uint8Array(8), 2, 2)),
    expectFail('ANY_SOURCE recv', comm.recv(new Uint8Array(8), ANY_SOURCE, 3)),
    expectFail('rendezvous send to dead rank', comm.send(new Uint8Array(1 << 20), 2, 4)),
  ]);
  await expectFail('send after failure', comm.send(new Uint8Array(8), 2, 5));
  // Survivors still talk.
  await comm.send(new Int32Array([7]), 1, 6);
  const v = new Int32Array(1);
  await comm.recv(v, 1, 7);
  assert.equal(v[0], 8);
  results.push('survivors talk: ok');
} else {
  const v = new Int32Array(1);
  await comm.recv(v, 0, 6);
  await comm.send(new Int32Array([8]), 0, 7);
  await expectFail('recv from dead rank', comm.recv(new Uint8Array(8), 2, 2));
}
for (const r of results) console.log(`RESULT ${r}`);
console.log(`ELAPSED ${Date.now() - t0}`);
// Survivors finalize (a dead peer does not stop that): a survivor that left
// without it would count as a failure of its own (exit code 1) whenever the
// launcher heard of it before it heard of rank 2's death, as it can across hosts.
await comm.finalize();
process.exit(0);
