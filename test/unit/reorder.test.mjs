// Unit and property tests of per-peer message ordering (src/proto/reorder.ts):
// 32-bit sequence comparison across wrap-around, and a ReorderBuffer fed a
// random permutation (with duplicates) of a window that wraps past 2^32.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { seqBefore, ReorderBuffer } from '../../dist/proto/reorder.js';

const U32 = 0x1_0000_0000;
const add = (a, d) => (a + d) >>> 0;

test('seqBefore: plain order and wrap-around', () => {
  assert.equal(seqBefore(0, 1), true);
  assert.equal(seqBefore(1, 0), false);
  assert.equal(seqBefore(5, 5), false);
  assert.equal(seqBefore(0xffffffff, 0), true, '0xffffffff comes just before 0');
  assert.equal(seqBefore(0, 0xffffffff), false);
  assert.equal(seqBefore(0xfffffff0, 0x10), true);
  assert.equal(seqBefore(0x10, 0xfffffff0), false);
  assert.equal(seqBefore(0x7fffffff, 0x80000000), true);
  assert.equal(seqBefore(0x80000000, 0x7fffffff), false);
});

test('seqBefore: a before a+d for every distance 1..2^31-1, irreflexive (property)', () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: U32 - 1 }),
    fc.integer({ min: 1, max: 0x7fffffff }),
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
  rb.expected = 0xfffffffe;
  assert.equal(rb.inOrder(0xffffffff), false);
  rb.stash(0xffffffff, 'b');
  assert.equal(rb.waiting, 1);
  assert.equal(rb.next(), undefined, 'still waiting for 0xfffffffe');
  assert.equal(rb.inOrder(0xfffffffe), true);
  assert.equal(rb.expected, 0xffffffff);
  assert.equal(rb.next(), 'b');
  assert.equal(rb.expected, 0, 'wraps to 0, not 2^32');
  assert.equal(rb.waiting, 0);
  assert.equal(rb.next(), undefined);
  assert.equal(rb.isDuplicate(0xffffffff), true);
  assert.equal(rb.isDuplicate(0xfffffffe), true);
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
 * Feed a window [start, start + n) (mod 2^32) in the given order, with some
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
    // Start within 64 of 2^32 so most windows wrap.
    fc.integer({ min: U32 - 64, max: U32 - 1 }),
    fc.integer({ min: 1, max: 200 }).chain((n) => fc.tuple(
      fc.constant(n),
      fc.shuffledSubarray([...Array(n).keys()], { minLength: n, maxLength: n }),
      fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n)), { maxLength: 30 }),
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
    fc.integer({ min: 0, max: U32 - 1 }),
    fc.integer({ min: 1, max: 0x7fffffff }),
    (expected, behind) => {
      const rb = new ReorderBuffer();
      rb.expected = expected;
      const old = (expected - behind + U32) % U32;
      assert.equal(rb.isDuplicate(old), true);
      assert.equal(rb.inOrder(old), false);
      assert.equal(rb.isDuplicate(expected), false);
    },
  ), { numRuns: 300 });
});
