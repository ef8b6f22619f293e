// Rank 0 finalizes at once, having exchanged nothing with anyone: a receive
// (and a probe) from it at the other ranks fails with ERR_PEER_FAILED once
// the wire-up service says rank 0 finalized and no BYE followed (no
// connection, so none can come), instead of waiting for ever. Each other rank
// prints `RESULT <code> <code> <ms>`; they then still talk among themselves.
import { init } from '../../dist/index.js';

const comm = await init();
if (comm.rank === 0) {
  await comm.finalize();
  process.exit(0);
}
const t0 = Date.now();
const code = (p) => p.then(() => 'received', (e) => `${e.code}${/called finalize\(\) without sending/.test(e.message) ? '' : `(${e.message})`}`);
const [a, b] = await Promise.all([code(comm.recv(new Uint8Array(4), 0, 5)), code(comm.probe(0, 6))]);
console.log(`RESULT ${a} ${b} ${Date.now() - t0}`);
if (comm.size > 2) {
  const peer = comm.rank === 1 ? 2 : 1;
  if (comm.rank <= 2) {
    const got = new Int32Array(1);
    await comm.sendrecv(new Int32Array([comm.rank]), peer, 1, got, peer, 1);
    if (got[0] !== peer) throw new Error(`rank ${comm.rank} got ${got[0]} from ${peer}`);
  }
}
await comm.finalize();
