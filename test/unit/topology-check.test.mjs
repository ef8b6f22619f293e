// Pure logic of the second-wave API: dimsCreate against a brute-force search,
// the Cartesian grid's rank <-> coordinates and shift arithmetic, the
// collective check's signatures and verdicts, and user-defined ops' kernels.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { dimsCreate, CartTopology } from '../../dist/comm/cart.js';
import { signature, verifySignatures, countsHash, SIG_WORDS } from '../../dist/comm/coll/check.js';
import { PROC_NULL } from '../../dist/proto/matching.js';
import { op, reduceInto } from '../../dist/comm/coll/ops.js';

/** Every non-increasing factorisation of n into d factors (brute force). */
function factorisations(n, d, max = n) {
  if (d === 0) return n === 1 ? [[]] : [];
  const out = [];
  for (let f = Math.min(n, max); f >= 1; f--) if (n % f === 0) for (const rest of factorisations(n / f, d - 1, f)) out.push([f, ...rest]);
  return out;
}
const lexLess = (a, b) => { for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i]; return false; };

test('dimsCreate: a non-increasing factorisation of n, the most balanced (lexicographically smallest) one', () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 1, max: 4 }), (n, d) => {
    const got = dimsCreate(n, d);
    assert.equal(got.length, d);
    assert.equal(got.reduce((a, b) => a * b, 1), n);
    for (let i = 1; i < d; i++) assert.ok(got[i] <= got[i - 1], `${got} is not non-increasing`);
    for (const f of factorisations(n, d)) assert.ok(!lexLess(f, got), `dimsCreate(${n}, ${d}) = ${got}, but ${f} is more balanced`);
  }), { numRuns: 300 });
});

test('dimsCreate keeps the fixed dimensions and fills the zeros', () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 200 }), fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 4 }), (n, given) => {
    const fixed = given.reduce((a, x) => (x > 0 ? a * x : a), 1);
    const free = given.filter((x) => x === 0).length;
    if (n % fixed !== 0 || (free === 0 && fixed !== n)) {
      assert.throws(() => dimsCreate(n, given), (e) => e.code === 'ERR_INVALID_ARG');
      return;
    }
    const got = dimsCreate(n, given);
    given.forEach((x, i) => { if (x > 0) assert.equal(got[i], x); });
    assert.equal(got.reduce((a, b) => a * b, 1), n);
  }));
});

test('CartTopology: rankOf(coordsOf(r)) = r, row-major, and shift(d, k) is shift(d, -k) reversed', () => {
  fc.assert(fc.property(fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 3 }), fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), fc.integer({ min: -6, max: 6 }), (dims, per, k) => {
    const periods = dims.map((_, i) => per[i]);
    const t = new CartTopology(dims, periods);
    for (let r = 0; r < t.cells; r++) {
      const c = t.coordsOf(r);
      assert.equal(t.rankOf(c), r);
      assert.equal(c.reduce((acc, x, i) => acc * dims[i] + x, 0), r, 'row-major');
      for (let d = 0; d < dims.length; d++) {
        const s = t.shift(c, d, k), back = t.shift(c, d, -k);
        assert.deepEqual([back.source, back.dest], [s.dest, s.source]);
        const moved = c[d] + k;
        const inside = moved >= 0 && moved < dims[d];
        if (!inside && !periods[d]) assert.equal(s.dest, PROC_NULL);
        else assert.equal(s.dest, t.rankOf(c.map((x, i) => (i === d ? ((moved % dims[d]) + dims[d]) % dims[d] : x))));
      }
    }
  }));
});

function allOf(sigs) {
  const all = new Float64Array(SIG_WORDS * sigs.length);
  sigs.forEach((s, r) => all.set(s, r * SIG_WORDS));
  return all;
}
const mismatchOf = (sigs) => {
  try { verifySignatures(allOf(sigs), sigs.length, 1); return null; } catch (e) { assert.equal(e.code, 'ERR_COLLECTIVE_MISMATCH'); return e.message; }
};

test('verifySignatures: equal calls pass; a difference in call, root, op, type or count fails naming the ranks', () => {
  const f = new Float64Array(4), i = new Int32Array(4);
  const ar = (view, opName = 'sum', n = view.length) => signature('allreduce', -1, opName, view, n, -1);
  assert.equal(mismatchOf([ar(f), ar(f), ar(f)]), null);
  assert.match(mismatchOf([signature('barrier', -1, null, null, -1, -1), ar(f), ar(f)]), /rank 0 called barrier\(\); ranks 1-2 called allreduce\(4 x Float64Array, op sum\)/);
  assert.match(mismatchOf([ar(f), ar(f), ar(i)]), /rank 2 called allreduce\(4 x Int32Array, op sum\)/);
  assert.match(mismatchOf([ar(f, 'sum', 5), ar(f)]), /rank 0 called allreduce\(5 x Float64Array, op sum\); rank 1 called allreduce\(4 x Float64Array, op sum\)/);
  assert.match(mismatchOf([ar(f, 'max'), ar(f), ar(f, 'max')]), /ranks 0, 2 called allreduce\(4 x Float64Array, op max\)/);
  const b = (root) => signature('bcast', root, null, f, 4, -1);
  assert.match(mismatchOf([b(0), b(1)]), /root 1/);
  const u = op(() => {});
  assert.match(mismatchOf([ar(f, u), ar(f)]), /user op #[0-9a-f]{8}/);
  // gatherv: the counts themselves must agree.
  const gv = (counts) => signature('gatherv', 0, null, f, counts.reduce((x, y) => x + y, 0), countsHash(counts));
  assert.equal(mismatchOf([gv([1, 2]), gv([1, 2])]), null);
  assert.notEqual(mismatchOf([gv([1, 2]), gv([2, 1])]), null);
  // alltoallv: per-rank counts differ; the totals must add up.
  const av = (s, r) => signature('alltoallv', -1, null, f, -1, -1, s, r);
  assert.equal(mismatchOf([av(3, 1), av(1, 3)]), null);
  assert.match(mismatchOf([av(3, 1), av(1, 4)]), /send counts add up to 4 elements over all ranks but its receive counts to 5/);
});

test('user ops: the kernel form combines ranges in place and out of place, as the built-in kernels do', () => {
  const cat = op((inout, input) => { for (let k = 0; k < inout.length; k++) inout[k] = inout[k] * 10 + input[k]; });
  const acc = new Float64Array([1, 2, 3]);
  reduceInto(cat, acc, new Float64Array([4, 5, 6]));
  assert.deepEqual(Array.from(acc), [14, 25, 36]);
  const out = new Float64Array(5);
  cat.kernel(out, 1, new Float64Array([7, 1, 2, 9]), 1, new Float64Array([0, 3, 4]), 1, 2);
  assert.deepEqual(Array.from(out), [0, 13, 24, 0, 0]);
  assert.equal(cat.commutative, false);
  assert.equal(op(() => {}, { commutative: true }).commutative, true);
});
