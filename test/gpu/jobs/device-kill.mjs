// GPU job, 3 processes: rank 2 is killed (SIGKILL) in the middle of a large
// device message it streams to rank 0 (it offers no IPC, so the data goes in
// pinned chunks through the ring): rank 0's receive fails with ERR_PEER_FAILED
// within seconds, and rank 1 and rank 0 still exchange device arrays (by IPC).

import { init, cuda } from '../../../dist/index.js';

process.on('SIGTERM', () => {});
const rank = Number(process.env.RAILCOMM_RANK);
const comm = await init({ params: { cudaIpc: rank !== 2 } });
await comm.barrier();
const BIG = Number(process.env.RAILCOMM_GPU_KILL_BYTES ?? 256 << 20);
if (rank === 2) {
  const d = cuda.alloc(BIG);
  const req = comm.isend(d, 0, 1);
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
  const d = cuda.alloc(BIG);
  try {
    await comm.recv(d, 2, 1);
    console.log('RESULT recv from killed rank: resolved (wrong)');
  } catch (e) {
    console.log(`RESULT recv from killed rank: ${e.code}`);
  }
  console.log(`ELAPSED ${Date.now() - t0}`);
  const m = cuda.alloc(16 << 20);
  await comm.recv(m, 1, 2);
  await comm.recv(m, 1, 3);
  const h = m.download();
  const s = comm.stats().cuda;
  console.log(`RESULT survivors: ${h[12345] === 45 && h[(16 << 20) - 1] === 45 ? 'ok' : 'bad'} deviceRecvs ${s.deviceRecvs}`);
} else if (rank === 1) {
  const m = cuda.alloc(16 << 20).fill(45);
  await comm.send(m, 0, 2); // asks rank 0 about IPC (staged this time)
  await comm.send(m, 0, 3); // by IPC
}
process.exit(0);
