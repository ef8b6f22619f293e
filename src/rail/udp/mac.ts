// The udp rail's per-session datagram MAC: SipHash-2-4 under a 128-bit session
// key, truncated to 32 bits, over the whole datagram with its own MAC field
// (bytes 4..8) read as zeros. The addon computes it where it loads; else
// SipHash in JavaScript on 32-bit halves (the same values, slower).

import { loadNative } from '../../native/addon.js';

const native = loadNative();
const nativeSip = native !== null && typeof native.siphash24Range === 'function' ? native.siphash24Range : null;

/** Whether the MAC is computed by the addon (else in JavaScript). */
export const macInNative = nativeSip !== null;

/** Where the datagram's MAC field lies (read as zeros while it is computed). */
export const MAC_AT = 4;

/** The MAC of datagram bytes[0, len) under a 16-byte session key. */
export function datagramMac(bytes: Uint8Array, len: number, key: Uint8Array): number {
  return nativeSip !== null ? nativeSip(bytes, 0, len, key, MAC_AT) >>> 0 : siphash24Js(key, bytes, 0, len, MAC_AT);
}

/**
 * SipHash-2-4 of bytes[off, off + len) under `key` (16 bytes), the 4 bytes at
 * off + hole read as zeros (hole -1: none): the low 32 bits; `out` (8 bytes)
 * takes all 64, little endian. The addon's where it loads.
 */
export function siphash24(key: Uint8Array, bytes: Uint8Array, off: number, len: number, hole = -1, out?: Uint8Array): number {
  if (nativeSip !== null) return (out === undefined ? nativeSip(bytes, off, len, key, hole) : nativeSip(bytes, off, len, key, hole, out)) >>> 0;
  return siphash24Js(key, bytes, off, len, hole, out);
}

// ---- SipHash-2-4 in JavaScript: each 64-bit lane as two int32 halves (h, l),
// in locals (the SipRound is written out twice: in the word loop and at the end).

const le32 = (b: Uint8Array, i: number): number => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24);

/** Byte i of the message (off-relative), zero inside the hole. */
function byteAt(b: Uint8Array, off: number, i: number, hole: number): number {
  return hole >= 0 && i >= hole && i < hole + 4 ? 0 : b[off + i]!;
}

/** The same SipHash-2-4 in JavaScript (no addon). */
export function siphash24Js(key: Uint8Array, b: Uint8Array, off: number, len: number, hole = -1, out?: Uint8Array): number {
  const k0l = le32(key, 0), k0h = le32(key, 4), k1l = le32(key, 8), k1h = le32(key, 12);
  let v0h = k0h ^ 0x736f6d65, v0l = k0l ^ 0x70736575;
  let v1h = k1h ^ 0x646f7261, v1l = k1l ^ 0x6e646f6d;
  let v2h = k0h ^ 0x6c796765, v2l = k0l ^ 0x6e657261;
  let v3h = k1h ^ 0x74656462, v3l = k1l ^ 0x79746573;
  let t = 0;
  const full = len - (len & 7);
  // Words the hole touches take the byte-wise path: word i holds bytes
  // [i, i + 8), so it touches [hole, hole + 4) when hole - 8 < i < hole + 4.
  const h0 = hole >= 0 ? hole - 8 : -1;
  const h1 = hole >= 0 ? hole + 4 : -1;
  // The words, then one more: the tail bytes with the length's low byte on top.
  for (let i = 0; i <= full; i += 8) {
    let ml: number, mh: number;
    if (i === full) {
      ml = 0; mh = (len & 0xff) << 24;
      for (let k = full; k < len; k++) {
        const x = byteAt(b, off, k, hole);
        const sh = (k - full) * 8;
        if (sh < 32) ml |= x << sh; else mh |= x << (sh - 32);
      }
    } else if (i > h0 && i < h1) {
      ml = byteAt(b, off, i, hole) | (byteAt(b, off, i + 1, hole) << 8) | (byteAt(b, off, i + 2, hole) << 16) | (byteAt(b, off, i + 3, hole) << 24);
      mh = byteAt(b, off, i + 4, hole) | (byteAt(b, off, i + 5, hole) << 8) | (byteAt(b, off, i + 6, hole) << 16) | (byteAt(b, off, i + 7, hole) << 24);
    } else {
      ml = le32(b, off + i);
      mh = le32(b, off + i + 4);
    }
    v3h ^= mh; v3l ^= ml;
    for (let r = 0; r < 2; r++) {
      // v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
      t = (v0l + v1l) | 0; v0h = (v0h + v1h + ((t >>> 0) < (v0l >>> 0) ? 1 : 0)) | 0; v0l = t;
      t = v1h; v1h = (v1h << 13) | (v1l >>> 19); v1l = (v1l << 13) | (t >>> 19);
      v1h ^= v0h; v1l ^= v0l;
      t = v0h; v0h = v0l; v0l = t;
      // v2 += v3; v3 = rotl(v3, 16); v3 ^= v2
      t = (v2l + v3l) | 0; v2h = (v2h + v3h + ((t >>> 0) < (v2l >>> 0) ? 1 : 0)) | 0; v2l = t;
      t = v3h; v3h = (v3h << 16) | (v3l >>> 16); v3l = (v3l << 16) | (t >>> 16);
      v3h ^= v2h; v3l ^= v2l;
      // v0 += v3; v3 = rotl(v3, 21); v3 ^= v0
      t = (v0l + v3l) | 0; v0h = (v0h + v3h + ((t >>> 0) < (v0l >>> 0) ? 1 : 0)) | 0; v0l = t;
      t = v3h; v3h = (v3h << 21) | (v3l >>> 11); v3l = (v3l << 21) | (t >>> 11);
      v3h ^= v0h; v3l ^= v0l;
      // v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
      t = (v2l + v1l) | 0; v2h = (v2h + v1h + ((t >>> 0) < (v2l >>> 0) ? 1 : 0)) | 0; v2l = t;
      t = v1h; v1h = (v1h << 17) | (v1l >>> 15); v1l = (v1l << 17) | (t >>> 15);
      v1h ^= v2h; v1l ^= v2l;
      t = v2h; v2h = v2l; v2l = t;
    }
    v0h ^= mh; v0l ^= ml;
  }
  v2l ^= 0xff;
  for (let r = 0; r < 4; r++) {
    // v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
    t = (v0l + v1l) | 0; v0h = (v0h + v1h + ((t >>> 0) < (v0l >>> 0) ? 1 : 0)) | 0; v0l = t;
    t = v1h; v1h = (v1h << 13) | (v1l >>> 19); v1l = (v1l << 13) | (t >>> 19);
    v1h ^= v0h; v1l ^= v0l;
    t = v0h; v0h = v0l; v0l = t;
    // v2 += v3; v3 = rotl(v3, 16); v3 ^= v2
    t = (v2l + v3l) | 0; v2h = (v2h + v3h + ((t >>> 0) < (v2l >>> 0) ? 1 : 0)) | 0; v2l = t;
    t = v3h; v3h = (v3h << 16) | (v3l >>> 16); v3l = (v3l << 16) | (t >>> 16);
    v3h ^= v2h; v3l ^= v2l;
    // v0 += v3; v3 = rotl(v3, 21); v3 ^= v0
    t = (v0l + v3l) | 0; v0h = (v0h + v3h + ((t >>> 0) < (v0l >>> 0) ? 1 : 0)) | 0; v0l = t;
    t = v3h; v3h = (v3h << 21) | (v3l >>> 11); v3l = (v3l << 21) | (t >>> 11);
    v3h ^= v0h; v3l ^= v0l;
    // v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
    t = (v2l + v1l) | 0; v2h = (v2h + v1h + ((t >>> 0) < (v2l >>> 0) ? 1 : 0)) | 0; v2l = t;
    t = v1h; v1h = (v1h << 17) | (v1l >>> 15); v1l = (v1l << 17) | (t >>> 15);
    v1h ^= v2h; v1l ^= v2l;
    t = v2h; v2h = v2l; v2l = t;
  }
  const rl = (v0l ^ v1l ^ v2l ^ v3l) >>> 0;
  if (out !== undefined) {
    const rh = (v0h ^ v1h ^ v2h ^ v3h) >>> 0;
    for (let i = 0; i < 4; i++) { out[i] = (rl >>> (8 * i)) & 0xff; out[4 + i] = (rh >>> (8 * i)) & 0xff; }
  }
  return rl;
}
