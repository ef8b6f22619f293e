// Figures for jobs that meet (not a test: prints numbers). Run one rank per
// job on a 2-core machine: two jobs of 2 spinning ranks each oversubscribe it.
//   railcomm run -n N inter-bench.mjs accept FILE [ROUNDS]   and   railcomm run -n N inter-bench.mjs connect FILE [ROUNDS]
//     ROUNDS connect/disconnect cycles (time of each connect at the connecting root, once the
//     accepting side waits), then 8 B half round trip and 1 MiB bandwidth between the roots.
//   railcomm run -n 2 inter-bench.mjs within: the same two figures between ranks 0 and 1 of one job.
// Prints `BENCH name median min max` lines at rank 0.

import { readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { init } from '../../dist/index.js';

const [role, file, roundsText = '5'] = process.argv.slice(2);
const comm = await init();
const rounds = Number(roundsText);

const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const say = (name, xs, unit) => { if (comm.rank === 0) console.log(`BENCH ${name} median ${med(xs).toFixed(2)} min ${Math.min(...xs).toFixed(2)} max ${Math.max(...xs).toFixed(2)} ${unit} (${xs.length} samples)`); };

/** 8 B ping-pong and 1 MiB stream between `me` (first: true pings) and peer rank `other` of `c`. */
async function p2p(c, first, other) {
  const small = new Uint8Array(8);
  const lat = [];
  for (let rep = 0; rep < 7; rep++) {
    const iters = 2000;
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) {
      if (first) { await c.send(small, other, 1); await c.recv(small, other, 1); } else { await c.recv(small, other, 1); await c.send(small, other, 1); }
    }
    lat.push(((performance.now() - t0) * 1000) / iters / 2);
  }
  const big = new Uint8Array(1 << 20);
  const ack = new Uint8Array(1);
  const window = 16;
  // Receive buffers made (and touched) once: page faults are not the transport's cost.
  const bufs = Array.from({ length: window }, () => new Uint8Array(1 << 20).fill(1));
  const bw = [];
  // Rep 0 warms up (connections, rendezvous paths); reps 1-7 are timed.
  for (let rep = 0; rep < 8; rep++) {
    const t0 = performance.now();
    if (first) {
      await Promise.all(Array.from({ length: window }, () => c.send(big, other, 2)));
      await c.recv(ack, other, 3);
    } else {
      await Promise.all(bufs.map((b) => c.recv(b, other, 2)));
      await c.send(ack, other, 3);
    }
    if (rep > 0) bw.push((window * (1 << 20)) / ((performance.now() - t0) / 1000) / 1e9);
  }
  return { lat, bw };
}

if (role === 'within') {
  if (comm.rank < 2) {
    const { lat, bw } = await p2p(comm, comm.rank === 0, 1 - comm.rank);
    say('within-8B-half-rtt', lat, 'us');
    say('within-1MiB-bw', bw, 'GB/s');
  }
  await comm.finalize();
  process.exit(0);
}

const accepting = role === 'accept';
let port = '';
if (accepting && comm.rank === 0) {
  port = await comm.openPort();
  writeFileSync(`${file}.tmp`, port);
  renameSync(`${file}.tmp`, file);
} else if (!accepting && comm.rank === 0) {
  while (!existsSync(file)) await new Promise((r) => setTimeout(r, 20));
  port = readFileSync(file, 'utf8');
}
const times = [];
let inter = null;
for (let k = 0; k < rounds; k++) {
  if (accepting) {
    inter = await comm.accept(port, 0);
  } else {
    // The accepting job waits in accept by now (it goes there at once); time the connect itself.
    await new Promise((r) => setTimeout(r, 300));
    await comm.barrier();
    const t0 = performance.now();
    inter = await comm.connect(port, 0);
    times.push(performance.now() - t0);
  }
  if (k < rounds - 1) await inter.disconnect();
}
if (!accepting) say(`connect-${comm.size}x${inter.remoteSize}`, times, 'ms');
if (comm.rank === 0) {
  const { lat, bw } = await p2p(inter, accepting, 0);
  if (accepting) { say('inter-8B-half-rtt', lat, 'us'); say('inter-1MiB-bw', bw, 'GB/s'); }
}
await inter.disconnect();
if (accepting && comm.rank === 0) await comm.closePort(port);
await comm.finalize();
