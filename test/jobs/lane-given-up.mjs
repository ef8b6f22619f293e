// Two ranks with a tcp and a udp lane between them; rank 0 gives up on the
// udp lane (its heartbeat answers are dropped by $LANE_CUT while tcp
// answers) and closes it, which rank 1 sees as a graceful close of that one
// lane. Rank 1 must move to the tcp lane, not take it for rank 0 having
// finalized (it has not: a large message is still on its way). Rank 0 has
// the short lane timeout (LANE_TIMEOUT_0), rank 1 a long one, so that only
// rank 0 gives up.
import { execSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

const rank = process.env.RAILCOMM_RANK;
process.env.RAILCOMM_LANE_TIMEOUT = rank === '0' ? process.env.LANE_TIMEOUT_0 : '60000';
const { init } = await import('../../dist/index.js');
const comm = await init();
const peer = 1 - comm.rank;
const big = new Uint8Array(1 << 20);
const small = new Uint8Array(8);
const lanes = () => comm.stats().peers[String(peer)]?.lanes ?? {};

/** Wait (at most 15 s) until this rank's udp lane to the peer has failed once. */
async function udpFailed() {
  const until = Date.now() + 15_000;
  for (;;) {
    const udp = Object.entries(lanes()).find(([name]) => name.startsWith('udp'))?.[1];
    if ((udp?.failures ?? 0) > 0) return true;
    if (Date.now() > until) return false;
    await sleep(50);
  }
}

let result = 'ok';
try {
  // Both lanes connect: a rendezvous send waits 800 ms for its receive, with heartbeats on both.
  if (comm.rank === 0) await comm.send(big, 1, 0);
  else { await sleep(800); await comm.recv(big, 0, 0); }
  await comm.sendrecv(small, peer, 1, small, peer, 1);
  await sleep(200);
  if (comm.rank === 0) {
    execSync(process.env.LANE_CUT);
    big.fill(7);
    const sent = comm.send(big, 1, 2); // outstanding: heartbeats go on
    if (!(await udpFailed())) result = 'the udp lane was never given up on';
    await sleep(300);
    execSync(process.env.LANE_HEAL);
    await sent;
  } else {
    if (!(await udpFailed())) result = 'the peer closing the udp lane was not seen';
    await comm.recv(big, 0, 2);
    if (big.some((b) => b !== 7)) result = 'wrong bytes';
  }
  await comm.sendrecv(small, peer, 3, small, peer, 3);
} catch (e) {
  result = `${e.code}: ${e.message}`;
}
console.log(`RESULT ${result}`);
console.log(`LANES ${JSON.stringify(lanes())}`);
await comm.barrier();
await comm.finalize();
