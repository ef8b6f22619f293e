// A rank's resident memory after 50 round trips of 100 KB over the ofi rail
// (bench/ofi/rxm-survivor.mjs runs it under railcomm run): prints `RSS <MB> MB`.
import { readFileSync } from 'node:fs';
import { init } from '../../dist/index.js';

const comm = await init();
const b = new Uint8Array(100000);
for (let i = 0; i < 50; i++) {
  if (comm.rank === 0) { await comm.send(b, 1, 1); await comm.recv(b, 1, 2); } else { await comm.recv(b, 0, 1); await comm.send(b, 0, 2); }
}
const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
console.log(`RSS ${Math.round(kb / 1000)} MB`);
await comm.finalize();
