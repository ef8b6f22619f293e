// The collective mismatch check: with RAILCOMM_CHECK=1 (or, with
// USE_INIT_CHECK=1, init({ check: true })) every kind of mismatch fails every
// rank with ERR_COLLECTIVE_MISMATCH naming who called what, and the
// communicator stays usable: correct collectives right after give right answers.
//   railcomm run -n P [--threads] [--rails tcp] -x RAILCOMM_CHECK=1 test/jobs/check-suite.mjs

import { init, op } from '../../dist/index.js';
import { runCases, assert, rejectsWith } from './harness.mjs';

const comm = await init(process.env.USE_INIT_CHECK === '1' ? { check: true } : {});
const { rank: me, size: p } = comm;
const last = p - 1;

/** Every rank's call rejects with ERR_COLLECTIVE_MISMATCH; returns the message (the same on every rank). */
async function mismatch(call, ...patterns) {
  const e = await rejectsWith(call, 'ERR_COLLECTIVE_MISMATCH');
  for (const re of patterns) assert.match(e.message, re);
  assert.match(e.message, /communicator is still usable/);
  // Every rank tells the same story.
  const all = await comm.allgatherObject(e.message);
  for (const m of all) assert.equal(m, e.message);
  await stillWorks();
  return e.message;
}

/** Correct collectives right after a mismatch give the right answers. */
async function stillWorks() {
  const out = new Float64Array(2);
  await comm.allreduce(new Float64Array([me, 1]), out, 'sum');
  assert.deepEqual(Array.from(out), [(p * (p - 1)) / 2, p]);
  const b = new Int32Array([me === last ? 42 : 0]);
  await comm.bcast(b, last);
  assert.equal(b[0], 42);
  await comm.barrier();
}

const maxAbs = op((a, b) => { for (let i = 0; i < a.length; i++) a[i] = Math.max(Math.abs(a[i]), Math.abs(b[i])); }, { commutative: true });

const mismatches = [
  ['barrier on rank 0, bcast on the others', () => mismatch(
    me === 0 ? comm.barrier() : comm.bcast(new Float64Array(1), 0),
    /rank 0 called barrier\(\)/, new RegExp(`rank${p > 2 ? 's 1-' + last : ' 1'} called bcast\\(1 x Float64Array, root 0\\)`))],
  ['allreduce of 5 elements on rank 0, 4 on the others', () => mismatch(
    comm.allreduce(new Float64Array(me === 0 ? 5 : 4), new Float64Array(me === 0 ? 5 : 4), 'sum'),
    /rank 0 called allreduce\(5 x Float64Array, op sum\)/, /called allreduce\(4 x Float64Array, op sum\)/)],
  ['Int32 on the last rank, Float64 on the others', () => {
    const T = me === last ? Int32Array : Float64Array;
    return mismatch(comm.allreduce(new T(3), new T(3), 'max'), new RegExp(`rank ${last} called allreduce\\(3 x Int32Array, op max\\)`), /allreduce\(3 x Float64Array, op max\)/);
  }],
  ['different roots', () => mismatch(
    comm.bcast(new Uint8Array(8), me === 1 ? 1 : 0), /rank 1 called bcast\(8 x Uint8Array, root 1\)/, /bcast\(8 x Uint8Array, root 0\)/)],
  ['different ops', () => mismatch(
    comm.reduce(new Int32Array(2), me === 0 ? new Int32Array(2) : null, me === last ? 'max' : 'sum', 0), /op sum/, /op max/)],
  ['a user op against a built-in one', () => mismatch(
    comm.allreduce(new Int32Array(2), new Int32Array(2), me === 0 ? maxAbs : 'max'), /rank 0 called allreduce\(2 x Int32Array, user op #[0-9a-f]{8}/)],
  ['gatherv with different counts', () => {
    const counts = Array.from({ length: p }, (_, r) => (r === me ? 1 : me === 0 ? 2 : 1));
    return mismatch(comm.gatherv(new Float32Array(1), me === 0 ? new Float32Array(2 * p) : null, counts, 0), /gatherv\(/);
  }],
  ['alltoallv whose counts do not add up', () => {
    const send = Array(p).fill(1), recv = Array(p).fill(me === 0 ? 2 : 1);
    return mismatch(comm.alltoallv(new Int8Array(2 * p), send, new Int8Array(2 * p), recv), /alltoallv's send counts add up to/);
  }],
  ['bcastObject on rank 0, gatherObject on the others', () => mismatch(
    me === 0 ? comm.bcastObject({ a: 1 }, 0) : comm.gatherObject({ a: 1 }, 0), /rank 0 called bcastObject\(/, /called gatherObject\(/)],
  ['nonblocking: iallreduce sum against max', () => mismatch(
    comm.iallreduce(new Float64Array(1), new Float64Array(1), me === 0 ? 'sum' : 'max').wait(), /op sum/, /op max/)],
  ['a gather whose root refuses its arguments (its receive buffer too small there only): every rank fails it, the next gets its own data', async () => {
    const call = () => comm.gather(new Float64Array([me]), me === 0 ? new Float64Array(p - 1) : null, 0);
    if (me === 0) {
      let thrown = null;
      try { call(); } catch (e) { thrown = e; }
      assert.equal(thrown?.code, 'ERR_INVALID_ARG', 'the root throws at the call');
    } else {
      const e = await rejectsWith(call(), 'ERR_COLLECTIVE_MISMATCH');
      assert.match(e.message, /rank 0 called gather with arguments it refused \(it threw ERR_INVALID_ARG at the call\)/);
    }
    const recv = me === 0 ? new Float64Array(p) : null;
    await comm.gather(new Float64Array([100 + me]), recv, 0);
    if (me === 0) assert.deepEqual(Array.from(recv), Array.from({ length: p }, (_, r) => 100 + r));
    await stillWorks();
  }],
  ['synchronous calls refused at one rank (a receive array too short, a root out of range): every rank fails each, the next gets its own data', async () => {
    if (process.env.RAILCOMM_RAILS === 'tcp') return; // no synchronous calls over tcp (ERR_NO_RAIL at every rank)
    const refusedAt = (who, code, call, name) => {
      let thrown = null;
      try { call(); } catch (e) { thrown = e; }
      assert.equal(thrown?.code, me === who ? code : 'ERR_COLLECTIVE_MISMATCH', `${name}: ${thrown?.message}`);
      if (me !== who) assert.match(thrown.message, new RegExp(`rank ${who} called ${name} with arguments it refused \\(it threw ${code} at the call\\)`));
    };
    refusedAt(last, 'ERR_INVALID_ARG', () => comm.allreduceSync(new Float64Array([me, 1]), new Float64Array(me === last ? 1 : 2), 'sum'), 'allreduce');
    const out = new Float64Array(2);
    comm.allreduceSync(new Float64Array([me, 1]), out, 'sum');
    assert.deepEqual(Array.from(out), [(p * (p - 1)) / 2, p]);
    refusedAt(0, 'ERR_RANK', () => comm.bcastSync(new Int32Array(1), me === 0 ? p : 1), 'bcast');
    refusedAt(1, 'ERR_INVALID_ARG', () => comm.reduceSync(new Int32Array([me]), me === 0 ? new Int32Array(1) : null, me === 1 ? 'nope' : 'sum', 0), 'reduce');
    refusedAt(0, 'ERR_INVALID_ARG', () => comm.allgatherSync(new Int16Array(2), new Int16Array(me === 0 ? 1 : 2 * p)), 'allgather');
    const all = new Int16Array(p);
    comm.allgatherSync(new Int16Array([me + 10]), all);
    assert.deepEqual(Array.from(all), Array.from({ length: p }, (_, r) => r + 10));
    await stillWorks();
  }],
  ['a large bcast (point-to-point) against a small one (shared memory)', () => mismatch(
    comm.bcast(new Uint8Array(me === 0 ? 2 << 20 : 8), 0), /rank 0 called bcast\(2097152 x Uint8Array, root 0\)/)],
];

const cases = [
  ['matching collectives run, blocking and overlapping', async () => {
    await stillWorks();
    // Overlapping nonblocking calls keep their order on every rank.
    const a = new Float64Array(1), b = new Int32Array([me === 0 ? 7 : 0]), c = new Float64Array(p);
    const reqs = [comm.iallreduce(new Float64Array([1]), a, 'sum'), comm.ibcast(b, 0), comm.ibarrier(), comm.iallgather(new Float64Array([me]), c)];
    for (const r of reqs) await r.wait();
    assert.equal(a[0], p);
    assert.equal(b[0], 7);
    assert.deepEqual(Array.from(c), Array.from({ length: p }, (_, r) => r));
    const sc = new Int32Array(1);
    await comm.scan(new Int32Array([1]), sc, maxAbs);
    assert.equal(sc[0], 1);
    const sub = await comm.split(me % 2, me);
    const s = new Float64Array(1);
    await sub.allreduce(new Float64Array([1]), s, 'sum');
    assert.equal(s[0], sub.size);
    const twin = await comm.dup();
    assert.deepEqual(await twin.allgatherObject(me), Array.from({ length: p }, (_, r) => r));
  }],
  ...(p > 1 ? mismatches : []),
];

const failed = await runCases(comm, cases);
await comm.finalize();
process.exit(failed === 0 ? 0 : 1);
