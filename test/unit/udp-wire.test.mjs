// udp wire format: headers round-trip, every structural defect has its drop
// reason, the checksum catches any single flipped bit (the type byte's too),
// handshakes round-trip. (The MAC kind: udp-mac.test.mjs.)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checksum, datagramSum } from '../../dist/rail/udp/checksum.js';
import {
  ACK_BYTES, Bad, CHUNK_BYTES, COMMON_BYTES, FRAG_BYTES, HS_BYTES, RECORD_BYTES, SUM_FROM, T_ACK, T_CHUNK, T_FRAG, T_HELLO, T_PROBE,
  checkDatagram, decodeHandshake, encodeAck, encodeChunk, encodeCommon, encodeFrag, encodeHandshake, encodeRecord,
  getAck, getCredit, getFragId, getHdrLen, getHole, getOffset, getPayLen, getSeq, getToken, getType, setSum, stampAck,
} from '../../dist/rail/udp/wire.js';

const seal = (b) => { const v = new DataView(b.buffer, b.byteOffset, b.length); setSum(v, datagramSum(v, b, b.length)); return v; };
const check = (b) => { const v = new DataView(b.buffer, b.byteOffset, b.length); return checkDatagram(v, b.length, datagramSum(v, b, b.length), 64, 1 << 20); };

test('udp wire: FRAG and CHUNK headers round-trip and pass the checks', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0x7fffffff }), fc.boolean(),
    fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 500 }), (seq, ack, credit, hole, hdrLen, payLen) => {
      const b = Buffer.alloc(FRAG_BYTES + hdrLen + payLen);
      const v = new DataView(b.buffer);
      encodeCommon(v, T_FRAG, 0xabcdef01, seq); encodeFrag(v, 3, 0, hdrLen, payLen); stampAck(v, ack, credit, hole);
      seal(b);
      assert.equal(check(b), Bad.OK);
      assert.equal(getToken(v), 0xabcdef01); assert.equal(getSeq(v), seq); assert.equal(getAck(v), ack);
      assert.equal(getCredit(v), credit); assert.equal(getHole(v), hole); assert.equal(getHdrLen(v), hdrLen); assert.equal(getPayLen(v), payLen);
    }));
  const c = Buffer.alloc(CHUNK_BYTES + 100);
  const cv = new DataView(c.buffer);
  encodeCommon(cv, T_CHUNK, 1, 2); encodeChunk(cv, 3, 0, 0, 5000, 77, 400); seal(c);
  assert.equal(check(c), Bad.OK);
  assert.equal(getFragId(cv), 77); assert.equal(getOffset(cv), 400);
});

/** A FRAG of several records (header and payload lengths each), `extra` bytes added at its end (negative: cut). */
function packed(records, extra = 0) {
  const whole = COMMON_BYTES + records.reduce((n, [h, p]) => n + RECORD_BYTES + h + p, 0);
  const b = Buffer.alloc(whole + extra);
  const v = new DataView(b.buffer);
  encodeCommon(v, T_FRAG, 1, 1);
  let at = COMMON_BYTES;
  for (const [h, p] of records) {
    if (at + RECORD_BYTES <= b.length) encodeRecord(v, at, 3, 0, h, p);
    at += RECORD_BYTES + h + p;
  }
  seal(b);
  return b;
}

test('udp wire: a FRAG of several fragments passes when its records add up to its length, and fails by a byte either way', () => {
  fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 300 })), { minLength: 1, maxLength: 12 }),
    fc.integer({ min: 1, max: RECORD_BYTES - 1 }), (records, k) => {
      assert.equal(check(packed(records)), Bad.OK);
      // Fewer bytes than a record's own fields after the last one (eight zeros would be an empty control record).
      assert.equal(check(packed(records, k)), Bad.LENGTH, `${k} bytes after the last record`);
      const whole = packed(records).length;
      if (whole - k >= FRAG_BYTES) assert.equal(check(packed(records, -k)), Bad.LENGTH, `the last record ${k} bytes short`);
    }));
  // The first record's fields are FRAG's own: a one-record FRAG is what encodeFrag writes.
  const one = packed([[4, 6]]);
  const v = new DataView(one.buffer);
  assert.equal(one.length, FRAG_BYTES + 10);
  assert.equal(getHdrLen(v), 4); assert.equal(getPayLen(v), 6);
  // A later record's header past the limit; a later record's payload reaching past the datagram.
  assert.equal(check(packed([[4, 6], [65, 0]])), Bad.LENGTH);
  { const b = packed([[4, 6], [4, 6]]); const bv = new DataView(b.buffer); bv.setUint32(FRAG_BYTES + 10 + 4, 7, true); seal(b); assert.equal(check(b), Bad.LENGTH); }
  { const b = packed([[4, 6], [4, 6]]); const bv = new DataView(b.buffer); bv.setUint32(FRAG_BYTES + 10 + 4, 0xffffffff, true); seal(b); assert.equal(check(b), Bad.LENGTH); }
});

test('udp wire: each defect has its reason', () => {
  const good = () => { const b = Buffer.alloc(FRAG_BYTES + 10); const v = new DataView(b.buffer); encodeCommon(v, T_FRAG, 1, 1); encodeFrag(v, 3, 0, 4, 6); seal(b); return b; };
  assert.equal(check(good().subarray(0, 20)), Bad.SHORT);
  { const b = good(); b[0] = 0; assert.equal(check(b), Bad.FOREIGN); }
  { const b = good(); b[2] = 9; assert.equal(check(b), Bad.FOREIGN); }
  { const b = good(); b[FRAG_BYTES + 3] ^= 4; assert.equal(check(b), Bad.CORRUPT); }
  { const b = good(); b[3] = 99; seal(b); assert.equal(check(b), Bad.TYPE); }
  { const b = good(); new DataView(b.buffer).setUint32(28, 7, true); seal(b); assert.equal(check(b), Bad.LENGTH, 'lengths do not add up'); }
  { const b = good(); new DataView(b.buffer).setUint16(26, 200, true); seal(b); assert.equal(check(b), Bad.LENGTH, 'header beyond the limit'); }
  // A chunk reaching beyond its fragment, or a fragment beyond the reassembly bound.
  const c = Buffer.alloc(CHUNK_BYTES + 100); const cv = new DataView(c.buffer);
  encodeCommon(cv, T_CHUNK, 1, 2); encodeChunk(cv, 3, 0, 0, 120, 1, 50); seal(c);
  assert.equal(check(c), Bad.LENGTH);
  encodeChunk(cv, 3, 0, 0, 2 << 20, 1, 0); seal(c);
  assert.equal(check(c), Bad.LENGTH);
});

test('udp wire: each structural limit at its edge (short, header limit, fragment bound, empty chunk, chunk at offset 0, handshake length)', () => {
  const HDR_MAX = 64, FRAG_MAX = 1 << 20;
  const checkAt = (b) => { const v = new DataView(b.buffer, b.byteOffset, b.length); return checkDatagram(v, b.length, datagramSum(v, b, b.length), HDR_MAX, FRAG_MAX); };
  const frag = (len, hdrLen, payLen) => { const b = Buffer.alloc(len); const v = new DataView(b.buffer); encodeCommon(v, T_FRAG, 1, 1); if (len >= FRAG_BYTES) encodeFrag(v, 3, 0, hdrLen, payLen); seal(b); return b; };
  const chunk = (len, hdrLen, payLen, offset) => { const b = Buffer.alloc(len); const v = new DataView(b.buffer); encodeCommon(v, T_CHUNK, 1, 1); if (len >= CHUNK_BYTES) encodeChunk(v, 3, 0, hdrLen, payLen, 9, offset); seal(b); return b; };
  // FRAG: shorter than its header; a header just within and just past the limit, lengths adding up.
  assert.equal(checkAt(frag(FRAG_BYTES - 1, 0, 0)), Bad.SHORT);
  assert.equal(checkAt(frag(FRAG_BYTES + HDR_MAX, HDR_MAX, 0)), Bad.OK);
  assert.equal(checkAt(frag(FRAG_BYTES + HDR_MAX + 1, HDR_MAX + 1, 0)), Bad.LENGTH, 'header past the limit');
  // CHUNK: shorter than its header; no data at all; at offset 0 the AM header comes first.
  assert.equal(checkAt(chunk(CHUNK_BYTES - 1, 0, 0, 0)), Bad.SHORT);
  assert.equal(checkAt(chunk(CHUNK_BYTES, 0, 100, 50)), Bad.LENGTH, 'a chunk that carries nothing');
  assert.equal(checkAt(chunk(CHUNK_BYTES + 8 + 100, 8, 100, 0)), Bad.OK, 'offset 0: header, then the whole payload');
  assert.equal(checkAt(chunk(CHUNK_BYTES + 8 + 101, 8, 100, 0)), Bad.LENGTH, 'one byte past the fragment');
  assert.equal(checkAt(chunk(CHUNK_BYTES + 10, 8, 100, 90)), Bad.OK, 'a later chunk carries no header: the last 10 bytes');
  assert.equal(checkAt(chunk(CHUNK_BYTES + HDR_MAX + 1, HDR_MAX, 100, 0)), Bad.OK, 'a header of exactly the limit');
  assert.equal(checkAt(chunk(CHUNK_BYTES + HDR_MAX + 2, HDR_MAX + 1, 100, 0)), Bad.LENGTH, 'a header past the limit');
  assert.equal(checkAt(chunk(CHUNK_BYTES + 10, 0, FRAG_MAX, FRAG_MAX - 10)), Bad.OK, 'a fragment of exactly the bound');
  assert.equal(checkAt(chunk(CHUNK_BYTES + 10, 0, FRAG_MAX + 1, FRAG_MAX - 9)), Bad.LENGTH, 'a fragment past the bound');
  // Handshakes are exactly HS_BYTES long.
  for (const len of [HS_BYTES - 1, HS_BYTES + 1]) {
    const b = Buffer.alloc(len); const v = new DataView(b.buffer); encodeCommon(v, T_HELLO, 0, 0); seal(b);
    assert.equal(checkAt(b), len < COMMON_BYTES ? Bad.SHORT : Bad.LENGTH, `HELLO of ${len} bytes`);
  }
});

test('udp wire: a header-only checksum covers the first CHUNK_BYTES: the payload may change, the header may not', async () => {
  const { markHeaderSum, sumLength } = await import('../../dist/rail/udp/wire.js');
  const { datagramSum } = await import('../../dist/rail/udp/checksum.js');
  const b = Buffer.alloc(CHUNK_BYTES + 200);
  const v = new DataView(b.buffer);
  encodeCommon(v, T_CHUNK, 7, 3); encodeChunk(v, 3, 0, 0, 200, 1, 0);
  assert.equal(sumLength(v, b.length), b.length - SUM_FROM, 'a whole-datagram sum by default');
  markHeaderSum(v);
  assert.equal(getType(v), T_CHUNK, 'the mark leaves the type');
  assert.equal(sumLength(v, b.length), CHUNK_BYTES - SUM_FROM);
  assert.equal(sumLength(v, 30), 30 - SUM_FROM, 'never past the datagram');
  setSum(v, datagramSum(v, b, b.length));
  const ok = (x) => { const w = new DataView(x.buffer, x.byteOffset, x.length); return checkDatagram(w, x.length, datagramSum(w, x, x.length), 64, 1 << 20); };
  assert.equal(ok(b), Bad.OK);
  const pay = Buffer.from(b); pay[CHUNK_BYTES + 50] ^= 1;
  assert.equal(ok(pay), Bad.OK, 'the payload is the link\'s to check');
  const hdr = Buffer.from(b); hdr[CHUNK_BYTES - 1] ^= 1;
  assert.equal(ok(hdr), Bad.CORRUPT);
});

test('CRC32C through the addon where it loads, the table otherwise: the same values at any offset and length', async () => {
  const { crc32c, crc32cTable, crcInHardware } = await import('../../dist/rail/udp/checksum.js');
  const data = Uint8Array.from({ length: 5000 }, (_, i) => (i * 131 + 7) & 0xff);
  for (const [off, len] of [[0, 0], [0, 9], [3, 1000], [17, 4096 + 5], [0, 5000]]) {
    const want = crc32cTable(data, off, len);
    assert.equal(crc32c(data, off, len), want, `offset ${off}, length ${len}`);
    assert.equal(typeof crc32c(data, off, len), 'number');
  }
  assert.equal(typeof crcInHardware, 'boolean');
});

test('udp checksum: any single flipped bit is caught, at any alignment', () => {
  fc.assert(fc.property(fc.uint8Array({ minLength: 1, maxLength: 3000, size: 'max' }), fc.nat(), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 3 }), (bytes, at, bit, shift) => {
    const buf = Buffer.alloc(bytes.length + shift); buf.set(bytes, shift);
    const view = buf.subarray(shift);
    const s0 = checksum(view, 0, view.length);
    view[at % view.length] ^= 1 << bit;
    assert.notEqual(checksum(view, 0, view.length), s0);
  }));
});

/** Sealed datagrams of each shape, both checksum kinds: an ACK, a FRAG of HS_BYTES (a handshake's length), a CHUNK. */
async function sealedDatagrams() {
  const { markCrcSum } = await import('../../dist/rail/udp/wire.js');
  const { datagramSum } = await import('../../dist/rail/udp/checksum.js');
  const out = [];
  for (const crc of [false, true]) {
    const ack = Buffer.alloc(ACK_BYTES); encodeAck(new DataView(ack.buffer), 5, 1000, 4096, true, 1003, T_ACK);
    const frag = Buffer.alloc(HS_BYTES); { const v = new DataView(frag.buffer); encodeCommon(v, T_FRAG, 7, 9); encodeFrag(v, 3, 0, 8, HS_BYTES - FRAG_BYTES - 8); }
    const chunk = Buffer.alloc(CHUNK_BYTES + 100); { const v = new DataView(chunk.buffer); encodeCommon(v, T_CHUNK, 7, 10); encodeChunk(v, 3, 0, 8, 5000, 77, 0); }
    for (const [name, b] of [['ACK', ack], ['FRAG', frag], ['CHUNK', chunk]]) {
      const v = new DataView(b.buffer, b.byteOffset, b.length);
      if (crc) markCrcSum(v);
      setSum(v, datagramSum(v, b, b.length));
      out.push({ name: `${name}${crc ? ' (CRC32C)' : ''}`, b });
    }
  }
  return { out, accepts: (b) => { const v = new DataView(b.buffer, b.byteOffset, b.length); return checkDatagram(v, b.length, datagramSum(v, b, b.length), 64, 1 << 20) === Bad.OK; } };
}

/** The (byte, bit) flips of b that checkDatagram still accepts, among the bytes `where` selects. */
function acceptedFlips(b, accepts, where) {
  const missed = [];
  for (let i = 0; i < b.length; i++) {
    if (!where(i)) continue;
    for (let bit = 0; bit < 8; bit++) {
      const c = Buffer.from(b);
      c[i] ^= 1 << bit;
      if (accepts(c)) missed.push(`byte ${i} bit ${bit}`);
    }
  }
  return missed;
}

test('udp wire: a datagram with any one bit flipped outside its type byte is refused (ACK, FRAG, CHUNK; both checksum kinds)', async () => {
  const { out, accepts } = await sealedDatagrams();
  for (const { name, b } of out) {
    assert.equal(accepts(b), true, `${name} as sealed`);
    assert.deepEqual(acceptedFlips(b, accepts, (i) => i !== 3), [], name);
  }
});

// Byte 3 (type and checksum-kind bits) lay outside the checksum (bytes 8..end) before wire
// version 3: a flipped bit 2 turned an ACK (3) into a PROBE (7), both valid 24-byte
// datagrams. The first word is now mixed into the sum (checksum.ts, datagramSum). (A flip
// that names the MAC kind is refused by the rail: a session without a key drops MAC
// datagrams, one with a key checks the MAC; udp-mac.test.mjs.)
test('udp wire: a flipped bit in the type byte is refused too', async () => {
  const { out, accepts } = await sealedDatagrams();
  const missed = out.flatMap(({ name, b }) => acceptedFlips(b, accepts, (i) => i === 3).map((f) => `${name}: ${f}`));
  assert.deepEqual(missed, []);
});

test('udp wire: handshakes round-trip', () => {
  const b = Buffer.alloc(HS_BYTES);
  const h = { type: T_HELLO, jobId: 9, token: 0xfeedbeef, from: (9n << 32n) | 1n, to: 9n << 32n, nonce: Buffer.alloc(16, 7), dataPort: 4000, prioPort: 4001, credit: 123456, mac: Buffer.alloc(32, 3), keyNonce: Buffer.alloc(16, 9), flags: 1 };
  encodeHandshake(b, h);
  seal(b);
  assert.equal(check(b), Bad.OK);
  assert.deepEqual(decodeHandshake(b), h);
});

test('CRC32C: the addon and the JS table agree with the standard check value, and a CRC-marked datagram verifies and catches a flipped bit', async () => {
  const { crc32c, crc32cTable, datagramSum } = await import('../../dist/rail/udp/checksum.js');
  const { markCrcSum, isCrcSum, getType, SUM_FROM } = await import('../../dist/rail/udp/wire.js');
  const nine = new TextEncoder().encode('123456789');
  assert.equal(crc32cTable(nine, 0, 9), 0xe3069283);
  assert.equal(crc32c(nine, 0, 9), 0xe3069283);
  const big = new Uint8Array(70000).map((_, i) => (i * 7 + 3) & 0xff);
  assert.equal(crc32c(big, 5, 65000), crc32cTable(big, 5, 65000));
  const dg = new Uint8Array(200).map((_, i) => i & 0xff);
  const v = new DataView(dg.buffer);
  v.setUint8(3, 1);
  markCrcSum(v);
  assert.equal(isCrcSum(v), true);
  assert.equal(getType(v), 1, 'the CRC bit does not change the type');
  const sum = datagramSum(v, dg, dg.length);
  // CRC32C of bytes 8.., with the first word (magic, version, type) mixed in.
  assert.equal(sum, (crc32cTable(dg, SUM_FROM, dg.length - SUM_FROM) ^ Math.imul(v.getUint32(0, true), 0x9e3779b1)) >>> 0);
  dg[150] ^= 0x10;
  assert.notEqual(datagramSum(v, dg, dg.length), sum);
});

test('udp wire: ACK and PROBE (an ACK that asks for one back) are ACK_BYTES long, anything else is a length error', () => {
  for (const type of [T_ACK, T_PROBE]) {
    const b = Buffer.alloc(ACK_BYTES);
    const v = new DataView(b.buffer);
    encodeAck(v, 5, 1000, 4096, true, 1003, type);
    seal(b);
    assert.equal(check(b), Bad.OK);
    assert.deepEqual([getType(v), getAck(v), getCredit(v), getHole(v), getSeq(v)], [type, 1000, 4096, true, 1003]);
    const longer = Buffer.alloc(ACK_BYTES + 4);
    b.copy(longer);
    seal(longer);
    assert.equal(check(longer), Bad.LENGTH);
  }
});

/**
 * The word-wise checksum as checksum.ts describes it, written here without its
 * code: two running 32-bit sums over the bytes read as little-endian int32
 * words (a starts at the length; b adds a after every word), the bytes past
 * the last whole word added one at a time, then both mixed through the
 * multiply-xorshift finalizer.
 */
function referenceSum(bytes, off, len) {
  const copy = Uint8Array.from(bytes.subarray(off, off + len)); // aligned, its own buffer
  const dv = new DataView(copy.buffer);
  let a = len | 0, b = 0, i = 0;
  for (; i + 4 <= len; i += 4) { a = (a + dv.getInt32(i, true)) | 0; b = (b + a) | 0; }
  for (; i < len; i++) { a = (a + copy[i]) | 0; b = (b + a) | 0; }
  let h = Math.imul(a ^ (a >>> 16), 0x85ebca6b);
  h ^= Math.imul(b ^ (b >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

test('udp checksum: the reference written from its description, through every read path (DataView, reused words, bytes), at any alignment', () => {
  fc.assert(fc.property(fc.uint8Array({ minLength: 0, maxLength: 300, size: 'max' }), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 11 }), (data, skew, from) => {
    const carrier = new Uint8Array(data.length + 8);
    carrier.set(data, skew);
    const bytes = carrier.subarray(skew, skew + data.length);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    const off = Math.min(from, data.length); // SUM_FROM (8) on the wire; any offset here
    const want = referenceSum(bytes, off, data.length - off);
    assert.equal(checksum(bytes, off, data.length - off, undefined, view), want, 'the receive path (DataView)');
    assert.equal(checksum(bytes, off, data.length - off), want, 'word array or bytes, by alignment');
    if ((bytes.byteOffset & 3) === 0) {
      const words = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
      assert.equal(checksum(bytes, off, data.length - off, words), want, 'the sender\'s reused word view');
    }
  }));
});

/** The word-wise sum of '123456789', of nothing, of bytes 0..63, of bytes 8..44 (changing these breaks mixed jobs). */
const PINNED = ['9f7236e1', '0', '29e9a02f', '6dade840'];

test('udp checksum and CRC32C: pinned values (the wire format: peers of two builds must agree)', async () => {
  const { crc32cTable } = await import('../../dist/rail/udp/checksum.js');
  const nine = Buffer.from('123456789');
  assert.equal(crc32cTable(nine, 0, 9), 0xe3069283, 'CRC32C check value (RFC 3720)');
  assert.equal(crc32cTable(new Uint8Array(32), 0, 32), 0x8a9136aa, 'CRC32C of 32 zero bytes (RFC 3720 B.4)');
  assert.equal(crc32cTable(new Uint8Array(32).fill(0xff), 0, 32), 0x62a8ab43, 'CRC32C of 32 0xff bytes (RFC 3720 B.4)');
  const inc = Uint8Array.from({ length: 64 }, (_, i) => i);
  for (const [bytes, off, len] of [[nine, 0, 9], [nine, 0, 0], [inc, 0, 64], [inc, 8, 37]]) {
    assert.equal(checksum(bytes, off, len), referenceSum(bytes, off, len));
  }
  assert.deepEqual([checksum(nine, 0, 9), checksum(nine, 0, 0), checksum(inc, 0, 64), checksum(inc, 8, 37)].map((x) => x.toString(16)), PINNED);
});
