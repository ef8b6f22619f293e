// Cost of the udp rail's per-session datagram MAC (SipHash-2-4, 32-bit tag,
// RAILCOMM_UDP_AUTH=1) per datagram, next to what RAILCOMM_UDP_AUTH=0 leaves:
// CRC32C through the addon and the word-wise sum in JS. Each figure is what
// one side pays per datagram (the sender seals it, the receiver checks it:
// twice per datagram end to end). Medians of several rounds (a shared CPU).
//   node bench/udp-mac.mjs [--rounds 7]

import { datagramMac, macInNative, siphash24Js } from '../dist/rail/udp/mac.js';
import { datagramSum } from '../dist/rail/udp/checksum.js';
import { markCrcSum } from '../dist/rail/udp/wire.js';
import { loadNative } from '../dist/native/addon.js';
import os from 'node:os';

const arg = (name, def) => { const i = process.argv.indexOf(name); return i > 0 ? Number(process.argv[i + 1]) : def; };
const ROUNDS = arg('--rounds', 7);
const native = loadNative();
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
const key = Uint8Array.from({ length: 16 }, (_, i) => i * 13 + 1);

const rows = [];
for (const size of [64, 1472, 8192, 60000]) {
  const buf = Buffer.alloc(size);
  for (let i = 0; i < size; i++) buf[i] = (i * 31) & 0xff;
  const crcBuf = Buffer.from(buf);
  const v = new DataView(buf.buffer, buf.byteOffset, size);
  const cv = new DataView(crcBuf.buffer, crcBuf.byteOffset, size);
  markCrcSum(cv);
  const words = new Int32Array(buf.buffer, buf.byteOffset, size >>> 2);
  const reps = Math.max(2000, Math.floor(4e8 / size));
  let sink = 0;
  /** ns per call of fn, median of ROUNDS rounds of `reps` calls. */
  const ns = (fn, n = reps) => {
    for (let i = 0; i < Math.min(n, 2000); i++) fn();
    const out = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t = process.hrtime.bigint();
      for (let i = 0; i < n; i++) fn();
      out.push(Number(process.hrtime.bigint() - t) / n);
    }
    return median(out);
  };
  const row = { size };
  row.mac = ns(() => { sink ^= datagramMac(buf, size, key); });
  row.macJs = ns(() => { sink ^= siphash24Js(key, buf, 0, size, 4); }, Math.max(200, reps >> 3));
  row.crc = native === null ? NaN : ns(() => { sink ^= datagramSum(cv, crcBuf, size); });
  row.words = ns(() => { sink ^= datagramSum(v, buf, size, words); });
  row.sink = sink;
  rows.push(row);
}

const load = os.loadavg().map((x) => x.toFixed(1)).join(' ');
console.log(`# udp datagram MAC vs checksums, ns per datagram (median of ${ROUNDS} rounds), ${os.cpus()[0]?.model ?? '?'}, ${os.cpus().length} CPUs, load ${load}, MAC by the ${macInNative ? 'addon' : 'JS fallback'}`);
console.log('| datagram bytes | SipHash MAC (addon) ns | GB/s | SipHash MAC (JS) ns | CRC32C (addon) ns | word sum (JS) ns | MAC / CRC32C |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.size} | ${r.mac.toFixed(0)} | ${(r.size / r.mac).toFixed(2)} | ${r.macJs.toFixed(0)} | ${Number.isNaN(r.crc) ? '-' : r.crc.toFixed(0)} | ${r.words.toFixed(0)} | ${Number.isNaN(r.crc) ? '-' : (r.mac / r.crc).toFixed(1)}x |`);
}
