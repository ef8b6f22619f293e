// Small copies a word at a time (core/word-copy.ts): exact bytes for every
// alignment and length, views made only for arrays that come again, and a
// byte copy whenever a view cannot serve (misaligned, detached).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WordViews, copySmall } from '../../dist/core/word-copy.js';

const fill = (n, seed) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

test('copySmall copies exactly, by words or by bytes, at every offset and length', () => {
  const srcBuf = Buffer.from(new SharedArrayBuffer(512), 0, 512);
  srcBuf.set(fill(512, 7));
  const srcWords = new Int32Array(srcBuf.buffer, 0, 128);
  const views = new WordViews();
  for (let dOff = 0; dOff < 4; dOff++) {
    const backing = new Uint8Array(300);
    const dst = backing.subarray(dOff, dOff + 256);
    for (const len of [0, 1, 3, 4, 5, 8, 13, 64, 255, 256]) {
      for (const s of [0, 4, 8, 100, 101]) {
        backing.fill(0xee);
        copySmall(dst, 0, views.of(dst), srcBuf, s, srcWords, len);
        assert.deepEqual(dst.subarray(0, len), new Uint8Array(srcBuf.subarray(s, s + len)), `dst offset ${dOff}, len ${len}, src ${s}`);
        assert.ok(backing.subarray(dOff + len).every((b) => b === 0xee), 'nothing written past len');
        assert.ok(backing.subarray(0, dOff).every((b) => b === 0xee), 'nothing written before');
      }
    }
  }
});

test('WordViews: a view once an array comes again, null for a misaligned one, two kept', () => {
  const v = new WordViews();
  const a = new Uint8Array(16), b = new Uint8Array(16), c = new Uint8Array(16);
  const odd = new Uint8Array(new ArrayBuffer(20), 1, 16);
  assert.equal(v.of(a), null, 'first sight: no view yet');
  const wa = v.of(a);
  assert.ok(wa instanceof Int32Array && wa.length === 4 && wa.buffer === a.buffer);
  assert.equal(v.of(a), wa, 'kept');
  v.of(odd); assert.equal(v.of(odd), null, 'misaligned: never a view');
  v.of(b); v.of(b);
  assert.equal(v.of(a), null, 'two newer arrays pushed it out');
  v.of(c);
  assert.equal(v.of(b) instanceof Int32Array, true);
});

test('copySmall falls back to bytes when a kept view no longer covers its buffer (detached)', () => {
  const v = new WordViews();
  const { port1, port2 } = new MessageChannel();
  const dstAb = new ArrayBuffer(16);
  const dst = new Uint8Array(dstAb);
  v.of(dst); const dw = v.of(dst);
  const src = Buffer.from(new ArrayBuffer(16)); // its own buffer: 4-byte aligned
  src.set(fill(16, 3));
  const sw = new Int32Array(src.buffer, 0, 4);
  copySmall(dst, 0, dw, src, 0, sw, 16);
  assert.deepEqual(dst, new Uint8Array(src));
  port1.postMessage(null, [dstAb]);
  port1.close(); port2.close();
  assert.equal(dst.length, 0);
  copySmall(dst, 0, dw, src, 0, sw, 8); // no throw
  assert.equal(dst.length, 0, 'still detached, nothing written');
  assert.deepEqual(new Uint8Array(src), fill(16, 3), 'the source untouched');
});
