// Where an 8-byte hop between two processes goes (issue 4's breakdown): the
// bare shm ring (railcomm's Ring over /dev/shm segments mapped by the addon,
// busy polling), the same with the async shape of a request (a promise and an
// await per receive and send), each timed per round trip (the clock read by
// one process only) and in batches of 100, and, run separately with the same iteration
// counts, railcomm's public send/recv (bench/pingpong-median.mjs):
//   flock /tmp/railcomm-bench.lock node bench/shm-breakdown.mjs [iterations]
// The remainder, public API minus the async shape, is matching, the protocol
// header, sequence checks and progress.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadNative, nativeWhy } from '../dist/native/addon.js';
import { Ring } from '../dist/rail/shared/ring.js';

const native = loadNative();
if (native === null) { console.error(`needs the native addon: ${nativeWhy()}`); process.exit(2); }
const child = process.argv[2] === '--child';
const iters = Number(child ? process.argv[3] : process.argv[2] ?? 200000);
const base = child ? process.argv[4] : `railcomm-${process.pid}-bd-`;

const hdr = new Uint8Array(8);
const payload = new Uint8Array(8);
let got = 0;
const visit = () => { got++; };
const open = (n) => (child ? native.shmOpen(base + n) : native.shmCreate(base + n, 128 + 65536));
const ab = new Ring(open('ab'));
const ba = new Ring(open('ba'));
const out = child ? ba : ab;
const inn = child ? ab : ba;

function hopSync() {
  while (!out.write(1, hdr, 8, payload)) { /* full */ }
  while (!inn.hasData()) { /* spin */ }
  inn.drain(visit);
}
function waitSync() {
  while (!inn.hasData()) { /* spin */ }
  inn.drain(visit);
  while (!out.write(1, hdr, 8, payload)) { /* full */ }
}
// The async shape: each receive and each send returns a promise that is awaited.
const status = { source: 0, tag: 0, bytes: 8 };
async function send() { while (!out.write(1, hdr, 8, payload)) { /* full */ } return status; }
async function recv() { while (!inn.hasData()) { /* spin */ } inn.drain(visit); return status; }

/**
 * n round trips, the clock read every `every` of them, and only in the parent
 * (a clock read costs 48 ns here: reads on both sides lengthened each round
 * trip). Returns the half round trips averaged per group (parent only).
 */
async function run(mode, n, every) {
  const t = child ? null : new Float64Array(Math.floor(n / every));
  for (let i = 0; i + every <= n; i += every) {
    const t0 = child ? 0 : performance.now();
    for (let k = 0; k < every; k++) {
      if (mode === 'sync') { if (child) waitSync(); else hopSync(); }
      else if (child) { await recv(); await send(); } else { await send(); await recv(); }
    }
    if (!child) t[i / every] = ((performance.now() - t0) * 500) / every;
  }
  return t;
}

/** Both processes run the same sequence: per mode a warm-up, then per-round-trip and batch timing. */
const BATCH = 100;
const res = {};
async function all() {
  for (const mode of ['sync', 'async']) {
    await run(mode, iters, 1); // warm-up
    const t = await run(mode, iters, 1);
    const b = await run(mode, iters, BATCH);
    if (child) continue;
    t.sort(); b.sort();
    res[mode] = { median: +t[t.length >> 1].toFixed(3), p90: +t[Math.floor(t.length * 0.9)].toFixed(3), batch: +b[b.length >> 1].toFixed(3) };
  }
}

if (child) {
  await all();
  process.exit(0);
}
const c = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', String(iters), base], { stdio: 'inherit' });
await new Promise((r) => setTimeout(r, 300));
native.shmUnlink(base + 'ab'); native.shmUnlink(base + 'ba');
await all();
await new Promise((r) => c.on('exit', r));
console.log(JSON.stringify({ benchmark: 'shm-breakdown', iters, ringUs: res.sync, asyncShapeUs: res.async }));
