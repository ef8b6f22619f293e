// A ring rail's counters: traffic is the sum of its endpoints' (counted there
// alone on the hot path); its own counts stay its own.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SummedTrafficCounters, TrafficCounters } from '../../dist/core/counters.js';

test('summed counters: traffic is the endpoints\' sum, other counts the rail\'s own, never -0', () => {
  const eps = [{ counters: new TrafficCounters() }, { counters: new TrafficCounters() }];
  const rail = new SummedTrafficCounters(() => eps);
  assert.ok(Object.is(rail.snapshot().msgsSent, 0), 'nothing sent reads +0');
  eps[0].counters.msgsSent += 3; eps[0].counters.bytesSent += 24;
  eps[1].counters.msgsRecv += 2; eps[1].counters.bytesRecv += 2 ** 33;
  eps[1].counters.badFrames++;
  rail.badFrames++; rail.pending += 2;
  const s = rail.snapshot();
  assert.deepEqual({ ms: s.msgsSent, bs: s.bytesSent, mr: s.msgsRecv, br: s.bytesRecv, bad: s.badFrames, pending: s.pending },
    { ms: 3, bs: 24, mr: 2, br: 2 ** 33, bad: 1, pending: 2 });
  // An endpoint made later counts from then on.
  eps.push({ counters: new TrafficCounters() });
  eps[2].counters.msgsSent++;
  assert.equal(rail.snapshot().msgsSent, 4);
});
