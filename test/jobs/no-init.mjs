// Rank 1 exits (code 0) without calling init() while the others wait for it
// there: the launcher must fail the job at once, naming rank 1, instead of
// leaving them in init() until --timeout.
import { init } from '../../dist/index.js';

if (process.env.RAILCOMM_RANK !== '1') {
  const comm = await init();
  await comm.barrier();
  await comm.finalize();
}
