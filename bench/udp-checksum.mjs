// Cost of the udp rail's datagram checksums per datagram size: the word-wise
// sum in JS, CRC32C through the native addon (what senders use from 256 bytes
// where it is in hardware) and its JS table fallback, next to zlib.crc32.
//   node bench/udp-checksum.mjs

import zlib from 'node:zlib';
import { checksum, crc32c, crc32cTable } from '../dist/rail/udp/checksum.js';

const rows = [];
for (const size of [64, 256, 1472, 8192, 65504]) {
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
  const c32 = time(() => { sink ^= crc32c(buf, 8, size - 8); });
  const tab = time(() => { sink ^= crc32cTable(buf, 8, size - 8); });
  rows.push({ size, jsNs: js * 1e6, jsGBps: size / (js * 1e6), c32Ns: c32 * 1e6, tabNs: tab * 1e6, crcNs: crc * 1e6, crcGBps: size / (crc * 1e6), sink });
}
console.log('| datagram bytes | word sum ns | word sum GB/s | CRC32C (addon) ns | CRC32C (JS table) ns | zlib.crc32 ns | zlib.crc32 GB/s |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.size} | ${r.jsNs.toFixed(0)} | ${r.jsGBps.toFixed(2)} | ${r.c32Ns.toFixed(0)} | ${r.tabNs.toFixed(0)} | ${r.crcNs.toFixed(0)} | ${r.crcGBps.toFixed(2)} |`);
