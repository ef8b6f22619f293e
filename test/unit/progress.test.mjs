// Progress's short synchronous wait for a blocking receive (beginBrief /
// pollBriefly on the source's poller): bounded in all, whatever the rings deliver meanwhile, and
// absent where progress would not spin. The pollers here are stand-ins for
// the shared-memory rails (this isolates the wait's own logic).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Progress } from '../../dist/proto/progress.js';

/** Wait as recvAtCall does, on one peer's poller, until `done()` or pollBriefly gives up; returns how long it took (ms). */
function briefWait(p, from, done) {
  const t0 = performance.now();
  if (p.beginBrief()) while (!done() && p.pollBriefly(from)) { /* deliver */ }
  return performance.now() - t0;
}

test('progress: a brief wait ends after about 20 us even when every poll delivers something else', () => {
  const p = new Progress(1000);
  let polls = 0;
  const rail = { poll: () => { polls++; return true; }, sleep: () => true, settle: () => {} };
  p.addPoller(rail);
  // The wait's deadline is read on the wall clock, so a preemption of this
  // process lengthens one wait (12.6 ms once in CI, Node 26): the shortest of
  // three waits is held to the bound, and every one of them must end and poll.
  const lasted = [];
  for (let i = 0; i < 3; i++) {
    polls = 0;
    lasted.push(briefWait(p, rail, () => false));
    assert.ok(polls >= 64, 'it polled');
  }
  assert.ok(Math.min(...lasted) < 5, `the waits lasted ${lasted.join(', ')} ms`);
  p.dispose();
});

test('progress: a brief wait with nothing arriving ends after about 20 us; it stops at once when its message came', () => {
  const p = new Progress(1000);
  let polls = 0;
  const rail = { poll: () => { polls++; return polls === 10; }, sleep: () => true, settle: () => {} };
  p.addPoller(rail);
  let mine = false;
  const ms = briefWait(p, rail, () => mine || (mine = polls >= 10));
  assert.equal(polls, 10, 'stopped at the delivery');
  assert.ok(ms < 5);
  polls = 100;
  const ms2 = briefWait(p, rail, () => false);
  assert.ok(ms2 < 5 && polls > 164, `idle wait lasted ${ms2} ms`);
  p.dispose();
});

test('progress: no brief wait where progress would not spin (no polled rails, or spinning off)', () => {
  const none = new Progress(1000);
  assert.equal(none.beginBrief(), false);
  none.dispose();
  const off = new Progress(0);
  off.addPoller({ poll: () => true, sleep: () => true, settle: () => {} });
  assert.equal(off.beginBrief(), false);
  off.dispose();
});

test('progress: ring space consumed is handed back when the rank stops polling without sleeping (a wait on its own memory, or nothing outstanding)', async () => {
  const p = new Progress(1000);
  let settled = 0;
  p.addPoller({ poll: () => false, sleep: () => true, settle: () => { settled++; } });
  p.keep(true);
  assert.equal(settled, 1, 'a wait on its own memory (shared-memory collectives) hands back first');
  p.keep(false);
  p.hold();
  p.release();
  // The pass queued by hold() finds nothing outstanding and stops: it hands back too.
  await new Promise((r) => setImmediate(r));
  assert.equal(settled, 2);
  p.dispose();
});
