// The timer hotel (timing wheel): guests leave on time (at the first advance
// that reaches their tick, never early, never late), check-out is immediate,
// and timeouts longer than one turn of the wheel wait the extra rounds.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Hotel, GuestList } from '../../dist/core/hotel.js';

const guest = (id) => ({ id, gNext: null, gPrev: null, gList: null, gDue: 0 });

test('hotel: guests expire at their due tick, in any order of check-in, across wheel wraps', () => {
  fc.assert(fc.property(
    fc.array(fc.record({ due: fc.integer({ min: 0, max: 3000 }), leave: fc.boolean() }), { maxLength: 200, size: 'max' }),
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

// The wheel's contract, as a model: a guest checked in for dueMs is due at tick
// max(ceil(dueMs / tickMs), the hotel's current tick + 1), and leaves at the first
// advance() whose tick reaches that: never earlier, never a tick (or a turn of
// the wheel) later, whatever the check-ins, check-outs, wraps and long pauses.
test('hotel: every guest leaves at the first advance that reaches its due tick, no earlier and no later (property)', () => {
  const op = fc.oneof(
    // Delays around 0 often: a due time at or before the current tick must still wait for the next one.
    fc.record({ kind: fc.constant('in'), g: fc.nat(15), delay: fc.oneof(fc.integer({ min: -5, max: 400 }), fc.integer({ min: -3, max: 3 })) }),
    fc.record({ kind: fc.constant('out'), g: fc.nat(15) }),
    fc.record({ kind: fc.constant('advance'), step: fc.oneof(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 700 })) }),
  );
  fc.assert(fc.property(fc.integer({ min: 1, max: 4 }), fc.constantFrom(8, 16, 64), fc.integer({ min: 0, max: 100_000 }), fc.array(op, { maxLength: 150, size: 'max' }), (tickMs, slots, start, ops) => {
    const h = new Hotel(start, tickMs, slots);
    const gs = Array.from({ length: 16 }, (_, i) => guest(i));
    const due = new Map(); // guest id -> due tick
    let now = start;
    let tick = Math.floor(start / tickMs);
    const advance = (to) => {
      now = to;
      const left = [];
      h.advance(now, { expired: (g) => left.push(g.id) });
      const t = Math.floor(now / tickMs);
      const want = t > tick ? [...due].filter(([, d]) => d <= t).map(([id]) => id) : [];
      assert.deepEqual(left.sort((a, b) => a - b), want.sort((a, b) => a - b), `at ${now} ms (tick ${t}, ${tickMs} ms a tick, ${slots} slots)`);
      for (const id of want) due.delete(id);
      tick = Math.max(tick, t);
      assert.equal(h.guests, due.size);
    };
    for (const o of ops) {
      if (o.kind === 'in') {
        h.checkIn(gs[o.g], now + o.delay);
        due.set(o.g, Math.max(Math.ceil((now + o.delay) / tickMs), tick + 1));
      } else if (o.kind === 'out') {
        assert.equal(h.checkOut(gs[o.g]), due.delete(o.g), `check-out of guest ${o.g}`);
      } else {
        advance(now + o.step);
      }
    }
    advance(now + 1000 * tickMs);
    assert.equal(due.size, 0);
  }), { numRuns: 300 });
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

test('hotel: the wheel must have a power-of-two number of slots', () => {
  for (const slots of [0, -4, 3, 6, 4095]) assert.throws(() => new Hotel(0, 1, slots), { name: 'RangeError', message: 'hotel slots must be a power of two' }, String(slots));
  for (const slots of [1, 2, 4096]) assert.equal(new Hotel(0, 1, slots).guests, 0);
});

test('hotel: a guest on another list (the retransmit list) checks in once, leaving that list; a list removes only its own guests', () => {
  const h = new Hotel(0, 1, 8);
  const retx = new GuestList('retx');
  const g = guest(1), other = guest(2);
  retx.push(g);
  retx.push(other);
  h.checkIn(g, 3);
  assert.equal(h.guests, 1, 'the hotel counts it once');
  assert.equal(retx.size, 1);
  assert.equal(retx.head, other);
  // Removing a guest that is not on this list changes nothing.
  retx.remove(g);
  assert.equal(retx.size, 1);
  assert.equal(g.gList?.tag, h, 'still in the hotel');
  const seen = [];
  h.advance(3, { expired: (x) => seen.push(x.id) });
  assert.deepEqual(seen, [1]);
  assert.equal(h.guests, 0);
  assert.equal(retx.shift(), other);
  assert.equal(retx.shift(), null);
});
