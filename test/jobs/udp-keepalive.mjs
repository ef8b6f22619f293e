// udp keepalive (RAILCOMM_UDP_PEER_TIMEOUT=2): a peer this rank does not wait
// on may compute without its event loop for longer than the timeout; a peer
// it waits on that is idle in its event loop answers the probes; a peer it
// waits on that stopped (SIGSTOP: not dead to the launcher) fails the waiting
// receive with ERR_PEER_FAILED within about the timeout.
//   RAILCOMM_UDP_PEER_TIMEOUT=2 railcomm run -n 2 --rails udp test/jobs/udp-keepalive.mjs
import { init } from '../../dist/index.js';

const comm = await init();
const peer = 1 - comm.rank;
const pid = new Int32Array([process.pid]);
const other = new Int32Array(1);
await comm.send(pid, peer, 1);
await comm.recv(other, peer, 1);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A: rank 1 computes 3 s without its event loop; rank 0 waits on nothing
// meanwhile, and has nothing in flight either (a round trip, then rank 1
// stays in its loop a moment so that rank 0's ACK of the reply arrives).
if (comm.rank === 0) { await comm.send(new Uint8Array(4), peer, 5); await comm.recv(new Uint8Array(4), peer, 5); }
else { await comm.recv(new Uint8Array(4), peer, 5); await comm.send(new Uint8Array(4), peer, 5); await sleep(100); }
if (comm.rank === 1) { const t = Date.now() + 3000; while (Date.now() < t) { /* compute */ } }
else await sleep(3500);
await comm.send(new Uint8Array(4), peer, 2);
await comm.recv(new Uint8Array(4), peer, 2);
console.log('RESULT computing peer nobody waits on: alive');

// B: rank 0 waits 3 s on rank 1, which idles in its event loop and answers probes.
if (comm.rank === 1) { await sleep(3000); await comm.send(new Uint8Array(4), peer, 3); }
else {
  await comm.recv(new Uint8Array(4), peer, 3);
  console.log(`RESULT idle peer waited on: alive, probes sent ${comm.stats().rails['udp:lo']?.probesSent ?? '?'}`);
}

// C: rank 1 stops with nothing of rank 0's in flight (as in A); rank 0's
// receive from it fails through the keepalive alone.
if (comm.rank === 0) { await comm.send(new Uint8Array(4), peer, 6); await comm.recv(new Uint8Array(4), peer, 6); }
else { await comm.recv(new Uint8Array(4), peer, 6); await comm.send(new Uint8Array(4), peer, 6); await sleep(100); }
if (comm.rank === 1) { process.kill(process.pid, 'SIGSTOP'); await sleep(60_000); }
const t0 = Date.now();
try {
  await comm.recv(new Uint8Array(4), peer, 4);
  console.log('RESULT stopped peer: resolved (wrong)');
} catch (e) {
  console.log(`RESULT stopped peer: ${e.code}${/keepalive probes went unanswered/.test(e.message) ? ' (keepalive)' : ''}`);
  console.log(`ELAPSED ${Date.now() - t0}`);
}
// Rank 0 ends the stopped rank 1 and waits until the launcher has reaped it, so
// the job's exit code is rank 1's (137), not a race with rank 0's own exit.
process.kill(other[0], 'SIGKILL');
for (let t = Date.now(); Date.now() - t < 5000; await sleep(20)) {
  try { process.kill(other[0], 0); } catch { break; }
}
process.exit(0);
