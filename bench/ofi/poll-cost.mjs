// What one look at the ofi rail's completion queue costs: rank 0 calls the
// binding's poll on its endpoint 2,000,000 times in a loop, 5 rounds, and
// prints ns per call (with nothing arriving). Rank 1 sends nothing meanwhile
// (the loop bypasses the rail, so a frame it read would be lost): it waits for
// rank 0's message after the loop.
//   RAILCOMM_OFI_PROVIDERS='udp;ofi_rxd' node dist/cli/main.js run -n 2 --rails ofi,self bench/ofi/poll-cost.mjs
import { init } from '../../dist/index.js';

const comm = await init();
await comm.barrier();
const go = new Uint8Array(8);
if (comm.rank === 0) {
  const rail = comm.world.ctx.endpointFor(1).lane.rail;
  const b = rail.b, h = rail.h, N = 2_000_000;
  const ns = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) b.poll(h, 1);
    ns.push(+(((performance.now() - t0) * 1e6) / N).toFixed(1));
  }
  console.log(JSON.stringify({ benchmark: 'ofi-poll-cost', provider: rail.provider, nsPerPoll: ns }));
  await comm.send(go, 1, 9);
} else {
  await comm.recv(go, 0, 9);
}
await comm.barrier();
await comm.finalize();
