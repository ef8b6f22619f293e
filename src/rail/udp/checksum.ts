// The datagram checksum: a Fletcher-style pair of 32-bit sums over the bytes
// as Int32 words (little endian: the sum catches flipped bits, the running sum
// of sums swapped words), mixed into 32 bits. Aligned buffers are read a word
// at a time; misaligned ones by bytes. Where the native addon computes CRC32C
// in hardware, senders use that instead (several times faster on 64 KB
// datagrams) and say so in the header; any receiver can check either. (With
// RAILCOMM_UDP_AUTH=1, the default, a session's datagrams carry a MAC instead:
// mac.ts; handshakes still carry this sum.)

import { loadNative } from '../../native/addon.js';
import { SUM_FROM, isCrcSum, sumLength } from './wire.js';

const native = loadNative();

/** Whether this process computes CRC32C in hardware (then its segments carry CRC32C). */
export const crcInHardware = native !== null && native.crc32cHardware();

const hasRange = native !== null && typeof native.crc32cRange === 'function';

let table: Uint32Array | null = null;

/** CRC32C (Castagnoli) of bytes[off, off + len): the addon's, or a table-driven one in JS. */
export function crc32c(bytes: Uint8Array, off: number, len: number): number {
  if (native !== null) {
    // (An addon built before crc32cRange existed takes a subarray.)
    return (hasRange ? native.crc32cRange(bytes, off, len) : native.crc32c(bytes.subarray(off, off + len))) >>> 0;
  }
  return crc32cTable(bytes, off, len);
}

/** The same CRC32C in JS, a byte at a time (receivers without the addon). */
export function crc32cTable(bytes: Uint8Array, off: number, len: number): number {
  if (table === null) {
    table = new Uint32Array(256);
    for (let i = 0; i < 256; i++) {
      let c = i;
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
      table[i] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = off; i < off + len; i++) c = table[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * The checksum a datagram carries (or should carry), by the kind its header
 * names (not a MAC: mac.ts). The sum covers bytes SUM_FROM.. and then the
 * first word (magic, version, type byte) is mixed in: times an odd constant,
 * a bijection, so any change there changes the result. (Before wire version 3
 * the type byte lay outside the checksum: a flipped bit turned an ACK into a
 * PROBE.)
 */
export function datagramSum(v: DataView, bytes: Uint8Array, len: number, words?: Int32Array): number {
  const n = sumLength(v, len);
  const s = isCrcSum(v) ? crc32c(bytes, SUM_FROM, n) : checksum(bytes, SUM_FROM, n, words, v);
  return (s ^ Math.imul(v.getUint32(0, true), 0x9e3779b1)) >>> 0;
}

/**
 * Checksum of bytes[off, off + len). `words`, when given, is an Int32Array
 * over bytes.buffer starting at bytes.byteOffset (the caller's reused view);
 * else `view`, a DataView over the same bytes (a received datagram's), is
 * read a word at a time at any alignment; else one Int32Array is made here.
 */
export function checksum(bytes: Uint8Array, off: number, len: number, words?: Int32Array, view?: DataView): number {
  let a = len | 0;
  let b = 0;
  let i = 0;
  if (words === undefined && view !== undefined) {
    // The receive path: no typed array per datagram.
    for (; i + 4 <= len; i += 4) {
      a = (a + view.getInt32(off + i, true)) | 0;
      b = (b + a) | 0;
    }
  } else if (((bytes.byteOffset + off) & 3) === 0 && len >= 32) {
    const n = len >>> 2;
    let w: Int32Array;
    let k = 0;
    if (words !== undefined && (bytes.byteOffset & 3) === 0) { w = words; k = off >>> 2; }
    else w = new Int32Array(bytes.buffer, bytes.byteOffset + off, n);
    const end = k + n;
    for (; k < end; k++) {
      a = (a + w[k]!) | 0;
      b = (b + a) | 0;
    }
    i = n << 2;
  }
  for (; i + 4 <= len; i += 4) {
    const p = off + i;
    a = (a + (bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24))) | 0;
    b = (b + a) | 0;
  }
  for (; i < len; i++) {
    a = (a + bytes[off + i]!) | 0;
    b = (b + a) | 0;
  }
  // Mix both sums through a multiply-xorshift finalizer: a plain combination
  // such as a ^ b*k lets a flipped top bit of `a` and of `b` cancel out.
  let h = Math.imul(a ^ (a >>> 16), 0x85ebca6b);
  h ^= Math.imul(b ^ (b >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
