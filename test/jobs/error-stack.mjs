// Errors found after the call (issue 19, point 4): rank 0 posts receives too
// small for what rank 1 sends later (eager, then rendezvous), so the
// truncation is found in a rail's callback; each error must still carry a
// stack naming the program's await (the line marked below). Prints
// RESULT <tag> <code> <stack as JSON>.
import { init } from '../../dist/index.js';

const comm = await init();

async function receiveSmall(bytes, tag) {
  await comm.recv(new Uint8Array(bytes), 1, tag); // the line the stack must name
}

if (comm.rank === 0) {
  for (const [tag, size] of [[1, 4], [2, 1000]]) {
    try {
      await receiveSmall(size, tag);
      console.log(`RESULT ${tag} no error`);
    } catch (e) {
      console.log(`RESULT ${tag} ${e.code} ${JSON.stringify(e.stack)}`);
    }
  }
  await comm.send(new Uint8Array(1), 1, 9);
} else if (comm.rank === 1) {
  const pause = () => new Promise((r) => setTimeout(r, 100));
  // Rank 0 has posted its receive by then: the message finds it and fails it.
  await pause();
  await comm.send(new Uint8Array(64), 0, 1);
  await pause();
  await comm.send(new Uint8Array(300_000), 0, 2).catch(() => undefined);
  await comm.recv(new Uint8Array(1), 0, 9);
}
await comm.finalize();
