// Unit and property tests of the tcp rail wire format (src/rail/tcp/wire.ts):
// frame header encode/check round trip, every kind of malformed header refused
// with a reason, and the HELLO / CHALLENGE / PROOF handshake messages.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  FRAME_MAGIC, FRAME_VERSION, FRAME_HEADER, AM_CONTROL, CTRL_BYE,
  encodeFrameHeader, checkFrameHeader, frameAm, frameHdrLen, frameFlags, framePayLen,
  HS_MAGIC, HS_HELLO, HS_CHALLENGE, HS_PROOF, HS_REJECT, HELLO_BYTES, CHALLENGE_BYTES, PROOF_BYTES, RejectReason,
  encodeHello, decodeHello, encodeChallenge, decodeChallenge, encodeProof, decodeProof, idBytes,
} from '../../dist/rail/tcp/wire.js';

const u8 = fc.integer({ min: 0, max: 0xff });
const u16 = fc.integer({ min: 0, max: 0xffff });
const u32 = fc.integer({ min: 0, max: 0xffffffff });
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const bytes = (n) => fc.uint8Array({ minLength: n, maxLength: n }).map((a) => Buffer.from(a));

function header(am, hdrLen, payLen, flags = 0, off = 0) {
  const b = Buffer.alloc(off + FRAME_HEADER + 3);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  encodeFrameHeader(v, off, am, hdrLen, payLen, flags);
  return { b, v };
}

// ---- frame header -----------------------------------------------------------

test('frame header: layout is magic "RC", version, am id, u16 header length, u16 flags, u32 payload length (little endian)', () => {
  const { b } = header(7, 0x0102, 0x03040506, 0x0a0b);
  assert.equal(FRAME_HEADER, 12);
  assert.deepEqual([...b.subarray(0, 12)], [0x52, 0x43, FRAME_VERSION, 7, 0x02, 0x01, 0x0b, 0x0a, 0x06, 0x05, 0x04, 0x03]);
  assert.equal(b.toString('latin1', 0, 2), 'RC');
  assert.equal(FRAME_MAGIC, 0x4352);
  assert.equal(AM_CONTROL, 0);
  assert.equal(CTRL_BYE, 1);
});

test('frame header: encode then check/read round trip at any offset (property)', () => {
  fc.assert(fc.property(u8, u16, u32, u16, fc.nat(40), (am, hdrLen, payLen, flags, off) => {
    const { v } = header(am, hdrLen, payLen, flags, off);
    assert.equal(checkFrameHeader(v, off, hdrLen, payLen), null, 'limits equal to the lengths are accepted');
    assert.equal(checkFrameHeader(v, off, 0xffff, 0xffffffff), null);
    assert.equal(frameAm(v, off), am);
    assert.equal(frameHdrLen(v, off), hdrLen);
    assert.equal(frameFlags(v, off), flags);
    assert.equal(framePayLen(v, off), payLen);
  }), { numRuns: 500 });
});

test('frame header: bad magic is refused with a reason (property)', () => {
  fc.assert(fc.property(u16.filter((m) => m !== FRAME_MAGIC), u8, u16, u32, (magic, am, hdrLen, payLen) => {
    const { v } = header(am, hdrLen, payLen);
    v.setUint16(0, magic, true);
    const why = checkFrameHeader(v, 0, 0xffff, 0xffffffff);
    assert.match(why, /bad magic/);
    assert.ok(why.includes(magic.toString(16)), why);
  }), { numRuns: 200 });
});

test('frame header: unsupported version is refused with a reason (property)', () => {
  fc.assert(fc.property(u8.filter((x) => x !== FRAME_VERSION), (ver) => {
    const { v } = header(1, 0, 0);
    v.setUint8(2, ver);
    const why = checkFrameHeader(v, 0, 256, 1 << 20);
    assert.match(why, new RegExp(`unsupported frame version ${ver}\\b`));
  }), { numRuns: 100 });
});

test('frame header: header length over the maximum is refused (property)', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 0xfffe }), fc.integer({ min: 1, max: 0xffff }), (max, extra) => {
    const hdrLen = Math.min(0xffff, max + extra);
    const { v } = header(1, hdrLen, 0);
    assert.match(checkFrameHeader(v, 0, max, 1 << 20), new RegExp(`header length ${hdrLen} exceeds ${max}`));
  }), { numRuns: 200 });
});

test('frame header: payload length over the maximum is refused, naming RAILCOMM_TCP_MAX_FRAME (property)', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 0xfffffffe }), fc.integer({ min: 1, max: 0xffffffff }), (max, extra) => {
    const payLen = Math.min(0xffffffff, max + extra);
    const { v } = header(1, 0, payLen);
    const why = checkFrameHeader(v, 0, 256, max);
    assert.match(why, new RegExp(`payload length ${payLen} exceeds the maximum frame of ${max}`));
    assert.match(why, /RAILCOMM_TCP_MAX_FRAME/);
  }), { numRuns: 200 });
});

test('frame header: random 12 bytes are accepted only when every field is valid (property)', () => {
  fc.assert(fc.property(bytes(12), fc.integer({ min: 0, max: 512 }), fc.integer({ min: 0, max: 1 << 22 }), (b, hdrMax, payMax) => {
    const v = new DataView(b.buffer, b.byteOffset, 12);
    const valid = b.readUInt16LE(0) === FRAME_MAGIC && b[2] === FRAME_VERSION
      && b.readUInt16LE(4) <= hdrMax && b.readUInt32LE(8) <= payMax;
    const why = checkFrameHeader(v, 0, hdrMax, payMax);
    if (valid) assert.equal(why, null);
    else assert.equal(typeof why, 'string');
  }), { numRuns: 300 });
});

// ---- handshake ---------------------------------------------------------------

test('handshake sizes and magic', () => {
  assert.equal(HELLO_BYTES, 40);
  assert.equal(CHALLENGE_BYTES, 56);
  assert.equal(PROOF_BYTES, 40);
  assert.equal(HS_MAGIC, 0x4852);
  const h = encodeHello({ jobId: 1, from: 2n, to: 3n, nonce: Buffer.alloc(16, 9) });
  assert.equal(h.length, HELLO_BYTES);
  assert.equal(h.toString('latin1', 0, 2), 'RH');
  assert.equal(h[3], HS_HELLO);
  assert.equal(encodeChallenge(HS_CHALLENGE, 0, Buffer.alloc(16), Buffer.alloc(32)).length, CHALLENGE_BYTES);
  assert.equal(encodeProof(Buffer.alloc(32)).length, PROOF_BYTES);
});

test('HELLO: encode/decode round trip (property)', () => {
  fc.assert(fc.property(u32, u64, u64, bytes(16), (jobId, from, to, nonce) => {
    const b = encodeHello({ jobId, from, to, nonce });
    assert.equal(b.length, HELLO_BYTES);
    const h = decodeHello(b);
    assert.notEqual(typeof h, 'string', h);
    assert.equal(h.jobId, jobId);
    assert.equal(h.from, from);
    assert.equal(h.to, to);
    assert.deepEqual(h.nonce, nonce);
    // The decoded nonce is a copy, not a view of the wire buffer.
    b.fill(0);
    assert.deepEqual(h.nonce, nonce);
  }), { numRuns: 300 });
});

test('HELLO: bad magic, version or type is refused with a reason', () => {
  const good = () => encodeHello({ jobId: 5, from: 1n, to: 2n, nonce: Buffer.alloc(16, 1) });
  let b = good(); b[0] ^= 0xff;
  assert.match(decodeHello(b), /bad magic/);
  b = good(); b[2] = FRAME_VERSION + 1;
  assert.match(decodeHello(b), /handshake version 2/);
  b = good(); b[3] = HS_PROOF;
  assert.match(decodeHello(b), /expected HELLO, got type 3/);
  // A frame or an HTTP request where a HELLO should be.
  const http = Buffer.alloc(HELLO_BYTES);
  http.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(typeof decodeHello(http), 'string');
  assert.equal(typeof decodeHello(Buffer.alloc(HELLO_BYTES)), 'string');
});

test('HELLO: random 40 bytes decode only with the right magic, version and type (property)', () => {
  fc.assert(fc.property(bytes(HELLO_BYTES), fc.boolean(), (b, fixPrefix) => {
    if (fixPrefix) { b.writeUInt16LE(HS_MAGIC, 0); b[2] = FRAME_VERSION; }
    const ok = b.readUInt16LE(0) === HS_MAGIC && b[2] === FRAME_VERSION && b[3] === HS_HELLO;
    const h = decodeHello(b);
    assert.equal(typeof h !== 'string', ok);
  }), { numRuns: 300 });
});

test('CHALLENGE: encode/decode round trip (property)', () => {
  fc.assert(fc.property(bytes(16), bytes(32), (nonce, mac) => {
    const c = decodeChallenge(encodeChallenge(HS_CHALLENGE, 0, nonce, mac));
    assert.notEqual(typeof c, 'string', c);
    assert.equal(c.reject, 0);
    assert.deepEqual(c.nonce, nonce);
    assert.deepEqual(c.mac, mac);
  }), { numRuns: 200 });
});

test('CHALLENGE: a REJECT carries its reason (0 reads as -1: still a refusal)', () => {
  // The reasons are wire values (peers of two builds must agree): pinned here.
  assert.deepEqual({ ...RejectReason }, { WRONG_JOB: 1, WRONG_PEER: 2, DUPLICATE: 3, CLOSING: 4 });
  for (const reason of Object.values(RejectReason)) {
    const c = decodeChallenge(encodeChallenge(HS_REJECT, reason, Buffer.alloc(16), Buffer.alloc(32)));
    assert.equal(c.reject, reason);
  }
  const c = decodeChallenge(encodeChallenge(HS_REJECT, 0, Buffer.alloc(16), Buffer.alloc(32)));
  assert.equal(c.reject, -1);
  fc.assert(fc.property(fc.integer({ min: 1, max: 0xffffffff }), (reason) => {
    assert.equal(decodeChallenge(encodeChallenge(HS_REJECT, reason, Buffer.alloc(16), Buffer.alloc(32))).reject, reason);
  }), { numRuns: 100 });
});

test('CHALLENGE: garbage is refused', () => {
  const good = () => encodeChallenge(HS_CHALLENGE, 0, Buffer.alloc(16, 1), Buffer.alloc(32, 2));
  let b = good(); b[1] ^= 1;
  assert.match(decodeChallenge(b), /bad handshake answer/);
  b = good(); b[2] = 0;
  assert.match(decodeChallenge(b), /bad handshake answer/);
  b = good(); b[3] = HS_HELLO;
  assert.match(decodeChallenge(b), /expected CHALLENGE, got type 1/);
  fc.assert(fc.property(bytes(CHALLENGE_BYTES), (g) => {
    const ok = g.readUInt16LE(0) === HS_MAGIC && g[2] === FRAME_VERSION && (g[3] === HS_CHALLENGE || g[3] === HS_REJECT);
    assert.equal(typeof decodeChallenge(g) !== 'string', ok);
  }), { numRuns: 200 });
});

test('PROOF: encode/decode round trip and garbage refused (property)', () => {
  fc.assert(fc.property(bytes(32), (mac) => {
    const b = encodeProof(mac);
    assert.equal(b.readUInt32LE(4), 0, 'reserved word is zero');
    const p = decodeProof(b);
    assert.deepEqual(p, mac);
    b.fill(0);
    assert.deepEqual(p, mac, 'a copy, not a view');
  }), { numRuns: 200 });
  const good = () => encodeProof(Buffer.alloc(32, 7));
  for (const [i, x] of [[0, 0], [1, 0], [2, 9], [3, HS_CHALLENGE]]) {
    const b = good(); b[i] = x;
    assert.match(decodeProof(b), /bad handshake proof/);
  }
  fc.assert(fc.property(bytes(PROOF_BYTES), (g) => {
    const ok = g.readUInt16LE(0) === HS_MAGIC && g[2] === FRAME_VERSION && g[3] === HS_PROOF;
    assert.equal(typeof decodeProof(g) !== 'string', ok);
  }), { numRuns: 200 });
});

test('idBytes: two u64 ids, little endian, in order (property)', () => {
  fc.assert(fc.property(u64, u64, (from, to) => {
    const b = idBytes(from, to);
    assert.equal(b.length, 16);
    assert.equal(b.readBigUInt64LE(0), from);
    assert.equal(b.readBigUInt64LE(8), to);
  }), { numRuns: 100 });
});
