// The udp rail's datagram MAC: SipHash-2-4 (addon and JavaScript) against the
// reference vectors of the SipHash paper, the two agreeing at any offset, length
// and hole, and the MAC's coverage: every byte of a datagram but its own field
// (bytes 4..8), the type byte included; the MAC kind in the type byte.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { datagramMac, macInNative, siphash24, siphash24Js } from '../../dist/rail/udp/mac.js';
import { loadNative, nativeWhy } from '../../dist/native/addon.js';
import { need } from '../helpers/requires.mjs';
import {
  ACK_BYTES, CHUNK_BYTES, SUM_CRC32C, SUM_HEADER_ONLY, SUM_MAC, SUM_WORDS, T_ACK, T_CHUNK, T_PROBE,
  encodeAck, encodeChunk, encodeCommon, getType, isCrcSum, isMac, markMac, setSum, sumKind,
} from '../../dist/rail/udp/wire.js';

/**
 * SipHash-2-4 with key 00 01 .. 0f of the messages (), (00), (00 01), ..., (00 .. 3e):
 * the 64 vectors of the reference implementation (vectors.h, vectors_sip64; the
 * paper's Appendix A is the one of 15 bytes, a129ca6149be45e5), as bytes in hex.
 */
const VECTORS = [
  '310e0edd47db6f72', 'fd67dc93c539f874', '5a4fa9d909806c0d', '2d7efbd796666785',
  'b7877127e09427cf', '8da699cd64557618', 'cee3fe586e46c9cb', '37d1018bf50002ab',
  '6224939a79f5f593', 'b0e4a90bdf82009e', 'f3b9dd94c5bb5d7a', 'a7ad6b22462fb3f4',
  'fbe50e86bc8f1e75', '903d84c02756ea14', 'eef27a8e90ca23f7', 'e545be4961ca29a1',
  'db9bc2577fcc2a3f', '9447be2cf5e99a69', '9cd38d96f0b3c14b', 'bd6179a71dc96dbb',
  '98eea21af25cd6be', 'c7673b2eb0cbf2d0', '883ea3e395675393', 'c8ce5ccd8c030ca8',
  '94af49f6c650adb8', 'eab8858ade92e1bc', 'f315bb5bb835d817', 'adcf6b0763612e2f',
  'a5c91da7acaa4dde', '716595876650a2a6', '28ef495c53a387ad', '42c341d8fa92d832',
  'ce7cf2722f512771', 'e37859f94623f3a7', '381205bb1ab0e012', 'ae97a10fd434e015',
  'b4a31508beff4d31', '81396229f0907902', '4d0cf49ee5d4dcca', '5c73336a76d8bf9a',
  'd0a704536ba93e0e', '925958fcd6420cad', 'a915c29bc8067318', '952b79f3bc0aa6d4',
  'f21df2e41d4535f9', '87577519048f53a9', '10a56cf5dfcd9adb', 'eb75095ccd986cd0',
  '51a9cb9ecba312e6', '96afadfc2ce666c7', '72fe52975a4364ee', '5a1645b276d592a1',
  'b274cb8ebf87870a', '6f9bb4203de7b381', 'eaecb2a30b22a87f', '9924a43cc1315724',
  'bd838d3aafbf8db7', '0b1a2a3265d51aea', '135079a3231ce660', '932b2846e4d70666',
  'e1915f5cb1eca46c', 'f325965ca16d629f', '575ff28e60381be5', '724506eb4c328a95',
];
const KEY = Uint8Array.from({ length: 16 }, (_, i) => i);

test('SipHash-2-4 in JavaScript: the 64 reference vectors (key 00..0f, messages 00, 00 01, ...)', () => {
  const out = new Uint8Array(8);
  for (let n = 0; n < 64; n++) {
    const msg = Uint8Array.from({ length: n }, (_, i) => i);
    const low = siphash24Js(KEY, msg, 0, n, -1, out);
    assert.equal(Buffer.from(out).toString('hex'), VECTORS[n], `message of ${n} bytes`);
    assert.equal(low, Buffer.from(out).readUInt32LE(0), 'the low 32 bits are returned');
  }
  assert.equal(VECTORS[15], 'e545be4961ca29a1', "the paper's Appendix A value, 0xa129ca6149be45e5, little endian");
});

const native = loadNative();
const sip = native !== null && typeof native.siphash24Range === 'function' ? native.siphash24Range : null;

test('SipHash-2-4 in the addon: the same 64 reference vectors', need('addon', native === null ? nativeWhy() : sip === null ? 'the addon was built without siphash24Range (rebuild it)' : null), () => {
  assert.equal(macInNative, true, 'datagrams take the addon\'s');
  const out = new Uint8Array(8);
  for (let n = 0; n < 64; n++) {
    const msg = Uint8Array.from({ length: n }, (_, i) => i);
    const low = sip(msg, 0, n, KEY, -1, out);
    assert.equal(Buffer.from(out).toString('hex'), VECTORS[n], `message of ${n} bytes`);
    assert.equal(low, Buffer.from(out).readUInt32LE(0));
    // At an offset inside a larger view, unaligned.
    const carrier = new Uint8Array(n + 13); carrier.set(msg, 5);
    assert.equal(sip(carrier, 5, n, KEY, -1), low, `message of ${n} bytes at offset 5`);
  }
  assert.throws(() => sip(new Uint8Array(8), 4, 5, KEY, -1), TypeError, 'a range past the view');
  assert.throws(() => sip(new Uint8Array(8), 0, 8, new Uint8Array(15), -1), TypeError, 'a key of 15 bytes');
});

test('SipHash-2-4: JavaScript and the addon (where built) agree at any offset, length and hole; a hole reads as zeros', () => {
  fc.assert(fc.property(fc.uint8Array({ minLength: 0, maxLength: 300 }), fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.nat(), fc.nat(), fc.integer({ min: -1, max: 310 }),
    (data, key, a, b, hole) => {
      const off = data.length === 0 ? 0 : a % data.length;
      const len = data.length - off === 0 ? 0 : b % (data.length - off + 1);
      const js = siphash24Js(key, data, off, len, hole);
      // The same message with the hole's bytes zeroed, hashed without a hole.
      const zeroed = Uint8Array.from(data.subarray(off, off + len));
      if (hole >= 0) zeroed.fill(0, Math.min(hole, len), Math.min(hole + 4, len));
      assert.equal(js, siphash24Js(key, zeroed, 0, len, -1));
      assert.equal(siphash24(key, data, off, len, hole), js);
      if (sip !== null) assert.equal(sip(data, off, len, key, hole) >>> 0, js);
    }), { numRuns: 300 });
});

test('SipHash-2-4: a hole at every position of every length to 40 bytes, word edges included, reads as zeros', () => {
  // The property above draws holes at random; a hole whose first byte is the
  // last of a word (hole % 8 === 7) slipped through it in many CI runs.
  const key = Uint8Array.from({ length: 16 }, (_, i) => 3 * i + 1);
  for (let len = 0; len <= 40; len++) {
    const data = Uint8Array.from({ length: len }, (_, i) => i + 1);
    for (let hole = -1; hole <= len + 4; hole++) {
      const zeroed = Uint8Array.from(data);
      if (hole >= 0) zeroed.fill(0, Math.min(hole, len), Math.min(hole + 4, len));
      const want = siphash24Js(key, zeroed, 0, len, -1);
      assert.equal(siphash24Js(key, data, 0, len, hole), want, `JavaScript, ${len} bytes, hole at ${hole}`);
      if (sip !== null) assert.equal(sip(data, 0, len, key, hole) >>> 0, want, `addon, ${len} bytes, hole at ${hole}`);
    }
  }
});

/** An ACK and a CHUNK sealed with the MAC under `key`. */
function sealed(key) {
  const ack = Buffer.alloc(ACK_BYTES);
  encodeAck(new DataView(ack.buffer), 0x11223344, 1000, 4096, true, 1003, T_ACK);
  const chunk = Buffer.alloc(CHUNK_BYTES + 100);
  { const v = new DataView(chunk.buffer); encodeCommon(v, T_CHUNK, 7, 10); encodeChunk(v, 3, 0, 8, 5000, 77, 0); for (let i = CHUNK_BYTES; i < chunk.length; i++) chunk[i] = i * 31; }
  for (const b of [ack, chunk]) { const v = new DataView(b.buffer); markMac(v); setSum(v, datagramMac(b, b.length, key)); }
  return { ACK: ack, CHUNK: chunk };
}
const verifies = (b, key) => new DataView(b.buffer, b.byteOffset, b.length).getUint32(4, true) === datagramMac(b, b.length, key);

test('udp MAC: every bit of a datagram but the MAC field is covered, the type byte included; the MAC field itself is not; another key fails', () => {
  const key = Uint8Array.from({ length: 16 }, (_, i) => 200 - i);
  for (const [name, b] of Object.entries(sealed(key))) {
    assert.ok(verifies(b, key), `${name} as sealed`);
    const missed = [];
    for (let i = 0; i < b.length; i++) {
      if (i >= 4 && i < 8) continue;
      for (let bit = 0; bit < 8; bit++) { const c = Buffer.from(b); c[i] ^= 1 << bit; if (verifies(c, key)) missed.push(`byte ${i} bit ${bit}`); }
    }
    assert.deepEqual(missed, [], `${name}: flips the MAC misses`);
    // The type byte: ACK <-> PROBE (bit 2), the kind bits: refused.
    const probe = Buffer.from(b); probe[3] ^= T_ACK ^ T_PROBE;
    assert.equal(verifies(probe, key), false, `${name}: ACK turned PROBE`);
    // The MAC field is excluded: what it holds does not change the MAC.
    const field = Buffer.from(b); field.writeUInt32LE(0xdeadbeef, 4);
    assert.equal(datagramMac(field, field.length, key), datagramMac(b, b.length, key));
    const other = Uint8Array.from(key); other[0] ^= 1;
    assert.equal(verifies(b, other), false, `${name}: another session's key`);
  }
});

test('udp MAC: the kind is the type byte\'s top two bits (3: MAC), beside the type', () => {
  const b = Buffer.alloc(ACK_BYTES); const v = new DataView(b.buffer);
  encodeAck(v, 5, 1, 2, false, 0, T_PROBE);
  assert.equal(sumKind(v), SUM_WORDS);
  markMac(v);
  assert.deepEqual([sumKind(v), isMac(v), isCrcSum(v), getType(v)], [SUM_MAC, true, false, T_PROBE]);
  assert.equal(SUM_MAC, SUM_CRC32C | SUM_HEADER_ONLY, 'the kinds are one two-bit field');
});
