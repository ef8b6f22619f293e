// The timer hotel (timing wheel): guests leave exactly when due, never early,
// check-out is immediate, and timeouts longer than one turn of the wheel wait
// the extra rounds.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Hotel, GuestList } from '../../dist/core/hotel.js';

const guest = (id) => ({ id, gNext: null, gPrev: null, gList: null, gDue: 0 });

test('hotel: guests expire at their due tick, in any order of check-in, across wheel wraps', () => {
  fc.assert(fc.property(
    fc.array(fc.record({ due: fc.integer({ min: 0, max: 3000 }), leave: fc.boolean() }), { maxLength: 200 }),
    fc.integer({ min: 1, max: 50 }),
    (plan, step) => {
      const h = new Hotel(1000, 1, 64); // small wheel: many wraps
      const gs = plan.map((p, i) => { const g = guest(i); h.checkIn(g, 1000 + p.due); return g; });
      for (let i = 0; i < plan.length; i++) if (plan[i].leave) assert.equal(h.checkOut(gs[i]), true);
      const out = [];
      for (let t = 1000; t <= 4100; t += step) {
        h.advance(t, { expired: (g) => { assert.ok(1000 + Math.max(1, plan[g.id].due) <= t + 0, `guest ${g.id} left early at ${t}`); out.push(g.id); } });
      }
      const expect = plan.map((p, i) => (p.leave ? -1 : i)).filter((i) => i >= 0).sort((a, b) => a - b);
      assert.deepEqual([...out].sort((a, b) => a - b), expect, 'every guest that stayed left exactly once');
      assert.equal(h.guests, 0);
    }), { numRuns: 200 });
});

test('hotel: check-out of a guest not in the hotel is refused; re-check-in moves a guest', () => {
  const h = new Hotel(0, 1, 16);
  const g = guest(0);
  assert.equal(h.checkOut(g), false);
  h.checkIn(g, 5);
  h.checkIn(g, 10);
  assert.equal(h.guests, 1);
  const seen = [];
  h.advance(9, { expired: (x) => seen.push(x.id) });
  assert.deepEqual(seen, []);
  h.advance(10, { expired: (x) => seen.push(x.id) });
  assert.deepEqual(seen, [0]);
  const l = new GuestList('other');
  l.push(g);
  assert.equal(h.checkOut(g), false, 'a guest on another list is not the hotel\'s');
  assert.equal(l.shift(), g);
  assert.equal(l.size, 0);
});
