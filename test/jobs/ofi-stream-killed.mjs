// A sender SIGKILLed mid-stream (ofi-survivor.test.mjs): rank 1 streams
// MSG_BYTES messages to rank 0, two at a time, and kills itself KILL_MS in;
// rank 0 receives until it gets ERR_PEER_FAILED, finalizes and prints
// "RESULT <code>". With RAILCOMM_RDMA_RGET_MIN=0 the data moves in DATA
// frames of up to a receive slot, more than rank 0 keeps receives posted for.
import { init } from '../../dist/index.js';

const BYTES = Number(process.env.MSG_BYTES ?? 16 << 20);
const comm = await init();
const bufs = [new Uint8Array(BYTES), new Uint8Array(BYTES)];
await Promise.all([comm.send(new Uint8Array(8), 1 - comm.rank, 9), comm.recv(new Uint8Array(8), 1 - comm.rank, 9)]);
if (comm.rank === 1) {
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), Number(process.env.KILL_MS ?? 500));
  const src = new Uint8Array(BYTES).fill(1);
  await Promise.all(bufs.map(async () => { for (;;) await comm.send(src, 0, 1); }));
} else {
  let code = 'none';
  try {
    await Promise.all(bufs.map(async (b) => { for (;;) await comm.recv(b, 1, 1); }));
  } catch (e) { code = e.code; }
  await comm.finalize();
  console.log(`RESULT ${code}`);
}
