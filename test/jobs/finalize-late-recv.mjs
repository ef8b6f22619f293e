// A message sent just before its sender finalized is received later by a rank
// that slept in a timer meanwhile (nothing outstanding, so nothing read its
// rails): finalize() delivers what a completed send handed over. Rank 0
// prints `RESULT got <bytes> bytes, tag <tag>` or `RESULT <code>`.
import { init } from '../../dist/index.js';

const comm = await init();
if (comm.rank === 1) {
  await comm.send(new Uint8Array([42]), 0, 7);
} else if (comm.rank === 0) {
  // Longer than the sender's finalize waits for its peers (2 s).
  await new Promise((r) => setTimeout(r, 2600));
  const b = new Uint8Array(1);
  try {
    const st = await comm.recv(b, 1, 7);
    console.log(`RESULT got ${st.bytes} bytes, tag ${st.tag}, value ${b[0]}`);
  } catch (e) {
    console.log(`RESULT ${e.code} ${e.message}`);
  }
}
await comm.finalize();
