// Cost of the udp rail's datagram checksum (word-wise sums over an Int32Array
// view, in JS) next to zlib.crc32 (Node 20's native CRC-32), per datagram size.
//   node bench/udp-checksum.mjs

import zlib from 'node:zlib';
import { checksum } from '../dist/rail/udp/checksum.js';

const rows = [];
for (const size of [64, 1472, 8192, 65504]) {
  const buf = Buffer.alloc(size, 7);
  for (let i = 0; i < size; i++) buf[i] = (i * 31) & 0xff;
  const words = new Int32Array(buf.buffer, buf.byteOffset, size >>> 2);
  const reps = Math.max(2000, Math.floor(2e9 / size / 10));
  const time = (fn) => {
    for (let i = 0; i < 1000; i++) fn();
    const t = performance.now();
    for (let i = 0; i < reps; i++) fn();
    return (performance.now() - t) / reps; // ms per call
  };
  let sink = 0;
  const js = time(() => { sink ^= checksum(buf, 8, size - 8, words); });
  const crc = typeof zlib.crc32 === 'function' ? time(() => { sink ^= zlib.crc32(buf.subarray(8)); }) : NaN;
  rows.push({ size, jsNs: js * 1e6, jsGBps: size / (js * 1e6), crcNs: crc * 1e6, crcGBps: size / (crc * 1e6), sink });
}
console.log('| datagram bytes | word sum ns | word sum GB/s | zlib.crc32 ns | zlib.crc32 GB/s |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.size} | ${r.jsNs.toFixed(0)} | ${r.jsGBps.toFixed(2)} | ${r.crcNs.toFixed(0)} | ${r.crcGBps.toFixed(2)} |`);
