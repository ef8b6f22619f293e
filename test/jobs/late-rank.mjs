// Every rank but rank 0 stays away from init() (for 20 s): rank 0's init()
// must fail within RAILCOMM_CONNECT_TIMEOUT and say why, never hang.
import { init } from '../../dist/index.js';

const rank = process.env.OMPI_COMM_WORLD_RANK ?? process.env.SLURM_PROCID ?? process.env.RANK;
if (rank !== '0') {
  await new Promise((r) => setTimeout(r, 20_000));
  process.exit(0);
}
const t0 = Date.now();
try {
  await init();
  console.log('LATE joined?!');
} catch (e) {
  console.log(`LATE rank 0 failed after ${Date.now() - t0} ms: ${e.code}: ${e.message}`);
  process.exit(3);
}
