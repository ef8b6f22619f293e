// Scalable endpoints (ofi, sockets): a thread rank dies while a rank of the
// other process is sending to it. Its receive context is gone, but the
// connection between the two processes' endpoints carries its neighbours'
// traffic too: what was sent to the dead rank must not stall it. Run as
// 2 processes of 2 thread ranks (-n 4 --threads-per-process 2): rank 2 dies,
// rank 0 sends to it, then ranks 0 and 3 (the dead rank's neighbour) ping-pong;
// rank 3 then waits to be terminated. Prints RESULT lines and PINGPONG <ms>.
import { init } from '../../dist/index.js';

process.on('SIGTERM', () => {});
const comm = await init();
const { rank } = comm;
// Every pair exchanges a message first: the processes' connections exist.
const out = new Int32Array(comm.size).fill(rank), back = new Int32Array(comm.size);
await comm.alltoall(out, back);
// Rank 2 dies only once every rank has finished the exchange: a loaded machine
// could leave rank 1's part unfinished (a completion not yet read) when rank 2's
// death fails what still waits on it.
if (rank === 1 || rank === 3) await comm.send(new Uint8Array(1), 0, 7);
if (rank === 0) for (const from of [1, 3]) await comm.recv(new Uint8Array(1), from, 7);
if (rank === 2) {
  await comm.recv(new Uint8Array(1), 0, 1);
  process.exit(3);
}
if (rank === 0) {
  await comm.send(new Uint8Array(1), 2, 1);
  await new Promise((r) => setTimeout(r, 200));
  // Frames to the dead rank's context: each goes, or fails once its death is known.
  for (let i = 0; i < 20; i++) await comm.send(new Uint8Array(64), 2, 2).catch(() => undefined);
}
if (rank === 0 || rank === 3) {
  const t0 = Date.now();
  const b = new Int32Array(1);
  for (let i = 0; i < 50; i++) {
    if (rank === 0) { b[0] = i; await comm.send(b, 3, 3); await comm.recv(b, 3, 4); if (b[0] !== i + 1) throw new Error(`got ${b[0]}`); }
    else { await comm.recv(b, 0, 3); b[0]++; await comm.send(b, 0, 4); }
  }
  console.log(`PINGPONG ${Date.now() - t0}`);
  console.log('RESULT neighbour ok');
}
// The dead rank's neighbour stays until its thread host terminates it (3 s after
// rank 2 died): its endpoint is closed by the environment's cleanup, no finalize,
// no exit handler (an open libuv handle there aborted the whole process).
if (rank === 3) await new Promise((r) => setTimeout(r, 30_000));
await comm.finalize().catch(() => undefined);
process.exit(0);
