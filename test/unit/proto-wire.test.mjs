// The protocol layer's active-message headers (src/proto/wire.ts) against the
// byte layout its comment draws: every field written at its offset, little
// endian, read back by the decoders at any header offset in a frame, sizes and
// offsets past 4 GiB, and the header lengths and ids as the table says.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as W from '../../dist/proto/wire.js';

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const i32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
/** Up to 2^53 - 1 bytes (a message size or offset that JavaScript can hold exactly). */
const size = fc.oneof(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.constantFrom(2 ** 32, 2 ** 32 - 1, 2 ** 32 + 1, 2 ** 40 + 3));

/** A frame with the header at byte `at`: the decoders take (view of the frame, header offset). */
function frame(bytes, at) {
  const buf = new Uint8Array(at + bytes + 4).fill(0xee);
  return { buf, enc: new DataView(buf.buffer, at, bytes), dec: new DataView(buf.buffer) };
}
const le32 = (buf, off) => (buf[off] | (buf[off + 1] << 8) | (buf[off + 2] << 16)) + buf[off + 3] * 2 ** 24;

test('header lengths and ids are as the table draws them', () => {
  assert.deepEqual([W.EAGER_HDR, W.RTS_HDR, W.CTS_HDR, W.DATA_HDR, W.CREDIT_HDR, W.FIN_HDR, W.BYE_HDR, W.REVOKE_HDR], [20, 32, 16, 12, 4, 4, 4, 8]);
  const ids = [W.AM_EAGER, W.AM_RTS, W.AM_CTS, W.AM_DATA, W.AM_CREDIT, W.AM_FIN, W.AM_BYE, W.AM_REVOKE];
  assert.deepEqual(ids, [1, 2, 3, 4, 5, 6, 7, 8], 'wire values: peers of two builds must agree');
  assert.ok(ids.every((id) => id > 0 && id < W.AM_MAX), '0 is the rails\' own; all below AM_MAX');
  assert.deepEqual([W.CTS_DISCARD, W.CTS_REFUSED_FINALIZED, W.CTS_REFUSED_BROKEN], [1, 2, 4], 'flags are separate bits');
});

test('EAGER and RTS: fields at their offsets, read back at any header offset (property)', () => {
  fc.assert(fc.property(u32, u32, i32, u32, u32, u32, size, fc.nat(9), (ctx, src, tag, seq, credits, sendId, sz, at) => {
    const { buf, enc, dec } = frame(W.RTS_HDR, at);
    W.encodeRts(enc, ctx, src, tag, seq, credits, sendId, sz);
    // The table: ctx 0, src 4, tag 8 (signed), seq 12, credits 16, send id 20, size 24 (low) and 28 (high).
    assert.deepEqual([0, 4, 12, 16, 20].map((o) => le32(buf, at + o)), [ctx, src, seq, credits, sendId]);
    assert.equal(le32(buf, at + 8) | 0, tag);
    assert.equal(le32(buf, at + 24) + le32(buf, at + 28) * 2 ** 32, sz);
    assert.equal(buf[at + W.RTS_HDR], 0xee, 'nothing written past the header');
    if (at > 0) assert.equal(buf[at - 1], 0xee, 'nor before it');
    assert.deepEqual([W.hdrCtx(dec, at), W.hdrSrc(dec, at), W.hdrTag(dec, at), W.hdrSeq(dec, at), W.hdrCredits(dec, at), W.rtsSendId(dec, at), W.rtsSize(dec, at)],
      [ctx, src, tag, seq, credits, sendId, sz]);
    // EAGER is RTS's first 20 bytes.
    const e = frame(W.EAGER_HDR, at);
    W.encodeMatchHeader(e.enc, ctx, src, tag, seq, credits);
    assert.deepEqual([...e.buf.subarray(at, at + W.EAGER_HDR)], [...buf.subarray(at, at + W.EAGER_HDR)]);
    assert.equal(e.buf[at + W.EAGER_HDR], 0xee);
  }), { numRuns: 300 });
});

test('CTS, DATA, CREDIT/FIN/BYE and REVOKE: fields at their offsets, read back (property)', () => {
  fc.assert(fc.property(u32, u32, u32, u32, size, fc.nat(9), (a, b, c, d, off, at) => {
    const cts = frame(W.CTS_HDR, at);
    W.encodeCts(cts.enc, a, b, c, d);
    assert.deepEqual([0, 4, 8, 12].map((o) => le32(cts.buf, at + o)), [a, b, c, d]);
    assert.deepEqual([W.ctsSendId(cts.dec, at), W.ctsRecvId(cts.dec, at), W.ctsFlags(cts.dec, at), W.ctsCredits(cts.dec, at)], [a, b, c, d]);
    assert.equal(cts.buf[at + W.CTS_HDR], 0xee);

    const data = frame(W.DATA_HDR, at);
    W.encodeData(data.enc, a, off);
    assert.equal(le32(data.buf, at), a);
    assert.equal(le32(data.buf, at + 4) + le32(data.buf, at + 8) * 2 ** 32, off);
    assert.deepEqual([W.dataRecvId(data.dec, at), W.dataOffset(data.dec, at)], [a, off]);
    assert.equal(data.buf[at + W.DATA_HDR], 0xee);

    const one = frame(4, at);
    W.encodeU32(one.enc, b);
    assert.equal(le32(one.buf, at), b);
    assert.equal(W.readU32(one.dec, at), b);
    assert.equal(one.buf[at + 4], 0xee);

    const rev = frame(W.REVOKE_HDR, at);
    W.encodeRevoke(rev.enc, c, d);
    assert.deepEqual([le32(rev.buf, at), le32(rev.buf, at + 4)], [c, d]);
    assert.deepEqual([W.revokeCtx(rev.dec, at), W.revokeFailed(rev.dec, at)], [c, d]);
    assert.equal(rev.buf[at + W.REVOKE_HDR], 0xee);
  }), { numRuns: 300 });
});

test('sizes and offsets past 4 GiB split into low and high words exactly', () => {
  for (const [sz, lo, hi] of [[0, 0, 0], [2 ** 32 - 1, 2 ** 32 - 1, 0], [2 ** 32, 0, 1], [2 ** 40 + 3, 3, 256], [Number.MAX_SAFE_INTEGER, 2 ** 32 - 1, 2 ** 21 - 1]]) {
    const r = frame(W.RTS_HDR, 0);
    W.encodeRts(r.enc, 0, 0, 0, 0, 0, 0, sz);
    assert.deepEqual([le32(r.buf, 24), le32(r.buf, 28)], [lo, hi], `RTS size ${sz}`);
    const d = frame(W.DATA_HDR, 0);
    W.encodeData(d.enc, 0, sz);
    assert.deepEqual([le32(d.buf, 4), le32(d.buf, 8)], [lo, hi], `DATA offset ${sz}`);
  }
});
