// Rank 0 waits for a message nobody sends. With RAILCOMM_HANG_TIMEOUT set it
// must say what it waits for; the launcher's --timeout then ends the job.
import { init } from '../../dist/index.js';

const comm = await init();
if (comm.rank === 0) {
  await comm.send(new Uint8Array(300000), 1, 8).catch(() => {});
} else {
  await comm.recv(new Uint8Array(4), 0, 99);
}
