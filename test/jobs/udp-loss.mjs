// Two ranks exchange messages of every size class both ways (short, eager,
// rendezvous) and check every byte; then each prints its udp rail counters as
// `UDPSTATS {json}`. Used with real packet loss (nftables) and by the soak bench.
//   MESSAGES=N (default 400)

import { init } from 'railcomm';
import { pattern, samePattern } from './harness.mjs';

const comm = await init();
const N = Number(process.env.MESSAGES ?? 400);
const SIZES = [0, 8, 500, 1400, 9000, 40000, 70000, 300000, 1100000];
const peer = 1 - comm.rank;
let bad = 0;
const recvs = [];
const sends = [];
// Both directions at once, a window of messages in flight.
for (let i = 0; i < N; i++) {
  const n = SIZES[i % SIZES.length];
  const buf = new Uint8Array(n);
  recvs.push(comm.irecv(buf, peer, i % 7).wait().then(() => { if (!samePattern(buf, n, i + peer * 1000)) bad++; }));
  sends.push(comm.isend(pattern(n, i + comm.rank * 1000), peer, i % 7).wait());
  if (sends.length >= 32) { await Promise.all(sends); sends.length = 0; }
}
await Promise.all([...sends, ...recvs]);
const stats = comm.stats();
const udp = Object.entries(stats.rails).find(([k]) => k.startsWith('udp'))?.[1] ?? null;
console.log(`RESULT ${bad === 0 ? 'ok' : `${bad} messages with wrong bytes`} ${N}`);
console.log(`UDPSTATS ${JSON.stringify(udp)}`);
await comm.finalize();
