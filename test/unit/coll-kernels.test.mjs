// The collectives' element kernels at the lengths the 8-way unrolling splits
// (every type and op, against the model in test/helpers/reduce-model.mjs), and
// 32-bit products that overflow a double's mantissa.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { kernel, copyInto } from '../../dist/native/kernels.js';
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

test('the kernel cache keys on element type and op together: the same op on another type gets that type\'s kernel', () => {
  const big = (T, x) => (T === BigInt64Array || T === BigUint64Array ? BigInt(x) : x);
  // Same op, alternating types: a cache on the op alone would hand Int32Array the doubles' product,
  // and BigInt64Array the numbers' land (0n !== 0 is true).
  for (const [op, types, a, b] of [
    ['prod', [Float64Array, Int32Array, Float64Array, Uint32Array], [123456789, 65537], [987654321, 65537]],
    ['land', [Float64Array, BigInt64Array, Int8Array, BigUint64Array], [0, 3], [5, 0]],
    ['min', [Float64Array, Int8Array, Float32Array, BigInt64Array], [-0, 4], [0, -7]],
  ]) {
    for (const T of types) {
      const x = T.from(a, (v) => big(T, v)), y = T.from(b, (v) => big(T, v));
      const out = new T(2);
      kernel(op, x)(out, 0, x, 0, y, 0, 2);
      assert.deepEqual(out, combine(T, op, x, y), `${op} ${T.name} after another type`);
    }
  }
});

test('clamped bytes reduce through the JavaScript loops at any length (the addon has no such type): sums saturate at 255', () => {
  for (const n of [5, 2000]) {
    const a = new Uint8ClampedArray(n).fill(200), b = new Uint8ClampedArray(n).fill(100);
    const out = new Uint8ClampedArray(n);
    kernel('sum', a)(out, 0, a, 0, b, 0, n);
    assert.ok(out.every((x) => x === 255), `n=${n}`);
    kernel('min', a)(out, 0, a, 0, b, 0, n);
    assert.ok(out.every((x) => x === 100), `n=${n}`);
  }
});

test('kernels are compiled per type where code generation is allowed, and a process that forbids it gets the same results', () => {
  // land is never native, so kernel() hands out the JavaScript loop itself.
  assert.match(String(kernel('land', new Float64Array(1))), /^function anonymous\(o,oo,a,ao,b,bo,n/);
  const url = new URL('../../dist/native/kernels.js', import.meta.url).href;
  const model = new URL('../helpers/reduce-model.mjs', import.meta.url).href;
  const js = `const { kernel } = await import(${JSON.stringify(url)}); const { TYPES, OPS, defined, combine, firstDifference, isBig } = await import(${JSON.stringify(model)});
    let bad = 0;
    for (const T of TYPES) for (const op of OPS) { if (!defined(T, op)) continue;
      for (const n of [0, 9, 3000]) { const a = T.from({ length: n + 2 }, (_, i) => isBig(T) ? BigInt((i * 7) % 11 - 3) : (i * 7) % 11 - 3), b = T.from({ length: n + 1 }, (_, i) => isBig(T) ? BigInt((i * 5) % 13 - 4) : (i * 5) % 13 - 4);
        const out = new T(n); kernel(op, a)(out, 0, a, 2, b, 1, n); if (firstDifference(out, combine(T, op, a.subarray(2), b.subarray(1))) >= 0) { bad++; console.log(T.name, op, n); } } }
    console.log(String(kernel('land', new Float64Array(1))).startsWith('function anonymous') ? 'compiled' : 'shared', bad);`;
  const r = spawnSync(process.execPath, ['--disallow-code-generation-from-strings', '--input-type=module', '-e', js], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim().split('\n').pop(), 'shared 0', r.stdout);
});

test('copyInto copies exactly [s, s + n) to [d, d + n) for short and long runs, nothing around it', () => {
  for (const T of [Uint8Array, Int16Array, Float32Array, Float64Array, BigInt64Array]) {
    for (const n of [0, 1, 31, 32, 33, 1100, 5000]) {
      const v = (i) => (T === BigInt64Array ? BigInt(i) : i % 100);
      const src = T.from({ length: n + 7 }, (_, i) => v(i + 1));
      const dst = new T(n + 10);
      copyInto(dst, 3, src, 5, n);
      const want = new T(n + 10);
      want.set(src.subarray(5, 5 + n), 3);
      assert.deepEqual(dst, want, `${T.name} n=${n}`);
    }
  }
});
