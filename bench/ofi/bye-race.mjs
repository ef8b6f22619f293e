// A try at the race of a peer's BYE and the provider's completion of a send
// it received (src/rail/ofi/endpoint.ts peerClosed): rank 0 isends N messages
// of SIZE bytes to rank 1, which receives them and finalizes at once; rank 0
// exits 3 if a send failed. The conformance suite forces the race; this job
// only shows how rarely a real run hits it:
//   for i in $(seq 8); do N=64 SIZE=4194304 RAILCOMM_RDMA_RGET_MIN=0 RAILCOMM_OFI_PROVIDERS=sockets \
//     node dist/cli/main.js run -n 2 --rails ofi --timeout 80 bench/ofi/bye-race.mjs || echo failed; done
import * as rc from '../../dist/index.js';

const comm = await rc.init();
const N = Number(process.env.N ?? 16), SIZE = Number(process.env.SIZE ?? 1 << 20);
const buf = new Uint8Array(SIZE).fill(7);
if (comm.rank === 0) {
  const reqs = [];
  for (let i = 0; i < N; i++) reqs.push(comm.isend(buf, 1, i));
  try { await Promise.all(reqs); console.log('SENDS OK'); } catch (e) { console.log('SENDS FAILED', e.message); process.exitCode = 3; }
} else {
  const rb = new Uint8Array(SIZE);
  for (let i = 0; i < N; i++) await comm.recv(rb, 0, i);
}
await comm.finalize();
