// Sequence-number arithmetic modulo 2^30 (src/core/seq.ts) against a model
// written from its definition: a is before b when the distance from b to a,
// taken modulo 2^30 into [-2^29, 2^29), is negative.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SEQ_MASK, seqDiff, seqLt, seqLe, seqAdd, nextSeq } from '../../dist/core/seq.js';

const M = 2 ** 30;
const mod = (x) => ((x % M) + M) % M;
/** The signed distance a - b modulo 2^30, in [-2^29, 2^29). */
const dist = (a, b) => { const d = mod(a - b); return d >= M / 2 ? d - M : d; };
const seq = fc.integer({ min: 0, max: M - 1 });
const near = fc.constantFrom(0, 1, M / 2 - 1, M / 2, M / 2 + 1, M - 2, M - 1);

test('seq: the mask is 2^30 - 1', () => {
  assert.equal(SEQ_MASK, M - 1);
});

test('seq: seqDiff, seqLt and seqLe against the model, near the wrap and anywhere (property)', () => {
  fc.assert(fc.property(fc.oneof(seq, near), fc.oneof(seq, near), (a, b) => {
    assert.equal(seqDiff(a, b), dist(a, b));
    assert.equal(seqLt(a, b), dist(a, b) < 0);
    assert.equal(seqLe(a, b), dist(a, b) <= 0);
  }), { numRuns: 2000 });
  // Worked by hand: the wrap.
  assert.equal(seqDiff(0, M - 1), 1);
  assert.equal(seqDiff(M - 1, 0), -1);
  assert.ok(seqLt(M - 1, 0) && !seqLt(0, M - 1) && !seqLt(5, 5) && seqLe(5, 5) && !seqLe(6, 5));
  assert.equal(seqDiff(M / 2, 0), -(M / 2), 'half way round counts as before');
});

test('seq: seqAdd and nextSeq wrap to 0 after 2^30 - 1 (property)', () => {
  fc.assert(fc.property(fc.oneof(seq, near), fc.integer({ min: 0, max: M / 2 - 1 }), (a, n) => {
    assert.equal(seqAdd(a, n), mod(a + n));
    assert.equal(nextSeq(a), mod(a + 1));
    assert.equal(seqDiff(seqAdd(a, n), a), n, 'n steps on is n ahead');
  }), { numRuns: 2000 });
  assert.equal(nextSeq(M - 1), 0);
  assert.equal(seqAdd(M - 3, 5), 2);
});
