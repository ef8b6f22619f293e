// udp wire format: headers round-trip, every structural defect has its drop
// reason, the checksum catches any single flipped bit, handshakes round-trip.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checksum } from '../../dist/rail/udp/checksum.js';
import {
  ACK_BYTES, Bad, CHUNK_BYTES, FRAG_BYTES, HS_BYTES, SUM_FROM, T_ACK, T_CHUNK, T_FRAG, T_HELLO, T_PROBE,
  checkDatagram, decodeHandshake, encodeAck, encodeChunk, encodeCommon, encodeFrag, encodeHandshake,
  getAck, getCredit, getFragId, getHdrLen, getHole, getOffset, getPayLen, getSeq, getToken, getType, setSum, stampAck,
} from '../../dist/rail/udp/wire.js';

const seal = (b) => { const v = new DataView(b.buffer, b.byteOffset, b.length); setSum(v, checksum(b, SUM_FROM, b.length - SUM_FROM)); return v; };
const check = (b) => checkDatagram(new DataView(b.buffer, b.byteOffset, b.length), b.length, checksum(b, SUM_FROM, b.length - SUM_FROM), 64, 1 << 20);

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

test('udp checksum: any single flipped bit is caught, at any alignment', () => {
  fc.assert(fc.property(fc.uint8Array({ minLength: 1, maxLength: 3000 }), fc.nat(), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 3 }), (bytes, at, bit, shift) => {
    const buf = Buffer.alloc(bytes.length + shift); buf.set(bytes, shift);
    const view = buf.subarray(shift);
    const s0 = checksum(view, 0, view.length);
    view[at % view.length] ^= 1 << bit;
    assert.notEqual(checksum(view, 0, view.length), s0);
  }));
});

test('udp wire: handshakes round-trip', () => {
  const b = Buffer.alloc(HS_BYTES);
  const h = { type: T_HELLO, jobId: 9, token: 0xfeedbeef, from: (9n << 32n) | 1n, to: 9n << 32n, nonce: Buffer.alloc(16, 7), dataPort: 4000, prioPort: 4001, credit: 123456, mac: Buffer.alloc(32, 3) };
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
  assert.equal(sum, crc32cTable(dg, SUM_FROM, dg.length - SUM_FROM));
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

test('udp checksum: read through the datagram\'s DataView (the receive path) it equals the word-array and byte-wise sums, at any alignment', () => {
  fc.assert(fc.property(fc.uint8Array({ minLength: 0, maxLength: 300 }), fc.integer({ min: 0, max: 7 }), (data, skew) => {
    const carrier = new Uint8Array(data.length + 8);
    carrier.set(data, skew);
    const bytes = carrier.subarray(skew, skew + data.length);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    const off = Math.min(8, data.length);
    assert.equal(checksum(bytes, off, data.length - off, undefined, view), checksum(bytes, off, data.length - off));
  }));
});
