// The second-wave API against sequential references, one job per rank count
// and mode: object collectives, user-defined ops (commutative and not),
// dimsCreate / cartCreate / shift with a halo exchange on a periodic 2-D grid,
// waitSome / testAll / testAny, and argument errors.
//   railcomm run -n P [--threads] [--rails tcp] test/jobs/api-suite.mjs
// Every rank computes every rank's input, so each checks its result alone.

import { init, op, dimsCreate, waitAll, waitAny, waitSome, testAll, testAny, CartCommunicator, PROC_NULL, ANY_TAG } from '../../dist/index.js';
import { runCases, assert, throwsWith, rejectsWith } from './harness.mjs';

const comm = await init();
const { rank: me, size: p } = comm;
const ranks = Array.from({ length: p }, (_, r) => r);

/** A value with the kinds structured clone carries. */
const valueOf = (r) => ({ rank: r, name: `r${r}`, list: [r, r * 2], map: new Map([[r, 'x'.repeat(r)]]), f: new Float64Array([r + 0.5]) });
const sameValue = (got, r, what) => {
  assert.equal(got.rank, r, what);
  assert.equal(got.name, `r${r}`, what);
  assert.deepEqual(got.list, [r, r * 2], what);
  assert.equal(got.map.get(r), 'x'.repeat(r), what);
  assert.ok(got.f instanceof Float64Array && got.f[0] === r + 0.5, what);
};

/**
 * Affine maps x -> m*x + c (mod 2^32), one per element packed as m * 2^32 + c:
 * their composition a . b (apply b, then a) is associative and not commutative,
 * and works element by element, as user ops must.
 */
const M32 = (1n << 32n) - 1n;
const compose = op((inout, input) => {
  for (let i = 0; i < inout.length; i++) {
    const a = inout[i], b = input[i];
    const ma = a >> 32n, ca = a & M32, mb = b >> 32n, cb = b & M32;
    inout[i] = (((ma * mb) & M32) << 32n) | ((ma * cb + ca) & M32);
  }
});
const maps = (r, n) => BigUint64Array.from({ length: n }, (_, i) => (BigInt(2 * ((r + i) % 5) + 1) << 32n) | BigInt((r * 7 + i * 3) % 11));
const composeRef = (rs, n) => {
  const acc = maps(rs[0], n);
  for (const r of rs.slice(1)) compose.fn(acc, maps(r, n));
  return acc;
};
/** A commutative user op: element-wise max of absolute values. */
const absMax = op((inout, input) => { for (let i = 0; i < inout.length; i++) inout[i] = Math.max(Math.abs(inout[i]), Math.abs(input[i])); }, { commutative: true });
const ints = (r, n) => Int32Array.from({ length: n }, (_, i) => ((r * 5 + i * 3) % 11) - 5);
const absMaxRef = (rs, n) => {
  const acc = ints(rs[0], n);
  for (const r of rs.slice(1)) absMax.fn(acc, ints(r, n));
  return acc;
};

// Short vectors, and ones above the ring threshold (40000 x 8 B = 320 KiB >=
// RAILCOMM_COLL_ALLREDUCE_RING, and above the shared path's split size), which
// a non-commutative op must not take out of rank order.
const NS = [3, 40000];

const cases = [
  ['bcastObject from every root', async () => {
    for (const root of new Set([0, p - 1, p >> 1])) {
      const mine = me === root ? valueOf(root) : undefined;
      const got = await comm.bcastObject(mine, root);
      sameValue(got, root, `root ${root}`);
      if (me === root) assert.equal(got, mine, 'the root gets its own value back');
    }
    assert.equal(await comm.bcastObject(me === 0 ? null : 'ignored', 0), null);
  }],
  ['gatherObject: an array at the root, null elsewhere', async () => {
    const root = p - 1;
    const got = await comm.gatherObject(valueOf(me), root);
    if (me === root) { assert.equal(got.length, p); got.forEach((v, r) => sameValue(v, r, `from ${r}`)); } else assert.equal(got, null);
    // Values of very different sizes.
    const big = await comm.gatherObject('y'.repeat(me * 30000), 0);
    if (me === 0) big.forEach((v, r) => assert.equal(v.length, r * 30000));
  }],
  ['allgatherObject', async () => {
    const got = await comm.allgatherObject(valueOf(me));
    assert.equal(got.length, p);
    got.forEach((v, r) => sameValue(v, r, `from ${r}`));
  }],
  ['alltoallObject', async () => {
    const got = await comm.alltoallObject(ranks.map((j) => ({ from: me, to: j, pad: 'z'.repeat((me + j) * 100) })));
    assert.deepEqual(got.map((v) => [v.from, v.to, v.pad.length]), ranks.map((i) => [i, me, (i + me) * 100]));
  }],
  ['reduceObject and allreduceObject fold in rank order', async () => {
    const cat = (a, b) => a + b;
    for (const root of new Set([0, p - 1])) {
      const got = await comm.reduceObject(`<${me}>`, cat, root);
      assert.equal(got, me === root ? ranks.map((r) => `<${r}>`).join('') : null);
    }
    const all = await comm.allreduceObject({ n: 1, seen: [me] }, (a, b) => ({ n: a.n + b.n, seen: [...a.seen, ...b.seen] }));
    assert.deepEqual(all, { n: p, seen: ranks });
  }],
  ['user op, not commutative: allreduce, reduce, scan, exscan, reduceScatter in rank order', async () => {
    for (const n of NS) {
      const want = composeRef(ranks, n);
      const out = new BigUint64Array(n);
      await comm.allreduce(maps(me, n), out, compose);
      assert.deepEqual(out, want, `allreduce n=${n}`);
      // In place.
      const inPlace = maps(me, n);
      await comm.allreduce(inPlace, inPlace, compose);
      assert.deepEqual(inPlace, want, `allreduce in place n=${n}`);
      for (const root of new Set([0, p - 1, p >> 1])) {
        const r = me === root ? new BigUint64Array(n) : null;
        await comm.reduce(maps(me, n), r, compose, root);
        if (me === root) assert.deepEqual(r, want, `reduce to ${root} n=${n}`);
      }
      const sc = new BigUint64Array(n);
      await comm.scan(maps(me, n), sc, compose);
      assert.deepEqual(sc, composeRef(ranks.slice(0, me + 1), n), `scan n=${n}`);
      const ex = new BigUint64Array(n);
      await comm.exscan(maps(me, n), ex, compose);
      if (me > 0) assert.deepEqual(ex, composeRef(ranks.slice(0, me), n), `exscan n=${n}`);
    }
    const counts = ranks.map((r) => 3 * r + 1);
    const n = counts.reduce((a, b) => a + b, 0);
    const recv = new BigUint64Array(counts[me]);
    await comm.reduceScatter(maps(me, n), recv, counts, compose);
    const off = counts.slice(0, me).reduce((a, b) => a + b, 0);
    assert.deepEqual(recv, composeRef(ranks, n).subarray(off, off + counts[me]));
    // Nonblocking twin.
    const out = new BigUint64Array(5);
    await comm.iallreduce(maps(me, 5), out, compose).wait();
    assert.deepEqual(out, composeRef(ranks, 5));
  }],
  ['user op, commutative: every algorithm', async () => {
    for (const n of [3, 70000]) {
      const out = new Int32Array(n);
      await comm.allreduce(ints(me, n), out, absMax);
      assert.deepEqual(out, absMaxRef(ranks, n), `allreduce n=${n}`);
      const r = me === 1 % p ? new Int32Array(n) : null;
      await comm.reduce(ints(me, n), r, absMax, 1 % p);
      if (r !== null) assert.deepEqual(r, absMaxRef(ranks, n), `reduce n=${n}`);
    }
    const counts = ranks.map((r) => r + 2);
    const n = counts.reduce((a, b) => a + b, 0);
    const recv = new Int32Array(counts[me]);
    await comm.reduceScatter(ints(me, n), recv, counts, absMax);
    const off = counts.slice(0, me).reduce((a, b) => a + b, 0);
    assert.deepEqual(recv, absMaxRef(ranks, n).subarray(off, off + counts[me]));
  }],
  ['dimsCreate has MPI_Dims_create results', async () => {
    const table = [[1, 1, [1]], [7, 2, [7, 1]], [12, 2, [4, 3]], [16, 3, [4, 2, 2]], [24, 3, [4, 3, 2]], [36, 2, [6, 6]], [1, 3, [1, 1, 1]],
      [60, 3, [5, 4, 3]], [64, 3, [4, 4, 4]], [30, 4, [5, 3, 2, 1]], [1, 0, []]];
    for (const [n, d, want] of table) assert.deepEqual(dimsCreate(n, d), want, `dimsCreate(${n}, ${d})`);
    assert.deepEqual(dimsCreate(12, [0, 2]), [6, 2]);
    assert.deepEqual(dimsCreate(1_000_000_007, 2), [1_000_000_007, 1], 'a large prime (divisors by trial division to its root)');
    assert.deepEqual(dimsCreate(12, [3, 0, 0]), [3, 2, 2]);
    assert.deepEqual(dimsCreate(p, 2).reduce((a, b) => a * b, 1), p);
    throwsWith(() => dimsCreate(12, [5, 0]), 'ERR_INVALID_ARG');
    throwsWith(() => dimsCreate(0, 2), 'ERR_INVALID_ARG');
    throwsWith(() => dimsCreate('4', 2), 'ERR_INVALID_ARG');
    throwsWith(() => dimsCreate(4, -1), 'ERR_INVALID_ARG');
  }],
  ['cartCreate: coords, shift, rankOf, edges, dup, ranks beyond the grid', async () => {
    const dims = dimsCreate(p, 2);
    const cart = await comm.cartCreate(dims, [true, false], false);
    assert.ok(cart instanceof CartCommunicator);
    assert.equal(cart.size, p);
    assert.deepEqual(cart.dims, dims);
    const [x, y] = cart.coords;
    assert.equal(x * dims[1] + y, cart.rank, 'row-major: the last dimension varies fastest');
    for (let r = 0; r < p; r++) assert.equal(cart.rankOf(cart.coordsOf(r)), r);
    const s0 = cart.shift(0, 1);
    assert.deepEqual(s0, { source: cart.rankOf([x - 1, y]), dest: cart.rankOf([x + 1, y]) }, 'dimension 0 wraps');
    const s1 = cart.shift(1, 1);
    assert.equal(s1.dest, y + 1 < dims[1] ? cart.rankOf([x, y + 1]) : PROC_NULL, 'dimension 1 ends');
    assert.equal(s1.source, y > 0 ? cart.rankOf([x, y - 1]) : PROC_NULL);
    assert.deepEqual(cart.shift(1, -1), { source: s1.dest, dest: s1.source });
    throwsWith(() => cart.rankOf([0, dims[1]]), 'ERR_RANK');
    throwsWith(() => cart.shift(2, 1), 'ERR_INVALID_ARG');
    const twin = await cart.dup();
    assert.ok(twin instanceof CartCommunicator);
    assert.deepEqual(twin.coords, cart.coords);
    // A grid of fewer ranks: the others get null.
    const small = await comm.cartCreate([Math.max(1, p - 1)], true);
    if (me < Math.max(1, p - 1)) assert.deepEqual(small.coords, [me]); else assert.equal(small, null);
    // It is a working communicator.
    const sum = new Float64Array(1);
    await cart.allreduce(new Float64Array([me]), sum, 'sum');
    assert.equal(sum[0], (p * (p - 1)) / 2);
  }],
  ['halo exchange on a periodic 2-D grid (cartCreate + shift)', async () => {
    const dims = dimsCreate(p, 2);
    const cart = await comm.cartCreate(dims, [true, true]);
    const N = 6; // local block N x N plus a halo of one cell
    const W = N + 2;
    const G = [dims[0] * N, dims[1] * N];
    const f = (gi, gj) => ((gi + G[0]) % G[0]) * 1000 + ((gj + G[1]) % G[1]);
    const [cx, cy] = cart.coords;
    const u = new Float64Array(W * W).fill(-1);
    for (let i = 0; i < N; i++) for (let j = 0; j < N; j++) u[(i + 1) * W + (j + 1)] = f(cx * N + i, cy * N + j);
    const row = (i) => u.slice(i * W + 1, i * W + 1 + N);
    const col = (j) => Float64Array.from({ length: N }, (_, i) => u[(i + 1) * W + j]);
    for (let step = 0; step < 3; step++) {
      const up = cart.shift(0, 1), side = cart.shift(1, 1);
      const inN = new Float64Array(N), inS = new Float64Array(N), inW = new Float64Array(N), inE = new Float64Array(N);
      // Tag per direction: with 1 or 2 ranks along a dimension both neighbours are the same rank.
      const reqs = [
        cart.irecv(inN, up.source, 10), cart.irecv(inS, up.dest, 11), cart.irecv(inW, side.source, 12), cart.irecv(inE, side.dest, 13),
        cart.isend(row(N), up.dest, 10), cart.isend(row(1), up.source, 11), cart.isend(col(N), side.dest, 12), cart.isend(col(1), side.source, 13),
      ];
      await waitAll(reqs);
      u.set(inN, 1); u.set(inS, (N + 1) * W + 1);
      for (let i = 0; i < N; i++) { u[(i + 1) * W] = inW[i]; u[(i + 1) * W + N + 1] = inE[i]; }
      for (let k = 0; k < N; k++) {
        assert.equal(u[k + 1], f(cx * N - 1, cy * N + k), `north halo ${k}`);
        assert.equal(u[(N + 1) * W + k + 1], f(cx * N + N, cy * N + k), `south halo ${k}`);
        assert.equal(u[(k + 1) * W], f(cx * N + k, cy * N - 1), `west halo ${k}`);
        assert.equal(u[(k + 1) * W + N + 1], f(cx * N + k, cy * N + N), `east halo ${k}`);
      }
    }
  }],
  ['PROC_NULL: every point-to-point call naming it completes at once and moves nothing', async () => {
    const none = { source: PROC_NULL, tag: ANY_TAG, bytes: 0 };
    const buf = new Uint8Array([7, 7, 7]);
    assert.deepEqual(await comm.send(buf, PROC_NULL, 3), none);
    assert.deepEqual(await comm.recv(buf, PROC_NULL, 3), none);
    assert.deepEqual(await comm.recv(buf, PROC_NULL), none);
    const reqs = [comm.isend(buf, PROC_NULL, 1), comm.irecv(buf, PROC_NULL, ANY_TAG, { signal: new AbortController().signal })];
    assert.ok(reqs.every((r) => r.done));
    assert.deepEqual(testAll(reqs), [none, none]);
    assert.deepEqual(await comm.sendrecv(buf, PROC_NULL, 1, buf, PROC_NULL, 2), none);
    assert.deepEqual(await comm.probe(PROC_NULL), none);
    assert.deepEqual(comm.iprobe(PROC_NULL, 4), none);
    const m = await comm.mprobe(PROC_NULL);
    assert.equal(m.source, PROC_NULL); assert.equal(m.bytes, 0);
    assert.deepEqual(await m.recv(buf), none);
    assert.deepEqual(await comm.improbe(PROC_NULL).recv(buf), none);
    assert.deepEqual(await comm.recvBytes(PROC_NULL), { data: new Uint8Array(0), source: PROC_NULL, tag: ANY_TAG });
    assert.deepEqual(await comm.recvObject(PROC_NULL), { value: undefined, source: PROC_NULL, tag: ANY_TAG });
    assert.deepEqual(await comm.sendObject({ a: 1 }, PROC_NULL), none);
    // The synchronous calls need no rail for it, so they work over tcp too.
    assert.deepEqual(comm.sendSync(buf, PROC_NULL, 0), none);
    assert.deepEqual(comm.recvSync(buf, PROC_NULL, 0), none);
    assert.deepEqual(comm.sendrecvSync(buf, PROC_NULL, 0, buf, PROC_NULL, 0), none);
    assert.deepEqual([...buf], [7, 7, 7], 'nothing was written');
    // Checks still run: a bad buffer or tag throws, and other negatives are not ranks.
    throwsWith(() => comm.send(5, PROC_NULL), 'ERR_INVALID_ARG');
    throwsWith(() => comm.isend(buf, PROC_NULL, -3), 'ERR_TAG');
    throwsWith(() => comm.send(buf, -3), 'ERR_RANK');
    throwsWith(() => comm.send(buf, -1), 'ERR_RANK');  // ANY_SOURCE is not a destination
    throwsWith(() => comm.bcast(buf, PROC_NULL), 'ERR_RANK');  // nor is PROC_NULL a root
    // A ring shift that is not periodic: the ends exchange with PROC_NULL, no branch.
    const line = await comm.cartCreate([p], [false]);
    const { source, dest } = line.shift(0, 1);
    const got = new Int32Array([-1]);
    const st = await line.sendrecv(new Int32Array([me]), dest, 9, got, source, 9);
    if (me === 0) { assert.equal(got[0], -1); assert.deepEqual(st, none); } else { assert.equal(got[0], me - 1); assert.equal(st.source, me - 1); }
    await line.barrier();
  }],
  ['waitSome, testAll, testAny', async () => {
    const peer = (me + 1) % p, from = (me - 1 + p) % p;
    const bufs = [0, 1, 2].map(() => new Uint8Array(4));
    const recvs = bufs.map((b, i) => comm.irecv(b, from, 40 + i));
    assert.equal(testAll(recvs), undefined);
    assert.equal(testAny(recvs), undefined);
    assert.deepEqual(testAll([]), []);
    assert.equal(testAny([]), undefined);
    assert.deepEqual(await waitSome([]), []);
    await comm.barrier();
    // Only tag 41 is sent first: waitSome returns it (and nothing else is there to return).
    await comm.send(new Uint8Array([1, 1, 1, 1]), peer, 41);
    const some = await waitSome(recvs);
    assert.ok(some.length >= 1 && some.every((s) => s.index === 1), JSON.stringify(some));
    assert.deepEqual(some[0].status, { source: from, tag: 41, bytes: 4 });
    assert.equal(testAny(recvs).index, 1);
    await comm.barrier();
    await comm.send(new Uint8Array(4), peer, 40);
    await comm.send(new Uint8Array(4), peer, 42);
    await waitAll(recvs);
    assert.deepEqual(testAll(recvs).map((s) => s.tag), [40, 41, 42]);
    const again = await waitSome(recvs);
    assert.deepEqual(again.map((s) => s.index), [0, 1, 2]);
    // A failed request: testAll throws it even behind a pending one.
    const pending = comm.irecv(new Uint8Array(1), from, 49);
    const cancelled = comm.irecv(new Uint8Array(1), from, 48);
    cancelled.cancel();
    throwsWith(() => testAll([pending, cancelled]), 'ERR_CANCELLED');
    await rejectsWith(waitSome([pending, cancelled]), 'ERR_CANCELLED');
    pending.cancel();
    throwsWith(() => testAll([recvs[0], 'x']), 'ERR_INVALID_ARG');
    throwsWith(() => testAny(null), 'ERR_INVALID_ARG');
    throwsWith(() => waitSome({}), 'ERR_INVALID_ARG');
  }],
  ['wrong arguments throw at the call, saying what they are', async () => {
    const buf = new Uint8Array(1);
    const e1 = throwsWith(() => comm.isend(buf, '1', 0), 'ERR_RANK');
    assert.match(e1.message, /'1' is a string, not an integer/);
    const e2 = throwsWith(() => comm.irecv(buf, 0, '7'), 'ERR_TAG');
    assert.match(e2.message, /'7' is a string, not an integer/);
    const e3 = throwsWith(() => comm.isend(buf, 1.5, 0), 'ERR_RANK');
    assert.match(e3.message, /1\.5 is not an integer/);
    const e4 = throwsWith(() => comm.ibcast(buf, '0'), 'ERR_RANK');
    assert.match(e4.message, /root '0' is a string/);
    throwsWith(() => comm.isend(buf, p, 0), 'ERR_RANK');
    throwsWith(() => comm.bcastObject(1, '0'), 'ERR_RANK');
    throwsWith(() => comm.gatherObject(() => 1, 0), 'ERR_INVALID_ARG');
    throwsWith(() => comm.alltoallObject([...ranks, 0]), 'ERR_INVALID_ARG');
    // The block a rank sends itself, with counts that disagree (every rank at once, so the call is refused everywhere).
    const own = (n) => ranks.map((r) => (r === me ? n : 1));
    const e8 = throwsWith(() => comm.alltoallv(new Int8Array(2 * p), own(2), new Int8Array(2 * p), own(1)), 'ERR_INVALID_ARG');
    assert.match(e8.message, new RegExp(`sendCounts\\[${me}\\] is 2 but recvCounts\\[${me}\\] is only 1`));
    throwsWith(() => comm.reduceObject(1, 'sum', 0), 'ERR_INVALID_ARG');
    throwsWith(() => comm.iallreduce(new Float64Array(1), new Float64Array(1), 'avg'), 'ERR_INVALID_ARG');
    throwsWith(() => op('sum'), 'ERR_INVALID_ARG');
    throwsWith(() => op(() => {}, { commutative: 'yes' }), 'ERR_INVALID_ARG');
    throwsWith(() => comm.abort(0), 'ERR_INVALID_ARG');
    throwsWith(() => comm.abort('3'), 'ERR_INVALID_ARG');
    await rejectsWith(() => comm.cartCreate([p + 1], true), 'ERR_INVALID_ARG');
    await rejectsWith(() => comm.cartCreate([p], [true, false]), 'ERR_INVALID_ARG');
    await rejectsWith(() => comm.cartCreate([p], true, 'no'), 'ERR_INVALID_ARG');
    // Values shown as they are: a string quoted, not printed as the number it looks like.
    assert.match(throwsWith(() => comm.alloc('8'), 'ERR_INVALID_ARG').message, /alloc\('8'\)/);
    assert.match(throwsWith(() => comm.alloc(2 ** 53), 'ERR_INVALID_ARG').message, /expected a byte count/);
    // Past what one typed array holds (Node 20: 4 GiB), or past what can be allocated (Node 22+ allow 2^53 - 1).
    assert.match(throwsWith(() => comm.alloc(2 ** 50), 'ERR_INVALID_ARG').message, /at most \d+ bytes|cannot allocate/);
    await rejectsWith(() => comm.allocWindow(2 ** 50), 'ERR_INVALID_ARG');
    // A signal is anything of AbortSignal's shape (RequestOptions.signal: AbortSignalLike).
    const like = { aborted: false, reason: undefined, addEventListener() {}, removeEventListener() {} };
    const r = comm.irecv(new Uint8Array(1), 0, 9999, { signal: like });
    r.cancel();
    await rejectsWith(r.wait(), 'ERR_CANCELLED');
    throwsWith(() => comm.irecv(new Uint8Array(1), 0, 9999, { signal: { aborted: false } }), 'ERR_INVALID_ARG');
    // Buffers whose ArrayBuffer was transferred away, in collectives as in point-to-point.
    const gone = () => { const a = new Float64Array(4); structuredClone(a.buffer, { transfer: [a.buffer] }); return a; };
    throwsWith(() => comm.ibcast(gone(), 0), 'ERR_INVALID_ARG');
    throwsWith(() => comm.iallreduce(gone(), new Float64Array(4), 'sum'), 'ERR_INVALID_ARG');
    throwsWith(() => comm.iallreduce(new Float64Array(4), gone(), 'sum'), 'ERR_INVALID_ARG');
    throwsWith(() => comm.ialltoall(gone(), new Float64Array(4 * p)), 'ERR_INVALID_ARG');
    // (Over tcp a synchronous call is refused first: ERR_NO_RAIL.)
    const e7 = throwsWith(() => comm.bcastSync(gone(), 0), process.env.RAILCOMM_RAILS === 'tcp' && p > 1 ? 'ERR_NO_RAIL' : 'ERR_INVALID_ARG');
    assert.ok(e7.message.length > 20);
    // A message that sendObject did not send: recvObject says so with a code.
    const [left, right] = [(comm.rank + p - 1) % p, (comm.rank + 1) % p];
    const e6 = await rejectsWith(Promise.all([comm.recvObject(left, 4242), comm.send(new Uint8Array([1, 2, 3]), right, 4242)]), 'ERR_INVALID_ARG');
    assert.match(e6.message, /not a value serialised by railcomm/);
    // Calls that return a promise throw at the call too: with wrong arguments there is nothing to await.
    throwsWith(() => comm.probe('1', 0), 'ERR_RANK');
    throwsWith(() => comm.mprobe(0, -5), 'ERR_TAG');
    throwsWith(() => comm.recvBytes(p, 0), 'ERR_RANK');
    throwsWith(() => comm.recvObject(0, 'x'), 'ERR_TAG');
    throwsWith(() => comm.split(1.5, 0), 'ERR_INVALID_ARG');
    throwsWith(() => comm.split(0, 'k'), 'ERR_INVALID_ARG');
    throwsWith(() => comm.cartCreate([p], true, 'no'), 'ERR_INVALID_ARG');
    throwsWith(() => comm.window('buf'), 'ERR_INVALID_ARG');
    throwsWith(() => comm.allocWindow(-1), 'ERR_INVALID_ARG');
    throwsWith(() => waitAny([]), 'ERR_INVALID_ARG');
    const w = await comm.allocWindow(8);
    throwsWith(() => w.lock(p), 'ERR_RANK');
    throwsWith(() => w.lock(0, 'both'), 'ERR_INVALID_ARG');
    throwsWith(() => w.unlock(0), 'ERR_INVALID_ARG');
    await w.free();
    throwsWith(() => w.fence(), 'ERR_INVALID_ARG');
    throwsWith(() => w.free(), 'ERR_INVALID_ARG');
    // accumulate applies at the target: a user-defined op is refused, saying so.
    const win = await comm.allocWindow(8);
    await win.fence();
    const e5 = throwsWith(() => win.accumulate(new Int32Array(1), 0, 0, absMax), 'ERR_INVALID_ARG');
    assert.match(e5.message, /user-defined ops .* are not supported/);
    await win.fence();
    await win.free();
  }],
];

const failed = await runCases(comm, cases);
await comm.finalize();
process.exit(failed === 0 ? 0 : 1);
