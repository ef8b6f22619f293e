// A rank is killed (SIGKILL) in the middle of a large transfer over shm: the
// receiver's request fails with ERR_PEER_FAILED within seconds, survivors
// still talk (single copy included), and the job leaves nothing in /dev/shm.
//   RAILCOMM_RAILS=shm,self railcomm run -n 3 test/jobs/shm-kill.mjs

import { init } from '../../dist/index.js';
import { shmJobPrefix } from '../../dist/native/addon.js';

process.on('SIGTERM', () => {});
const rank = Number(process.env.RAILCOMM_RANK);
// The dying sender streams through the ring (it never offers single copy), so it dies mid-stream.
const comm = await init({ params: { shmSingleCopy: rank !== 2 } });
if (rank === 0) console.log(`SHMPREFIX ${shmJobPrefix(Number(process.env.RAILCOMM_JOB_ID), process.env.RAILCOMM_JOB_KEY)}`);
await comm.barrier();
const BIG = 256 << 20;
if (rank === 2) {
  const b = new Uint8Array(BIG);
  const req = comm.isend(b, 0, 1);
  // Killed once 8 MiB of it went through the ring: mid-stream whatever the
  // speed (a 5 ms timer fired after the whole 256 MiB had gone on a fast run).
  // The check runs between event-loop turns, which progress yields every
  // millisecond or so while it streams.
  const sent = () => comm.stats().rails.shm?.bytesSent ?? 0;
  const before = sent();
  const watch = () => { if (sent() - before >= 8 << 20) process.kill(process.pid, 'SIGKILL'); else setImmediate(watch); };
  setImmediate(watch);
  await req.wait();
  console.log('RESULT sender finished before it was killed');
  await new Promise((r) => setTimeout(r, 60_000));
}
const t0 = Date.now();
if (rank === 0) {
  try {
    await comm.recv(new Uint8Array(BIG), 2, 1);
    console.log('RESULT recv from killed rank: resolved (wrong)');
  } catch (e) {
    console.log(`RESULT recv from killed rank: ${e.code}`);
  }
  console.log(`ELAPSED ${Date.now() - t0}`);
  const m = new Uint8Array(16 << 20);
  await comm.recv(m, 1, 2);
  await comm.recv(m, 1, 3);
  console.log(`RESULT survivors large: ${m[12345] === 45 ? 'ok' : 'bad'} rget ${comm.stats().protocol.rgetMsgs}`);
} else if (rank === 1) {
  const m = new Uint8Array(16 << 20).fill(45);
  await comm.send(m, 0, 2); // asks for single copy (ring path this time)
  await comm.send(m, 0, 3); // read directly by rank 0
}
process.exit(0);
