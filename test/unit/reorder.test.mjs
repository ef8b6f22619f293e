// Unit and property tests of per-peer message ordering (src/proto/reorder.ts):
// sequence comparison modulo 2^30 across wrap-around, and a ReorderBuffer fed
// a random permutation (with duplicates) of a window that wraps past 2^30.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ReorderBuffer } from '../../dist/proto/reorder.js';
import { seqLt as seqBefore, nextSeq, SEQ_MASK } from '../../dist/core/seq.js';

const RANGE = SEQ_MASK + 1; // 2^30
const HALF = RANGE / 2;
const add = (a, d) => (a + d) % RANGE;

test('seqBefore: plain order and wrap-around; numbers stay below 2^30 (small integers in V8)', () => {
  assert.equal(RANGE, 2 ** 30);
  assert.equal(seqBefore(0, 1), true);
  assert.equal(seqBefore(1, 0), false);
  assert.equal(seqBefore(5, 5), false);
  assert.equal(seqBefore(SEQ_MASK, 0), true, '2^30-1 comes just before 0');
  assert.equal(seqBefore(0, SEQ_MASK), false);
  assert.equal(seqBefore(SEQ_MASK - 15, 0x10), true);
  assert.equal(seqBefore(0x10, SEQ_MASK - 15), false);
  assert.equal(seqBefore(HALF - 1, HALF), true);
  assert.equal(seqBefore(HALF, HALF - 1), false);
  assert.equal(nextSeq(SEQ_MASK), 0);
  assert.equal(nextSeq(7), 8);
});

test('seqBefore: a before a+d for every distance 1..2^29-1, irreflexive (property)', () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: RANGE - 1 }),
    fc.integer({ min: 1, max: HALF - 1 }),
    (a, d) => {
      const b = add(a, d);
      assert.equal(seqBefore(a, b), true, `${a} before ${b}`);
      assert.equal(seqBefore(b, a), false, `${b} not before ${a}`);
      assert.equal(seqBefore(a, a), false);
    },
  ), { numRuns: 500 });
});

test('ReorderBuffer: in-order delivery advances, early ones wait, expected wraps to 0', () => {
  const rb = new ReorderBuffer();
  rb.expected = SEQ_MASK - 1;
  assert.equal(rb.inOrder(SEQ_MASK), false);
  rb.stash(SEQ_MASK, 'b');
  assert.equal(rb.waiting, 1);
  assert.equal(rb.next(), undefined, 'still waiting for 2^30-2');
  assert.equal(rb.inOrder(SEQ_MASK - 1), true);
  assert.equal(rb.expected, SEQ_MASK);
  assert.equal(rb.next(), 'b');
  assert.equal(rb.expected, 0, 'wraps to 0, not 2^30');
  assert.equal(rb.waiting, 0);
  assert.equal(rb.next(), undefined);
  assert.equal(rb.isDuplicate(SEQ_MASK), true);
  assert.equal(rb.isDuplicate(SEQ_MASK - 1), true);
  assert.equal(rb.isDuplicate(0), false);
  assert.equal(rb.inOrder(0), true);
  assert.equal(rb.expected, 1);
});

test('ReorderBuffer: a stashed sequence number is a duplicate until delivered', () => {
  const rb = new ReorderBuffer();
  rb.stash(3, 'x');
  assert.equal(rb.isDuplicate(3), true);
  assert.equal(rb.isDuplicate(2), false);
  assert.equal(rb.inOrder(3), false, 'not its turn');
  assert.equal(rb.inOrder(0), true);
  assert.equal(rb.inOrder(1), true);
  assert.equal(rb.inOrder(2), true);
  assert.equal(rb.next(), 'x');
  assert.equal(rb.isDuplicate(3), true, 'delivered: now behind expected');
  assert.equal(rb.expected, 4);
});

/**
 * Feed a window [start, start + n) (mod 2^30) in the given order, with some
 * sequence numbers repeated, the way the protocol layer does: drop duplicates,
 * deliver in-order ones and then whatever became in order, stash the rest.
 */
function run(start, order) {
  const rb = new ReorderBuffer();
  rb.expected = start;
  const delivered = [];
  let dups = 0;
  for (const seq of order) {
    if (rb.isDuplicate(seq)) { dups++; continue; }
    if (rb.inOrder(seq)) {
      delivered.push(seq);
      for (let x = rb.next(); x !== undefined; x = rb.next()) delivered.push(x.seq);
    } else {
      rb.stash(seq, { seq });
    }
  }
  return { rb, delivered, dups };
}

test('ReorderBuffer delivers a random permutation of a wrapping window in order, and catches duplicates (property)', () => {
  fc.assert(fc.property(
    // Start within 64 of 2^30 so most windows wrap.
    fc.integer({ min: RANGE - 64, max: RANGE - 1 }),
    fc.integer({ min: 1, max: 200 }).chain((n) => fc.tuple(
      fc.constant(n),
      fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
      fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n)), { maxLength: 30, size: 'max' }),
    )),
    (start, [n, perm, dupSpec]) => {
      const order = perm.map((i) => add(start, i));
      // Insert duplicates: a copy of window element i placed at position p.
      for (const [i, p] of dupSpec) order.splice(Math.min(p, order.length), 0, add(start, i));
      const { rb, delivered, dups } = run(start, order);
      const want = [...Array(n).keys()].map((i) => add(start, i));
      assert.deepEqual(delivered, want);
      assert.equal(dups, dupSpec.length, 'every repeated sequence number is detected as a duplicate');
      assert.equal(rb.waiting, 0);
      assert.equal(rb.expected, add(start, n));
    },
  ), { numRuns: 300 });
});

test('ReorderBuffer: duplicates of already-delivered numbers are caught far behind expected, across the wrap (property)', () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: RANGE - 1 }),
    fc.integer({ min: 1, max: HALF - 1 }),
    (expected, behind) => {
      const rb = new ReorderBuffer();
      rb.expected = expected;
      const old = (expected - behind + RANGE) % RANGE;
      assert.equal(rb.isDuplicate(old), true);
      assert.equal(rb.inOrder(old), false);
      assert.equal(rb.isDuplicate(expected), false);
    },
  ), { numRuns: 300 });
});
