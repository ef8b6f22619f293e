// The ofi rail's table of operations in flight (src/rail/ofi/ops.ts): ids
// that outlive a failure, and the drain of a peer that finalized.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpTable } from '../../dist/rail/ofi/ops.js';

const owner = (name) => ({ name, failed: false });
const op = (log, name) => ({ railComplete: (err) => log.push(`${name}:${err === null ? 'ok' : err.message}`) });

test('a completion that comes after its operation failed does not complete the slot\'s next operation', () => {
  const t = new OpTable();
  const log = [];
  const a = owner('a');
  const id1 = t.take(op(log, 'first'), a, null, -1);
  t.failOwner(a, new Error('gone'));
  const id2 = t.take(op(log, 'second'), a, null, -1);
  assert.notEqual(id1, id2, 'the slot is reused with a new generation');
  t.complete(id1, null);
  assert.deepEqual(log, ['first:gone'], 'the stale completion is ignored');
  t.complete(id2, null);
  assert.deepEqual(log, ['first:gone', 'second:ok']);
});

test('a drained owner\'s operations complete until their time, then what is left fails; other owners are untouched', () => {
  const t = new OpTable();
  const log = [];
  const a = owner('a'), b = owner('b');
  const id1 = t.take(op(log, 'a1'), a, null, -1);
  t.take(op(log, 'a2'), a, null, -1);
  t.take(op(log, 'b1'), b, null, -1);
  t.drain(a, new Error('a finalized'), 1000);
  assert.equal(t.draining.size, 1);
  t.drainDue(999);
  assert.deepEqual(log, [], 'nothing fails before the time');
  t.complete(id1, null);
  assert.deepEqual(log, ['a1:ok'], 'a completion in the drain time completes');
  t.drainDue(1000);
  assert.deepEqual(log, ['a1:ok', 'a2:a finalized'], 'what is left fails at the time');
  assert.equal(t.draining.size, 0, 'forgotten');
  assert.equal(t.count, 1, 'b\'s operation still in flight');
  t.drain(owner('c'), new Error('x'), 0);
  assert.equal(t.draining.size, 0, 'an owner with nothing in flight is not kept');
});

test('an owner whose operations all completed leaves the drain at the next look', () => {
  const t = new OpTable();
  const log = [];
  const a = owner('a');
  const id = t.take(op(log, 'a1'), a, null, -1);
  t.drain(a, new Error('a finalized'), 5000);
  t.complete(id, null);
  t.drainDue(10);
  assert.equal(t.draining.size, 0);
  assert.deepEqual(log, ['a1:ok']);
});
