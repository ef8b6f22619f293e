// Unit and property tests of MPI tag matching (src/proto/matching.ts) and the
// intrusive list under it (src/proto/list.ts). The property test drives
// MatchQueues and a plain sequential reference model with the same random
// interleaving of posts, arrivals, cancels, probes and claims, and requires
// the same answer at every step.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MatchQueues, ANY_SOURCE, ANY_TAG } from '../../dist/proto/matching.js';
import { List } from '../../dist/proto/list.js';

const node = (id) => ({ id, prev: null, next: null, list: null });
const ids = (list) => [...list].map((x) => x.id);

// ---- List ------------------------------------------------------------------

test('List: push keeps order, remove from head, middle and tail relinks', () => {
  const l = new List();
  const xs = [0, 1, 2, 3, 4].map(node);
  for (const x of xs) l.push(x);
  assert.deepEqual(ids(l), [0, 1, 2, 3, 4]);
  assert.equal(l.length, 5);
  assert.equal(xs[0].list, l);

  l.remove(xs[2]);
  assert.deepEqual(ids(l), [0, 1, 3, 4]);
  assert.equal(xs[2].list, null);
  assert.equal(xs[2].prev, null);
  assert.equal(xs[2].next, null);
  l.remove(xs[0]);
  assert.deepEqual(ids(l), [1, 3, 4]);
  assert.equal(l.head, xs[1]);
  assert.equal(xs[1].prev, null);
  l.remove(xs[4]);
  assert.deepEqual(ids(l), [1, 3]);
  assert.equal(l.tail, xs[3]);
  assert.equal(xs[3].next, null);
  l.remove(xs[1]);
  l.remove(xs[3]);
  assert.equal(l.length, 0);
  assert.equal(l.head, null);
  assert.equal(l.tail, null);
  assert.deepEqual(ids(l), []);
});

test('List: removing an entry that is not on this list changes nothing', () => {
  const a = new List();
  const b = new List();
  const x = node(1);
  const y = node(2);
  a.push(x);
  b.push(y);
  b.remove(x); // x is on a, not b
  a.remove(y);
  assert.deepEqual(ids(a), [1]);
  assert.deepEqual(ids(b), [2]);
  a.remove(x);
  a.remove(x); // twice: the second is a no-op
  assert.equal(a.length, 0);
  assert.deepEqual(ids(a), []);
  // An entry can be pushed again after removal (reused request objects).
  b.push(x);
  assert.deepEqual(ids(b), [2, 1]);
  assert.equal(b.length, 2);
});

test('List: random pushes and removes agree with an array (property)', () => {
  fc.assert(fc.property(
    fc.array(fc.tuple(fc.boolean(), fc.nat(40)), { maxLength: 120, size: 'max' }),
    (ops) => {
      const l = new List();
      const model = [];
      const nodes = [];
      for (const [isPush, k] of ops) {
        if (isPush || nodes.length === 0) {
          const x = node(nodes.length);
          nodes.push(x);
          l.push(x);
          model.push(x.id);
        } else {
          const x = nodes[k % nodes.length];
          l.remove(x);
          const i = model.indexOf(x.id);
          if (i >= 0) model.splice(i, 1);
        }
        assert.equal(l.length, model.length);
      }
      assert.deepEqual(ids(l), model);
      // Walk backwards too: prev links must mirror next links.
      const back = [];
      for (let x = l.tail; x !== null; x = x.prev) back.push(x.id);
      assert.deepEqual(back, [...model].reverse());
    },
  ), { numRuns: 200 });
});

// ---- MatchQueues: examples ------------------------------------------------

let nextId = 0;
const recv = (src, tag) => ({ id: nextId++, matchSrc: src, matchTag: tag, postSeq: 0, prev: null, next: null, list: null });
const msg = (src, tag) => ({ id: nextId++, src, tag, arrival: 0, prev: null, next: null, list: null });

/** The arrive path of the protocol layer: match a posted receive, else queue as unexpected. */
function arrive(q, m) {
  const r = q.matchPosted(m.src, m.tag);
  if (r === null) q.pushArrived(m);
  return r;
}

test('MatchQueues: a receive posted first is matched by the arriving message', () => {
  const q = new MatchQueues();
  const r = recv(1, 5);
  assert.equal(q.post(r), null);
  assert.equal(q.postedCount, 1);
  assert.equal(arrive(q, msg(1, 4)), null, 'wrong tag does not match');
  assert.equal(arrive(q, msg(2, 5)), null, 'wrong source does not match');
  assert.equal(arrive(q, msg(1, 5)), r);
  assert.equal(q.postedCount, 0);
  assert.equal(q.arrivedCount, 2);
});

test('MatchQueues: receives match in posting order, ANY_SOURCE vs specific by postSeq', () => {
  const q = new MatchQueues();
  const specific = recv(0, 7);
  const wild = recv(ANY_SOURCE, 7);
  const later = recv(0, ANY_TAG);
  q.post(wild);
  q.post(specific);
  q.post(later);
  // The wildcard was posted first, so it wins over the specific receive.
  assert.equal(q.matchPosted(0, 7), wild);
  assert.equal(q.matchPosted(0, 7), specific);
  assert.equal(q.matchPosted(0, 7), later);
  assert.equal(q.matchPosted(0, 7), null);

  const a = recv(3, ANY_TAG);
  const b = recv(ANY_SOURCE, ANY_TAG);
  q.post(a);
  q.post(b);
  assert.equal(q.matchPosted(3, 1), a, 'specific posted first wins over a later wildcard');
  assert.equal(q.matchPosted(2, 1), b);
});

test('MatchQueues: unexpected messages: per source in arrival order, ANY_SOURCE takes the earliest overall', () => {
  const q = new MatchQueues();
  const m1 = msg(2, 1);
  const m2 = msg(0, 1);
  const m3 = msg(2, 2);
  const m4 = msg(0, 2);
  for (const m of [m1, m2, m3, m4]) assert.equal(arrive(q, m), null);
  assert.equal(q.arrivedCount, 4);
  assert.equal(q.findArrived(0, ANY_TAG), m2);
  assert.equal(q.findArrived(ANY_SOURCE, 2), m3);
  assert.equal(q.findArrived(1, ANY_TAG), null);
  assert.equal(q.findArrived(ANY_SOURCE, 3), null);
  assert.equal(q.arrivedCount, 4, 'find leaves the message queued');

  assert.equal(q.post(recv(ANY_SOURCE, ANY_TAG)), m1);
  assert.equal(q.post(recv(ANY_SOURCE, 2)), m3);
  assert.equal(q.post(recv(0, ANY_TAG)), m2);
  assert.equal(q.arrivedCount, 1);
  q.removeArrived(m4);
  assert.equal(q.arrivedCount, 0);
  q.removeArrived(m4); // claimed twice: no-op
  assert.equal(q.arrivedCount, 0);
  assert.deepEqual([...q.allArrived()], []);
});

test('MatchQueues: cancel (removePosted) answers whether the receive was still queued', () => {
  const q = new MatchQueues();
  const r1 = recv(1, 1);
  const r2 = recv(ANY_SOURCE, 1);
  q.post(r1);
  q.post(r2);
  assert.equal(q.removePosted(r1), true);
  assert.equal(q.removePosted(r1), false);
  assert.equal(q.matchPosted(1, 1), r2);
  assert.equal(q.removePosted(r2), false, 'already matched');
  assert.equal(q.postedCount, 0);
  const never = recv(2, 2);
  assert.equal(q.removePosted(never), false, 'never posted');
  // A receive that matched at post time was never queued either.
  arrive(q, msg(3, 3));
  const r3 = recv(3, 3);
  assert.notEqual(q.post(r3), null);
  assert.equal(q.removePosted(r3), false);
});

test('MatchQueues: postedFor and allPosted list what is queued', () => {
  const q = new MatchQueues();
  const a = recv(1, 1);
  const b = recv(ANY_SOURCE, 1);
  const c = recv(1, 2);
  const d = recv(2, 2);
  for (const r of [a, b, c, d]) q.post(r);
  assert.deepEqual(q.postedFor(1, false), [a, c]);
  assert.deepEqual(q.postedFor(1, true), [a, c, b]);
  assert.deepEqual(q.postedFor(3, true), [b]);
  assert.deepEqual(q.postedFor(3, false), []);
  assert.deepEqual(new Set(q.allPosted()), new Set([a, b, c, d]));
});

// ---- MatchQueues against a reference model --------------------------------

const SRC = fc.constantFrom(ANY_SOURCE, 0, 1, 2, 3);
const TAG = fc.constantFrom(ANY_TAG, 0, 1, 2, 3);
const OP = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('post'), src: SRC, tag: TAG }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('arrive'), src: fc.integer({ min: 0, max: 3 }), tag: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cancel'), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('probe'), src: SRC, tag: TAG, claim: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('claimAny'), pick: fc.nat() }) },
);

const srcOk = (want, src) => want === ANY_SOURCE || want === src;
const tagOk = (want, tag) => want === ANY_TAG || want === tag;

/** Plain sequential MPI matching: two arrays in posting and arrival order. */
class RefModel {
  posted = []; // receives, in posting order
  arrived = []; // unexpected messages, in arrival order

  post(r) {
    const i = this.arrived.findIndex((m) => srcOk(r.matchSrc, m.src) && tagOk(r.matchTag, m.tag));
    if (i >= 0) return this.arrived.splice(i, 1)[0];
    this.posted.push(r);
    return null;
  }

  arrive(m) {
    const i = this.posted.findIndex((r) => srcOk(r.matchSrc, m.src) && tagOk(r.matchTag, m.tag));
    if (i >= 0) return this.posted.splice(i, 1)[0];
    this.arrived.push(m);
    return null;
  }

  cancel(r) {
    const i = this.posted.indexOf(r);
    if (i < 0) return false;
    this.posted.splice(i, 1);
    return true;
  }

  find(src, tag) {
    return this.arrived.find((m) => srcOk(src, m.src) && tagOk(tag, m.tag)) ?? null;
  }

  claim(m) {
    const i = this.arrived.indexOf(m);
    if (i >= 0) this.arrived.splice(i, 1);
  }
}

const sortIds = (xs) => xs.map((x) => x.id).sort((a, b) => a - b);

function checkSame(q, ref) {
  assert.equal(q.postedCount, ref.posted.length);
  assert.equal(q.arrivedCount, ref.arrived.length);
  assert.deepEqual(sortIds([...q.allPosted()]), sortIds(ref.posted));
  assert.deepEqual(sortIds([...q.allArrived()]), sortIds(ref.arrived));
  for (let s = 0; s < 4; s++) {
    const want = ref.posted.filter((r) => r.matchSrc === s);
    assert.deepEqual(q.postedFor(s, false).map((r) => r.id), want.map((r) => r.id));
    const wantAny = want.concat(ref.posted.filter((r) => r.matchSrc === ANY_SOURCE));
    assert.deepEqual(q.postedFor(s, true).map((r) => r.id), wantAny.map((r) => r.id));
  }
}

test('MatchQueues agrees with a sequential reference model on random interleavings (property)', () => {
  fc.assert(fc.property(fc.array(OP, { maxLength: 150, size: 'max' }), (ops) => {
    const q = new MatchQueues();
    const ref = new RefModel();
    const everPosted = [];
    const everArrived = [];
    let id = 0;
    for (const o of ops) {
      switch (o.op) {
        case 'post': {
          const r = { id: id++, matchSrc: o.src, matchTag: o.tag, postSeq: -1, prev: null, next: null, list: null };
          everPosted.push(r);
          const got = q.post(r);
          const want = ref.post(r);
          assert.equal(got?.id ?? null, want?.id ?? null, `post(${o.src}, ${o.tag})`);
          if (got !== null) assert.equal(got.list, null, 'a matched message is unlinked');
          else assert.notEqual(r.list, null);
          break;
        }
        case 'arrive': {
          const m = { id: id++, src: o.src, tag: o.tag, arrival: -1, prev: null, next: null, list: null };
          everArrived.push(m);
          const got = q.matchPosted(m.src, m.tag);
          if (got === null) q.pushArrived(m);
          const want = ref.arrive(m);
          assert.equal(got?.id ?? null, want?.id ?? null, `arrive(${o.src}, ${o.tag})`);
          if (got !== null) assert.equal(got.list, null, 'a matched receive is unlinked');
          break;
        }
        case 'cancel': {
          if (everPosted.length === 0) break;
          const r = everPosted[o.pick % everPosted.length];
          assert.equal(q.removePosted(r), ref.cancel(r), `cancel #${r.id}`);
          break;
        }
        case 'probe': {
          const got = q.findArrived(o.src, o.tag);
          const want = ref.find(o.src, o.tag);
          assert.equal(got?.id ?? null, want?.id ?? null, `probe(${o.src}, ${o.tag})`);
          if (o.claim && got !== null) {
            q.removeArrived(got);
            ref.claim(want);
            assert.equal(got.list, null);
          }
          break;
        }
        case 'claimAny': {
          // Claiming any message ever seen: already matched or claimed ones are no-ops.
          if (everArrived.length === 0) break;
          const m = everArrived[o.pick % everArrived.length];
          q.removeArrived(m);
          ref.claim(m);
          break;
        }
      }
      checkSame(q, ref);
    }
  }), { numRuns: 300 });
});

test('MatchQueues: many sources, each source strictly in arrival order for ANY_SOURCE/ANY_TAG receives (property)', () => {
  fc.assert(fc.property(
    fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 5 })), { minLength: 1, maxLength: 200, size: 'max' }),
    (arrivals) => {
      const q = new MatchQueues();
      const ms = arrivals.map(([src, tag], i) => ({ id: i, src, tag, arrival: 0, prev: null, next: null, list: null }));
      for (const m of ms) assert.equal(arrive(q, m), null);
      // Drain with wildcard receives: exactly the arrival order.
      const out = [];
      for (let i = 0; i < ms.length; i++) out.push(q.post({ matchSrc: ANY_SOURCE, matchTag: ANY_TAG, postSeq: 0, prev: null, next: null, list: null }).id);
      assert.deepEqual(out, ms.map((m) => m.id));
      assert.equal(q.arrivedCount, 0);
    },
  ), { numRuns: 100 });
});

test('MatchQueues: the wildcards are negative, so no real rank or tag (0 .. 2^31-1) acts as one', () => {
  assert.ok(ANY_TAG < 0 && ANY_SOURCE < 0);
  for (const t of [0, 1, 2 ** 31 - 1]) {
    const q = new MatchQueues();
    q.post(recv(1, t));
    assert.equal(q.matchPosted(1, t === 0 ? 1 : 0), null, `a receive for tag ${t} takes no other tag`);
    assert.equal(q.matchPosted(0, t), null, `a receive from rank 1 takes nothing from rank 0`);
    assert.equal(arrive(q, msg(1, t === 2 ? 3 : 2)), null);
    assert.equal(q.post(recv(1, t === 1 ? 5 : 1)), null, 'a posted receive for another tag leaves the message queued');
  }
});
