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
    // The receive is posted first (receiveSmall runs to its await at once),
    // then rank 1 hears it may send: no timing assumed. A pause let a loaded
    // machine deliver the message first; so did sending the go message first,
    // since a send may progress the rails and queue what rank 1 sent at once.
    const posted = receiveSmall(size, tag);
    const go = comm.send(new Uint8Array(1), 1, 100 + tag);
    try {
      await posted;
      console.log(`RESULT ${tag} no error`);
    } catch (e) {
      console.log(`RESULT ${tag} ${e.code} ${JSON.stringify(e.stack)}`);
    }
    await go;
  }
  await comm.send(new Uint8Array(1), 1, 9);
} else if (comm.rank === 1) {
  // The message finds rank 0's receive posted and fails it.
  await comm.recv(new Uint8Array(1), 0, 101);
  await comm.send(new Uint8Array(64), 0, 1);
  await comm.recv(new Uint8Array(1), 0, 102);
  await comm.send(new Uint8Array(300_000), 0, 2).catch(() => undefined);
  await comm.recv(new Uint8Array(1), 0, 9);
}
await comm.finalize();
