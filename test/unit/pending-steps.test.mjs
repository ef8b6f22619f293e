// PendingSteps (coll/pending-steps.ts): the rests of a shared-memory
// collective that waits, run once each, in order, by the event loop or by a
// synchronous call's drain, with failures reaching the collective's promise.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PendingSteps } from '../../dist/comm/coll/pending-steps.js';

/** A wait the test settles by hand. */
function gate() {
  let open, fail;
  const w = new Promise((res, rej) => { open = res; fail = rej; });
  return { w, open, fail };
}

const STRICT = (w) => { if (w !== null) throw new Error('a rest returned a promise in a drain'); };

test('the event loop runs the rests in order, each once', async () => {
  const steps = new PendingSteps();
  const ran = [];
  const g = gate();
  const inner = steps.after(g.w, () => { ran.push('inner'); return null; });
  const outer = steps.after(inner, () => { ran.push('outer'); return null; });
  assert.equal(steps.length, 2);
  g.open();
  await outer;
  assert.deepEqual(ran, ['inner', 'outer']);
  assert.equal(steps.length, 0);
});

test('a drain runs the rests at the call, in order; the loop then finds them done and settles the collective', async () => {
  const steps = new PendingSteps();
  const ran = [];
  const g = gate();
  const inner = steps.after(g.w, () => { ran.push('inner'); return null; });
  const outer = steps.after(inner, () => { ran.push('outer'); return null; });
  steps.drain(STRICT);
  assert.deepEqual(ran, ['inner', 'outer'], 'both ran inside drain()');
  assert.equal(steps.length, 0);
  g.open();
  await outer;
  assert.deepEqual(ran, ['inner', 'outer'], 'and never again');
});

test('a rest that throws in a drain fails the collective\'s promise, and the rests after it never run', async () => {
  const steps = new PendingSteps();
  const ran = [];
  const g = gate();
  const inner = steps.after(g.w, () => { ran.push('inner'); throw new Error('mismatch'); });
  const outer = steps.after(inner, () => { ran.push('outer'); return null; });
  steps.drain(STRICT);
  assert.deepEqual(ran, ['inner']);
  assert.equal(steps.length, 0);
  g.open();
  await assert.rejects(outer, /mismatch/);
  assert.deepEqual(ran, ['inner']);
});

test('a wait that rejects abandons the collective: a later drain runs none of its rests', async () => {
  const steps = new PendingSteps();
  const ran = [];
  const g = gate();
  const inner = steps.after(g.w, () => { ran.push('inner'); return null; });
  const outer = steps.after(inner, () => { ran.push('outer'); return null; });
  g.fail(new Error('peer failed'));
  await assert.rejects(outer, /peer failed/);
  steps.drain(STRICT);
  assert.deepEqual(ran, []);
  assert.equal(steps.length, 0);
});

test('a rest that waits again on the loop leaves its own rests, which a later drain runs', async () => {
  const steps = new PendingSteps();
  const ran = [];
  const g1 = gate(), g2 = gate();
  const first = steps.after(g1.w, () => {
    ran.push('round 1');
    // The next round waits too: its rest goes after whatever is left.
    return steps.after(g2.w, () => { ran.push('round 2'); return null; });
  });
  g1.open();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(ran, ['round 1']);
  assert.equal(steps.length, 1);
  steps.drain(STRICT);
  assert.deepEqual(ran, ['round 1', 'round 2']);
  g2.open();
  await first;
  assert.deepEqual(ran, ['round 1', 'round 2']);
});

test('a rest that waits again while an outer step still waits: its new steps run before the outer one (a split round)', async () => {
  const steps = new PendingSteps();
  const ran = [];
  const g1 = gate(), g2 = gate();
  // reduceSplit's first phase (inner), then the rounds after it (outer, made second).
  const split = steps.after(g1.w, () => {
    ran.push('block');
    // splitBlock's second phase waits: copy-out is a new step, made while 'next rounds' waits.
    return steps.after(g2.w, () => { ran.push('copy out'); return null; });
  });
  const outer = steps.after(split, () => { ran.push('next rounds'); return null; });
  g1.open();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(ran, ['block']);
  steps.drain(STRICT);
  assert.deepEqual(ran, ['block', 'copy out', 'next rounds']);
  g2.open();
  await outer;
  assert.deepEqual(ran, ['block', 'copy out', 'next rounds']);
});

test('runFirst (a synchronous wait elsewhere) runs one step; one that waits again holds its collective until that wait ends', async () => {
  const steps = new PendingSteps();
  const ran = [];
  const g1 = gate(), g2 = gate();
  let settled = false;
  const first = steps.after(g1.w, () => {
    ran.push('round 1');
    return steps.after(g2.w, () => { ran.push('round 2'); return null; });
  });
  const outer = steps.after(first, () => { ran.push('after'); return null; });
  outer.then(() => { settled = true; });
  steps.runFirst();
  assert.deepEqual(ran, ['round 1']);
  g1.open();
  await new Promise((r) => setImmediate(r));
  assert.equal(settled, false, 'round 2 still waits');
  assert.deepEqual(ran, ['round 1']);
  g2.open();
  await outer;
  assert.deepEqual(ran, ['round 1', 'round 2', 'after']);
});
