// Collectives against a sequential reference, one job per rank count:
//   railcomm run -n P test/jobs/coll-suite.mjs
// Every rank builds every rank's input (a function of rank, index and seed),
// so each can compute the expected result alone, in rank order, with the
// element-wise model of test/helpers/reduce-model.mjs (integer wrap-around
// included), never the library's own kernels. Inputs are small integers,
// exact in floating point whatever the order of combination.

import { init } from '../../dist/index.js';
import { runCases, assert, throwsWith } from './harness.mjs';
import { TYPES, OPS, isFloat, isBig, fold } from '../helpers/reduce-model.mjs';

const comm = await init();
const { rank: me, size: p } = comm;

const SIZES = [1, 7, 20000]; // 20000 x 8 B is above the 64 KiB rendezvous threshold

function input(T, r, n, seed, op) {
  const a = new T(n);
  for (let i = 0; i < n; i++) {
    // prod stays small: values in {1, 2}; others in -2..4, different on each rank (r * 3 is
    // distinct modulo 7 up to 7 ranks; r * 7 was not: every rank had the same input).
    const v = op === 'prod' ? ((r + i + seed) % 5 === 0 ? 2 : 1) : (((r * 3 + i * 13 + seed) % 7) - 2);
    a[i] = isBig(T) ? BigInt(v) : v;
  }
  return a;
}

/** The model's fold of the ranks' inputs, in rank order. */
function reference(T, op, n, seed, ranks) {
  return fold(T, op, ranks.map((r) => input(T, r, n, seed, op)));
}

const same = (a, b, what) => {
  assert.equal(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i]) && a[i] !== b[i]) assert.fail(`${what}: element ${i} is ${a[i]}, expected ${b[i]}`);
};
const allRanks = Array.from({ length: p }, (_, i) => i);

const cases = [];
cases.push(['allreduce, reduce, scan, exscan: every op x type x size', async () => {
  let seed = 0;
  for (const T of TYPES) for (const op of OPS) for (const n of SIZES) {
    if (isFloat(T) && ['band', 'bor', 'bxor'].includes(op)) continue;
    if (n > 7 && !['sum', 'max', 'bxor'].includes(op) && T !== Float64Array) continue; // keep the big size to a few ops
    seed++;
    const send = input(T, me, n, seed, op);
    const want = reference(T, op, n, seed, allRanks);
    const got = new T(n);
    await comm.allreduce(send, got, op);
    same(got, want, `allreduce ${op} ${T.name} n=${n}`);
    const root = seed % p;
    const r2 = new T(n);
    await comm.reduce(send, me === root ? r2 : null, op, root);
    if (me === root) same(r2, want, `reduce ${op} ${T.name} n=${n} root ${root}`);
    if (n <= 7) {
      const sc = new T(n);
      await comm.scan(send, sc, op);
      same(sc, reference(T, op, n, seed, allRanks.slice(0, me + 1)), `scan ${op} ${T.name}`);
      const ex = new T(n).fill(isBig(T) ? 9n : 9);
      await comm.exscan(send, ex, op);
      if (me > 0) same(ex, reference(T, op, n, seed, allRanks.slice(0, me)), `exscan ${op} ${T.name}`);
      // In place (send and recv one array), as the reductions above may be.
      const scIn = send.slice();
      await comm.scan(scIn, scIn, op);
      same(scIn, sc, `scan ${op} ${T.name} in place`);
      const exIn = send.slice();
      await comm.exscan(exIn, exIn, op);
      if (me > 0) same(exIn, ex, `exscan ${op} ${T.name} in place`);
    }
  }
}]);

cases.push(['bitwise ops on floats are refused at the call', async () => {
  for (const T of [Float32Array, Float64Array]) for (const op of ['band', 'bor', 'bxor']) {
    throwsWith(() => comm.iallreduce(new T(1), new T(1), op), 'ERR_INVALID_ARG');
  }
  throwsWith(() => comm.iallreduce(new Float64Array(2), new Float32Array(2), 'sum'), 'ERR_INVALID_ARG');
  throwsWith(() => comm.iallreduce(new Float64Array(2), new Float64Array(3), 'sum'), 'ERR_INVALID_ARG');
  throwsWith(() => comm.iallreduce(new Float64Array(2), new Float64Array(2), 'avg'), 'ERR_INVALID_ARG');
  throwsWith(() => comm.ibcast(new Uint8Array(1), p), 'ERR_RANK');
  throwsWith(() => comm.ireduce(new Int32Array(1), new Int32Array(1), 'sum', -1), 'ERR_RANK');
  throwsWith(() => comm.iallgather(new Int32Array(2), new Int32Array(2 * p + 1)), 'ERR_INVALID_ARG');
  throwsWith(() => comm.iallgatherv(new Int32Array(2), new Int32Array(100), [1]), 'ERR_INVALID_ARG');
  throwsWith(() => comm.ireduceScatter(new Int32Array(p), new Int32Array(1), new Array(p).fill(2), 'sum'), 'ERR_INVALID_ARG');
}]);

cases.push(['bcast, gather, scatter, allgather, alltoall and v-variants at every root', async () => {
  for (const n of SIZES) for (let root = 0; root < p; root++) {
    const seed = n + root;
    const b = me === root ? input(Float64Array, root, n, seed) : new Float64Array(n);
    await comm.bcast(b, root);
    same(b, input(Float64Array, root, n, seed), `bcast n=${n} root ${root}`);

    const g = me === root ? new Int32Array(n * p) : null;
    await comm.gather(input(Int32Array, me, n, seed), g, root);
    if (me === root) for (let r = 0; r < p; r++) same(g.subarray(r * n, (r + 1) * n), input(Int32Array, r, n, seed), `gather block ${r}`);

    const sc = new Int16Array(n);
    let all = null;
    if (me === root) { all = new Int16Array(n * p); for (let r = 0; r < p; r++) all.set(input(Int16Array, r, n, seed), r * n); }
    await comm.scatter(all, sc, root);
    same(sc, input(Int16Array, me, n, seed), `scatter n=${n} root ${root}`);

    // v-variants: rank r contributes r + 1 (+ n % 3) elements
    const counts = allRanks.map((r) => r + 1 + (n % 3));
    const total = counts.reduce((a, c) => a + c, 0);
    const mine = input(Uint32Array, me, counts[me], seed);
    const gv = me === root ? new Uint32Array(total) : null;
    await comm.gatherv(mine, gv, counts, root);
    if (me === root) { let o = 0; for (let r = 0; r < p; r++) { same(gv.subarray(o, o + counts[r]), input(Uint32Array, r, counts[r], seed), `gatherv block ${r}`); o += counts[r]; } }
    let sv = null;
    if (me === root) { sv = new Uint32Array(total); let o = 0; for (let r = 0; r < p; r++) { sv.set(input(Uint32Array, r, counts[r], seed), o); o += counts[r]; } }
    const rv = new Uint32Array(counts[me] + 2);
    await comm.scatterv(sv, counts, rv, root);
    same(rv.subarray(0, counts[me]), input(Uint32Array, me, counts[me], seed), `scatterv`);
  }
  for (const n of SIZES) {
    const seed = 3 * n;
    const ag = new Float32Array(n * p);
    await comm.allgather(input(Float32Array, me, n, seed), ag);
    for (let r = 0; r < p; r++) same(ag.subarray(r * n, (r + 1) * n), input(Float32Array, r, n, seed), `allgather n=${n} block ${r}`);
    const counts = allRanks.map((r) => (r % 3) + (n > 7 ? n : 1));
    const agv = new Float32Array(counts.reduce((a, c) => a + c, 0));
    await comm.allgatherv(input(Float32Array, me, counts[me], seed), agv, counts);
    let o = 0;
    for (let r = 0; r < p; r++) { same(agv.subarray(o, o + counts[r]), input(Float32Array, r, counts[r], seed), `allgatherv block ${r}`); o += counts[r]; }

    // alltoall: block for rank t from rank r is input(r, n, seed + t)
    const send = new BigInt64Array(n * p);
    for (let t = 0; t < p; t++) send.set(input(BigInt64Array, me, n, seed + t), t * n);
    const recv = new BigInt64Array(n * p);
    await comm.alltoall(send, recv);
    for (let r = 0; r < p; r++) same(recv.subarray(r * n, (r + 1) * n), input(BigInt64Array, r, n, seed + me), `alltoall from ${r}`);
  }
  // alltoallv: rank r sends (r + t) % 3 + 1 elements to t
  const sc = allRanks.map((t) => ((me + t) % 3) + 1);
  const rc = allRanks.map((r) => ((r + me) % 3) + 1);
  const send = new Int8Array(sc.reduce((a, c) => a + c, 0));
  let o = 0; for (let t = 0; t < p; t++) { send.set(input(Int8Array, me, sc[t], 50 + t), o); o += sc[t]; }
  const recv = new Int8Array(rc.reduce((a, c) => a + c, 0));
  await comm.alltoallv(send, sc, recv, rc);
  o = 0; for (let r = 0; r < p; r++) { same(recv.subarray(o, o + rc[r]), input(Int8Array, r, rc[r], 50 + me), `alltoallv from ${r}`); o += rc[r]; }
}]);

cases.push(['reduceScatter with uneven counts', async () => {
  for (const base of [1, 5000]) {
    const counts = allRanks.map((r) => base + (r % 2));
    const total = counts.reduce((a, c) => a + c, 0);
    const send = input(Float64Array, me, total, base);
    const want = reference(Float64Array, 'sum', total, base, allRanks);
    const recv = new Float64Array(counts[me]);
    await comm.reduceScatter(send, recv, counts, 'sum');
    const off = counts.slice(0, me).reduce((a, c) => a + c, 0);
    same(recv, want.subarray(off, off + counts[me]), `reduceScatter base ${base}`);
  }
}]);

cases.push(['allreduce results are identical bit for bit on every rank (non-exact floats)', async () => {
  for (const n of [3, 40000]) {
    const send = new Float64Array(n).map((_, i) => Math.sin(me * 1000 + i) * 1e-3 + 1 / (me + i + 3));
    const got = new Float64Array(n);
    await comm.allreduce(send, got, 'sum');
    const all = new Float64Array(n * p);
    await comm.allgather(got, all);
    for (let r = 1; r < p; r++) for (let i = 0; i < n; i++) if (!Object.is(all[r * n + i], all[i])) assert.fail(`rank ${r} differs at ${i}`);
  }
}]);

cases.push(['nonblocking collectives overlap each other and point-to-point', async () => {
  const a = new Int32Array(4), b = new Int32Array(4 * p), c = new Float64Array(1000);
  const user = new Int32Array(1);
  const right = (me + 1) % p, left = (me - 1 + p) % p;
  const pr = comm.irecv(user, left, 5); // user tag 5 must not meet collective traffic
  const r1 = comm.iallreduce(new Int32Array([me, 1, 2, 3]), a, 'sum');
  const r2 = comm.iallgather(new Int32Array([me, me, me, me]), b);
  // The root's buffer holds the data before the bcast starts (it may be read at once); the others' is
  // filled with something else, so a result that never arrived shows.
  c.fill(me === 0 ? 2.5 : -1);
  c[999] = me === 0 ? 7.25 : -1;
  const r3 = comm.ibcast(c, 0);
  const ps = comm.isend(new Int32Array([me]), right, 5);
  await Promise.all([r1.wait(), r2.wait(), r3.wait(), pr.wait(), ps.wait()]);
  assert.deepEqual([...a], [(p * (p - 1)) / 2, p, 2 * p, 3 * p]);
  for (let r = 0; r < p; r++) assert.deepEqual([...b.subarray(4 * r, 4 * r + 4)], [r, r, r, r], `allgather block ${r}`);
  for (let i = 0; i < 999; i++) if (c[i] !== 2.5) assert.fail(`ibcast: element ${i} is ${c[i]}, the root sent 2.5`);
  assert.equal(c[999], 7.25, 'ibcast: last element');
  assert.equal(user[0], left);
  await comm.barrier();
}]);

cases.push(['split and dup isolate their traffic', async () => {
  const half = await comm.split(me % 2, -me); // keys reverse the order
  const evens = Math.ceil(p / 2), odds = Math.floor(p / 2);
  assert.equal(half.size, me % 2 === 0 ? evens : odds);
  const members = allRanks.filter((r) => r % 2 === me % 2).sort((x, y) => y - x);
  assert.equal(half.rank, members.indexOf(me));
  const sum = new Int32Array(1);
  await half.allreduce(new Int32Array([me]), sum, 'sum');
  assert.equal(sum[0], members.reduce((x, y) => x + y, 0));
  const none = await comm.split(me === 0 ? -1 : 0, 0);
  assert.equal(none === null, me === 0);
  if (none) assert.equal(none.size, p - 1);
  const twin = await comm.dup();
  // The same tag on comm and twin: each receive gets its own communicator's message.
  const x = new Int32Array(1), y = new Int32Array(1);
  const rx = comm.irecv(x, (me - 1 + p) % p, 7), ry = twin.irecv(y, (me - 1 + p) % p, 7);
  await twin.send(new Int32Array([100 + me]), (me + 1) % p, 7);
  await comm.send(new Int32Array([me]), (me + 1) % p, 7);
  await Promise.all([rx.wait(), ry.wait()]);
  assert.equal(x[0], (me - 1 + p) % p);
  assert.equal(y[0], 100 + ((me - 1 + p) % p));
  const nested = await half.split(0, 0);
  await nested.barrier();
  await twin.barrier();
}]);

const failed = await runCases(comm, cases, { timeoutMs: 120000 });
await comm.finalize();
process.exitCode = failed ? 1 : 0;
