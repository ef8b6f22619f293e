// The collectives' element kernels at the lengths the 8-way unrolling splits
// (every type and op, against the model in test/helpers/reduce-model.mjs), and
// 32-bit products that overflow a double's mantissa.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kernel } from '../../dist/native/kernels.js';
import { TYPES, OPS, defined, combine, isBig } from '../helpers/reduce-model.mjs';

test('32-bit integer products wrap as the element does, also past 2^53', () => {
  for (const C of [Int32Array, Uint32Array]) {
    const a = C.from([123456789, 987654321, -7 >>> 0, 2 ** 31 - 1, 65537, 3]);
    const b = C.from([987654321, 123456789, 2 ** 31 - 1, 2 ** 31 - 1, 65537, 5]);
    const out = new C(a.length);
    kernel('prod', a)(out, 0, a, 0, b, 0, a.length);
    assert.deepEqual(out, combine(C, 'prod', a, b), C.name);
  }
});

test('every kernel equals the model (test/helpers/reduce-model.mjs), with offsets, for lengths around the unrolling', () => {
  for (const T of TYPES) {
    for (const op of OPS) {
      if (!defined(T, op)) continue;
      for (const n of [0, 1, 7, 8, 9, 15, 16, 17]) {
        const val = (x) => (isBig(T) ? BigInt(x) : x);
        const a = T.from({ length: n + 3 }, (_, i) => val(((i * 37 + 11) % 23) - 5));
        const b = T.from({ length: n + 2 }, (_, i) => val(((i * 17 + 3) % 19) - 4));
        const out = new T(n + 1);
        kernel(op, a)(out, 1, a, 3, b, 2, n);
        const want = new T(n + 1);
        want.set(combine(T, op, a.subarray(3, 3 + n), b.subarray(2, 2 + n)), 1);
        assert.deepEqual(out, want, `${T.name} ${op} n=${n}`);
      }
    }
  }
});
