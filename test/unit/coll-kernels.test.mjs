// The collectives' element kernels against plain references: every type and
// op on random data, and 32-bit products that overflow a double's mantissa.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kernel } from '../../dist/native/kernels.js';

test('32-bit integer products wrap as the element does, also past 2^53', () => {
  for (const C of [Int32Array, Uint32Array]) {
    const a = C.from([123456789, 987654321, -7 >>> 0, 2 ** 31 - 1, 65537, 3]);
    const b = C.from([987654321, 123456789, 2 ** 31 - 1, 2 ** 31 - 1, 65537, 5]);
    const out = new C(a.length);
    kernel('prod', a)(out, 0, a, 0, b, 0, a.length);
    const want = C.from([...a].map((x, i) => Math.imul(x, b[i])));
    assert.deepEqual(out, want, C.name);
  }
});

test('every kernel equals the element-wise reference, with offsets, for lengths around the unrolling', () => {
  const ref = {
    sum: (u, v) => u + v, prod: (u, v) => u * v, min: (u, v) => (v < u ? v : u), max: (u, v) => (v > u ? v : u),
    band: (u, v) => u & v, bor: (u, v) => u | v, bxor: (u, v) => u ^ v,
    land: (u, v) => (u && v ? 1 : 0), lor: (u, v) => (u || v ? 1 : 0),
  };
  for (const C of [Int8Array, Uint8Array, Int16Array, Uint16Array, Float32Array, Float64Array]) {
    for (const op of Object.keys(ref)) {
      if ((C === Float32Array || C === Float64Array) && ['band', 'bor', 'bxor'].includes(op)) continue;
      for (const n of [0, 1, 7, 8, 9, 17]) {
        const a = C.from({ length: n + 3 }, (_, i) => ((i * 37 + 11) % 23) - 5);
        const b = C.from({ length: n + 2 }, (_, i) => ((i * 17 + 3) % 19) - 4);
        const out = new C(n + 1);
        kernel(op, a)(out, 1, a, 3, b, 2, n);
        const want = new C(n + 1);
        for (let i = 0; i < n; i++) want[1 + i] = ref[op](a[3 + i], b[2 + i]);
        assert.deepEqual(out, want, `${C.name} ${op} n=${n}`);
      }
    }
  }
});
