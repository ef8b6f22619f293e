// Cost of one call into the native addon on the paths that make one per
// message: crc32cRange per udp datagram, copy and reduce per collective block,
// futexWake per send to a sleeping peer, addressOf per rendezvous. Each row is
// the median of 9 rounds (ns of this process's CPU time per call: on a shared
// machine, time spent descheduled does not count). Compare addons in one run:
//   npm run build && node bench/native-calls.mjs [--addon=path/to/other.node]
// (--addon loads a raw .node file instead of railcomm's loader, e.g. an older build.)

import { createRequire } from 'node:module';
import { loadNative, nativeWhy } from '../dist/native/addon.js';

const arg = process.argv.find((a) => a.startsWith('--addon='));
const native = arg ? createRequire(import.meta.url)(arg.slice('--addon='.length)) : loadNative();
if (native === null) { console.error(`needs the native addon: ${nativeWhy()}`); process.exit(2); }

const ROUNDS = 9;
function time(name, n, fn) {
  for (let i = 0; i < n; i++) fn(); // warm up (optimise the caller)
  const per = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t = process.cpuUsage();
    for (let i = 0; i < n; i++) fn();
    const d = process.cpuUsage(t);
    per.push(((d.user + d.system) * 1000) / n);
  }
  per.sort((a, b) => a - b);
  return { name, ns: per[ROUNDS >> 1], min: per[0] };
}

const dgram = Buffer.alloc(1472, 7);
const small = Buffer.alloc(64, 3);
const shared = new SharedArrayBuffer(1 << 16);
const dst = new Uint8Array(shared);
const src = new Uint8Array(1 << 16).fill(5);
const a = new Float64Array(1024).fill(1.5), b = new Float64Array(1024).fill(2.5), out = new Float64Array(new SharedArrayBuffer(8 * 1024));
const bell = new SharedArrayBuffer(64);
const view = new Uint8Array(4096);
let sink = 0;
const rows = [
  time('crc32cRange 64 B', 200_000, () => { sink ^= native.crc32cRange(small, 8, 56); }),
  time('crc32cRange 1472 B', 200_000, () => { sink ^= native.crc32cRange(dgram, 8, 1464); }),
  time('copy 16 B (call cost)', 200_000, () => { native.copy(dst, 0, src, 0, 16); }),
  time('copy 8 KiB to shared', 50_000, () => { native.copy(dst, 64, src, 0, 8192); }),
  time('reduce f64 sum 1024', 50_000, () => { sink ^= native.reduce(7, 0, out, 0, a, 0, b, 0, 1024) ? 1 : 0; }),
  time('reduce f64 sum 0 (call cost)', 200_000, () => { sink ^= native.reduce(7, 0, out, 0, a, 0, b, 0, 0) ? 1 : 0; }),
  time('futexWake, nobody waits', 200_000, () => { sink ^= native.futexWake(bell, 8); }),
  time('addressOf Uint8Array', 200_000, () => { sink ^= Number(native.addressOf(view) & 1n); }),
];
console.log(`node ${process.version}, ${arg ? arg.slice(8) : nativeWhy()}`);
console.log('| call | ns (median of 9) | min |');
console.log('|---|---|---|');
for (const r of rows) console.log(`| ${r.name} | ${r.ns.toFixed(1)} | ${r.min.toFixed(1)} |`);
if (sink === 0.5) console.log(sink);
