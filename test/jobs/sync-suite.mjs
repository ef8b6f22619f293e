// The synchronous calls (sendSync, recvSync, sendrecvSync, barrierSync,
// bcastSync, allreduceSync, reduceSync, allgatherSync) and the async sendrecv,
// against references computed here or by the async twins, mixed with the
// async API on the same communicator. Runs on 2-4 ranks, processes or threads:
//   railcomm run -n 3 [--threads] test/jobs/sync-suite.mjs
// SYNC_SIZES overrides the message sizes (a comma list). Over ofi (--rails
// ofi,self), SYNC_WIRE_FIRST=1: an async alltoall binds every lane first (a
// synchronous call cannot wait for an address lookup).

import { init, ANY_SOURCE, ANY_TAG, op } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern } from './harness.mjs';

const comm = await init();
const { rank: me, size: p } = comm;
const right = (me + 1) % p, left = (me - 1 + p) % p;
if (process.env.SYNC_WIRE_FIRST === '1') await comm.alltoall(new Uint8Array(p), new Uint8Array(p));
const SIZES = (process.env.SYNC_SIZES ?? '0,1,8,4096,65536,300000,2097152').split(',').map(Number);

function statusIs(st, source, tag, bytes, what) {
  assert.deepEqual({ source: st.source, tag: st.tag, bytes: st.bytes }, { source, tag, bytes }, what);
  assert.ok(Object.isFrozen(st), `${what}: the Status is frozen`);
}

/** Every rank's contribution for a reduction check. */
function input(T, r, n, seed) {
  const a = new T(n);
  for (let i = 0; i < n; i++) a[i] = ((r * 7 + i * 13 + seed) % 9) - 3;
  return a;
}

function sameArray(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < got.length; i++) if (!Object.is(got[i], want[i])) assert.fail(`${what}: element ${i} is ${got[i]}, expected ${want[i]}`);
}

const cases = [
  ['sendSync/recvSync around the ring at every size class', async () => {
    for (const n of SIZES) {
      const out = pattern(n, me), into = new Uint8Array(n);
      // Even ranks send first: blocking sends of rendezvous size wait for their receiver.
      if (me % 2 === 0) {
        statusIs(comm.sendSync(out, right, 3), me, 3, n, `send ${n}`);
        statusIs(comm.recvSync(into, left, 3), left, 3, n, `recv ${n}`);
      } else {
        statusIs(comm.recvSync(into, left, 3), left, 3, n, `recv ${n}`);
        statusIs(comm.sendSync(out, right, 3), me, 3, n, `send ${n}`);
      }
      if (p % 2 === 1 && me === 0) { /* rank p-1 (even) sent to 0 first: covered by the order above */ }
      assert.ok(samePattern(into, n, left), `${n} bytes from rank ${left}`);
    }
  }],
  ['sendrecvSync: a halo exchange both ways at every size (no deadlock, large ones too)', async () => {
    for (const n of SIZES) {
      const a = new Uint8Array(n), b = new Uint8Array(n);
      statusIs(comm.sendrecvSync(pattern(n, me), right, 5, a, left, 5), left, 5, n, `right ${n}`);
      statusIs(comm.sendrecvSync(pattern(n, me + 100), left, 6, b, right, ANY_TAG), right, 6, n, `left ${n}`);
      assert.ok(samePattern(a, n, left) && samePattern(b, n, right + 100), `halo ${n}`);
    }
  }],
  ['the async sendrecv: a halo exchange at every size', async () => {
    for (const n of SIZES) {
      const a = new Uint8Array(n);
      statusIs(await comm.sendrecv(pattern(n, me), right, 7, a, left, 7), left, 7, n, `sendrecv ${n}`);
      assert.ok(samePattern(a, n, left), `sendrecv ${n}`);
    }
  }],
  ['sendSync to itself, then recvSync from itself', async () => {
    const a = new Float64Array(3);
    comm.sendSync(new Float64Array([1.5, me, 3]), me, 9);
    statusIs(comm.recvSync(a, me, 9), me, 9, 24, 'self');
    assert.deepEqual([...a], [1.5, me, 3]);
  }],
  ['recvSync from ANY_SOURCE with ANY_TAG collects every rank', async () => {
    if (me === 0) {
      const seen = new Set();
      const b = new Int32Array(1);
      for (let i = 1; i < p; i++) {
        const st = comm.recvSync(b, ANY_SOURCE, ANY_TAG);
        assert.equal(b[0], st.source * 10 + st.tag, 'payload matches the status');
        seen.add(st.source);
      }
      assert.equal(seen.size, p - 1);
    } else comm.sendSync(new Int32Array([me * 10 + me]), 0, me);
  }],
  ['one sender, mixed calls: messages match in the order sent, whichever call sent or received them', async () => {
    const N = 40;
    if (me === 0) {
      const reqs = [];
      for (let i = 0; i < N; i++) {
        const b = new Int32Array([i]);
        const big = i % 7 === 3 ? new Int32Array(80000).fill(i) : b; // some rendezvous among them
        switch (i % 4) {
          case 0: comm.sendSync(big, 1, 11); break;
          case 1: await comm.send(big, 1, 11); break;
          case 2: reqs.push(comm.isend(big, 1, 11)); break;
          default: comm.sendSync(big, 1, 11);
        }
      }
      for (const r of reqs) await r.wait();
    } else if (me === 1) {
      for (let i = 0; i < N; i++) {
        const b = new Int32Array(80000);
        let st;
        switch (i % 3) {
          case 0: st = comm.recvSync(b, 0, 11); break;
          case 1: st = await comm.recv(b, 0, 11); break;
          default: st = await comm.irecv(b, 0, 11).wait();
        }
        assert.equal(b[0], i, `message ${i} in order`);
        assert.equal(st.bytes, i % 7 === 3 ? 320000 : 4);
      }
    }
  }],
  ['a receive waiting at the call never overtakes a matching message already queued (the next one waits at the ring head)', async () => {
    // The mechanism under recvSync's wait (proto/at-call.ts recvAtCall), driven directly: A sits in the
    // unexpected queue, B behind it at the head of rank 0's ring, undelivered. The wait must give A
    // to recvNow, never take B. (Its loop delivers between looks; CI once saw a ring allreduce step
    // take the next step's block this way.) Ring lanes only: over ofi nothing waits at a ring's head.
    if (comm.world.ctx.rails.some((r) => r.component === 'ofi')) return;
    if (me === 0) {
      comm.sendSync(new Int32Array([1]), 1, 21);
      comm.recvSync(new Int32Array(1), 1, 22);
      comm.sendSync(new Int32Array([2, 2]), 1, 21);
      comm.recvSync(new Int32Array(1), 1, 22);
    } else if (me === 1) {
      await comm.probe(0, 21); // A is queued, not received
      comm.sendSync(new Int32Array(1), 0, 22);
      // B lands while this thread stays off the event loop (nothing delivers it).
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
      const ctx = comm.world.ctx, p2p = ctx.p2p;
      const lane = ctx.polledLane(0); // world rank 0: this is the world communicator
      assert.ok(lane !== null, 'sync calls run over polled lanes');
      const buf = new Int32Array(2), bytes = new Uint8Array(buf.buffer);
      assert.equal(p2p.atCall.recvAtCall(bytes, comm.p2pCtx, 0, 21, lane, ctx.progress), -1, 'the queued message comes first');
      assert.equal(p2p.atCall.recvNow(bytes, comm.p2pCtx, 0, 21), 4, 'A, 4 bytes');
      assert.equal(buf[0], 1);
      const st = comm.recvSync(buf, 0, 21);
      assert.equal(st.bytes, 8);
      assert.deepEqual([...buf], [2, 2], 'then B');
      comm.sendSync(new Int32Array(1), 0, 22);
    }
  }],
  ['recvSync drives outstanding async requests on its rails (they complete while it waits)', async () => {
    if (me === 0) {
      await comm.recv(new Uint8Array(1), 1, 20); // rank 1 has posted its irecvs
      comm.sendSync(new Uint8Array(8).fill(1), 1, 21);
      comm.sendSync(pattern(300000, 4), 1, 22); // rendezvous: it completes only once rank 1 takes it
      comm.sendSync(new Uint8Array(8).fill(3), 1, 23);
    } else if (me === 1) {
      const small = new Uint8Array(8), big = new Uint8Array(300000);
      const r1 = comm.irecv(small, 0, 21);
      const r2 = comm.irecv(big, 0, 22);
      await comm.send(new Uint8Array(1), 0, 20);
      const last = new Uint8Array(8);
      comm.recvSync(last, 0, 23);
      // No await in between: the async receives completed during the sync wait.
      assert.ok(r1.test() !== undefined, 'the small irecv completed during recvSync');
      assert.ok(r2.test() !== undefined, 'the rendezvous irecv completed during recvSync');
      assert.equal(small[0], 1);
      assert.ok(samePattern(big, 300000, 4));
      assert.equal(last[0], 3);
    }
  }],
  ['a too-small receive buffer: ERR_TRUNCATE at the call, the sender unharmed', async () => {
    if (me === 0) comm.sendSync(new Uint8Array(64), 1, 30);
    else if (me === 1) {
      assert.throws(() => comm.recvSync(new Uint8Array(8), 0, 30), (e) => e.code === 'ERR_TRUNCATE');
    }
  }],
  ['sendrecvSync whose receive fails still completes its large send before it returns (the buffer is the caller\'s again)', async () => {
    const N = 3 << 20;
    if (me === 0) {
      const out = new Uint8Array(N).fill(0xaa);
      assert.throws(() => comm.sendrecvSync(out, 1, 31, new Uint8Array(4), 1, 32), (e) => e.code === 'ERR_TRUNCATE');
      out.fill(0xee);
    } else if (me === 1) {
      await comm.send(new Uint8Array(64), 0, 32);
      // The large receive is posted only later, on this rank's event loop.
      await new Promise((r) => setTimeout(r, 100));
      const got = new Uint8Array(N);
      await comm.recv(got, 0, 31);
      assert.equal(got.findIndex((x) => x !== 0xaa), -1, 'bytes written after sendrecvSync returned reached the receiver');
    }
  }],
  ['argument errors are thrown at the call', async () => {
    assert.throws(() => comm.sendSync(new Uint8Array(1), p, 0), (e) => e.code === 'ERR_RANK');
    assert.throws(() => comm.recvSync(new Uint8Array(1), 0, -5), (e) => e.code === 'ERR_TAG');
    assert.throws(() => comm.sendSync('nope', 0, 0), (e) => e.code === 'ERR_INVALID_ARG');
    assert.throws(() => comm.allreduceSync(new Float64Array(2), new Float64Array(3), 'sum'), (e) => e.code === 'ERR_INVALID_ARG');
    assert.throws(() => comm.bcastSync(new Uint8Array(2), p), (e) => e.code === 'ERR_RANK');
    // A DataView, as the async allgather (and the type: T extends ReduceArray) refuses it; the call keeps its place.
    assert.throws(() => comm.allgatherSync(new DataView(new ArrayBuffer(4)), new DataView(new ArrayBuffer(4 * p))), (e) => e.code === 'ERR_INVALID_ARG' && /typed array/.test(e.message));
    const all = new Int32Array(p);
    comm.allgatherSync(new Int32Array([me]), all);
    assert.deepEqual([...all], Array.from({ length: p }, (_, r) => r));
  }],
  ['barrierSync: no rank leaves before the last arrives', async () => {
    // The last rank enters 30 ms late in some rounds; every rank notes (one clock for the host) when it
    // entered and left. Nobody may leave before the late rank entered. Checked after all rounds, so
    // that a failure does not leave the ranks in different collectives. The clock is CLOCK_MONOTONIC
    // (process.hrtime), the same in every process of a host: performance.timeOrigin + now() is not,
    // since Node reads the wall clock and the monotonic one separately at a process's start, and a
    // process preempted between the two carries that gap (1.03 ms once under load, 2026-11-28).
    const wall = () => Number(process.hrtime.bigint()) / 1e6;
    const times = new Float64Array(2 * 20);
    for (let round = 0; round < 20; round++) {
      if (me === p - 1 && round % 5 === 0) await new Promise((r) => setTimeout(r, 30));
      times[2 * round] = wall();
      comm.barrierSync();
      times[2 * round + 1] = wall();
    }
    const all = new Float64Array(2 * 20 * p);
    await comm.allgather(times, all);
    for (let round = 0; round < 20; round++) {
      const lastIn = Math.max(...Array.from({ length: p }, (_, q) => all[q * 40 + 2 * round]));
      // (1 ms for the clocks of two processes.)
      assert.ok(times[2 * round + 1] >= lastIn - 1, `round ${round}: left ${(lastIn - times[2 * round + 1]).toFixed(2)} ms before the last rank entered`);
    }
  }],
  ['bcastSync from every root at every size, typed arrays too', async () => {
    for (const n of SIZES) {
      for (let root = 0; root < p; root++) {
        const b = me === root ? pattern(n, root + 50) : new Uint8Array(n);
        comm.bcastSync(b, root);
        assert.ok(samePattern(b, n, root + 50), `bcast ${n} from ${root}`);
      }
    }
    const f = me === 1 % p ? new Float64Array([1.25, -2, 3e300]) : new Float64Array(3);
    comm.bcastSync(f, 1 % p);
    assert.deepEqual([...f], [1.25, -2, 3e300]);
  }],
  ['allreduceSync and reduceSync equal their async twins (types, ops, lengths, roots)', async () => {
    let seed = 0;
    const TYPES = [Float64Array, Float32Array, Int32Array, Uint8Array, BigInt64Array];
    for (const T of TYPES) for (const o of ['sum', 'max', 'min', 'prod']) for (const n of [0, 1, 3, 7, 5000, 70000]) {
      if (T === BigInt64Array && o === 'prod') continue;
      seed++;
      const mk = () => { const a = input(T === BigInt64Array ? Float64Array : T, me, n, seed); return T === BigInt64Array ? BigInt64Array.from(a, (x) => BigInt(x)) : a; };
      const want = new T(n), got = new T(n);
      await comm.allreduce(mk(), want, o);
      comm.allreduceSync(mk(), got, o);
      sameArray(got, want, `allreduceSync ${T.name} ${o} ${n}`);
      const root = seed % p;
      const rw = me === root ? new T(n) : null, rg = me === root ? new T(n) : null;
      await comm.reduce(mk(), rw, o, root);
      comm.reduceSync(mk(), rg, o, root);
      if (me === root) sameArray(rg, rw, `reduceSync ${T.name} ${o} ${n} root ${root}`);
    }
    // recv may be send itself.
    const x = new Float64Array([me + 1, 2]);
    comm.allreduceSync(x, x, 'sum');
    assert.deepEqual([...x], [(p * (p + 1)) / 2, 2 * p]);
  }],
  ['allreduceSync with a user op that is not commutative combines in rank order', async () => {
    // 2x2 matrix product, row-major: rank order matters.
    const matmul = op((inout, input) => {
      const [a, b, c, d] = input, [e, f, g, h] = inout;
      // inout = input x inout (input is the lower rank's operand)
      inout[0] = a * e + b * g; inout[1] = a * f + b * h; inout[2] = c * e + d * g; inout[3] = c * f + d * h;
    }, { commutative: false });
    const mine = new Float64Array([1, me + 1, 0, 1]);
    const want = new Float64Array(4), got = new Float64Array(4);
    await comm.allreduce(mine, want, matmul);
    comm.allreduceSync(mine, got, matmul);
    sameArray(got, want, 'non-commutative allreduceSync');
  }],
  ['allgatherSync equals allgather (sizes across the slot and the ring threshold)', async () => {
    for (const n of [0, 1, 9, 2000, 40000]) {
      const s = Int32Array.from({ length: n }, (_, i) => me * 1000003 + i);
      const want = new Int32Array(n * p), got = new Int32Array(n * p);
      await comm.allgather(s, want);
      comm.allgatherSync(s, got);
      sameArray(got, want, `allgatherSync ${n}`);
    }
  }],
  ['sync and async collectives interleave on one communicator, and a dup keeps its own', async () => {
    const twin = await comm.dup();
    for (let i = 0; i < 30; i++) {
      const a = new Float64Array([me + i]), b = new Float64Array(1);
      if (i % 3 === 0) comm.allreduceSync(a, b, 'sum'); else await comm.allreduce(a, b, 'sum');
      assert.equal(b[0], (p * (p - 1)) / 2 + p * i);
      if (i % 2 === 0) twin.barrierSync(); else await twin.barrier();
      const c = new Int32Array([me]), all = new Int32Array(p);
      twin.allgatherSync(c, all);
      assert.deepEqual([...all], Array.from({ length: p }, (_, r) => r));
    }
  }],
  ['a sync collective first finishes the shared-memory collectives started before it and not awaited, whichever ranks finished theirs (MPI progress)', async () => {
    const shared = process.env.RAILCOMM_COLL_SHARED_MAX !== '0';
    // The segment is attached by the first collective (the case after this one covers a first one not awaited).
    await comm.barrier();
    const sum = (n, seed) => {
      const s = new Float64Array(n);
      for (let r = 0; r < p; r++) { const a = input(Float64Array, r, n, seed); for (let i = 0; i < n; i++) s[i] += a[i]; }
      return s;
    };
    // A flag box, one slot, one split round, several split rounds (70,000 doubles: three slots; 120,000:
    // four, within RAILCOMM_COLL_SHARED_MAX);
    // started as a nonblocking call (a Request) or an async one (a promise), alone or with a bcast queued
    // behind; `turns`: the event loop turns a few times first, so that a collective may be part way through.
    for (const [n, nonblocking, queued, turns] of [[1, false, false, 0], [1, true, true, 0], [5, false, true, 0], [9000, true, false, 0],
      [70000, false, false, 0], [70000, true, true, 0], [70000, true, false, 2], [120000, false, true, 3]]) {
      // Rank 0 starts first, so its copies wait on a phase; the last to start finishes its own at once.
      if (me !== 0) await new Promise((r) => setTimeout(r, 15));
      const got = new Float64Array(n), bytes = new Uint8Array(n + 3), y = new Float64Array(n), all = new Int32Array(p);
      if (me === p - 1) bytes.set(pattern(n + 3, 9));
      const a1 = input(Float64Array, me, n, 1);
      const r1 = nonblocking ? comm.iallreduce(a1, got, 'sum') : { wait: ((q) => () => q)(comm.allreduce(a1, got, 'sum')) };
      const p2 = queued ? comm.bcast(bytes, p - 1) : null;
      for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
      if (!shared) {
        // Over point-to-point the others continue only on the event loop: refused on every rank.
        assert.throws(() => comm.allreduceSync(input(Float64Array, me, n, 2), y, 'sum'), (e) => e.code === 'ERR_INVALID_ARG' && /wait for its Request/.test(e.message));
        await r1.wait();
        await p2;
        continue;
      }
      // The first synchronous call finishes what came before it: a bcastSync, or an allreduceSync.
      if (!queued) comm.bcastSync(bytes, p - 1);
      comm.allreduceSync(input(Float64Array, me, n, 2), y, 'sum');
      sameArray(y, sum(n, 2), `allreduceSync of ${n} after them`);
      // Both were finished at the call: their results are there before their promises settle.
      sameArray(got, sum(n, 1), `${nonblocking ? 'iallreduce' : 'allreduce'} of ${n} not awaited`);
      assert.ok(samePattern(bytes, n + 3, 9), `bcast${queued ? '' : 'Sync'} of ${n + 3} bytes`);
      comm.allgatherSync(new Int32Array([me]), all);
      assert.deepEqual([...all], Array.from({ length: p }, (_, r) => r));
      await r1.wait();
      await p2;
      // And the next async collective matches on every rank.
      const z = new Float64Array(1);
      await comm.allreduce(new Float64Array([me]), z, 'sum');
      assert.equal(z[0], (p * (p - 1)) / 2);
    }
  }],
  ['a synchronous call of another communicator, or a recvSync, moves a shared collective that waits for this rank (MPI progress)', async () => {
    if (process.env.RAILCOMM_COLL_SHARED_MAX === '0') return;
    const other = await comm.dup();
    await other.barrier();
    const n = 70000;
    const want = new Float64Array(n);
    for (let r = 0; r < p; r++) { const a = input(Float64Array, r, n, 4); for (let i = 0; i < n; i++) want[i] += a[i]; }
    for (const how of ['barrierSync of another communicator', 'recvSync']) {
      const got = new Float64Array(n), box = new Int32Array(1);
      // Three rounds: the others finish it only once rank 0 arrives in the next round, and only then
      // join rank 0's synchronous call (or send what its recvSync waits for).
      const req = comm.iallreduce(input(Float64Array, me, n, 4), got, 'sum');
      if (me === 0) {
        if (how === 'recvSync') comm.recvSync(box, 1, 44); else other.barrierSync();
      } else {
        await req.wait();
        if (how === 'recvSync') { if (me === 1) await comm.send(new Int32Array([7]), 0, 44); } else other.barrierSync();
      }
      await req.wait();
      sameArray(got, want, `iallreduce around a ${how}`);
      if (how === 'recvSync' && me === 0) assert.equal(box[0], 7);
    }
  }],
  ['a synchronous call of another communicator, or a recvSync, also starts a shared collective queued behind one that waits (MPI progress)', async () => {
    if (process.env.RAILCOMM_COLL_SHARED_MAX === '0') return;
    const other = await comm.dup();
    await other.barrier();
    await comm.barrier();
    const want = (p * (p + 1)) / 2;
    for (const how of ['barrierSync of another communicator', 'recvSync']) {
      const a = new Float64Array(1), b = new Float64Array(1), box = new Int32Array(1);
      // Rank 0 starts first: its first copy waits on a phase, its second queues behind it; the others
      // finish the first at once and wait in the second for rank 0, before they join its synchronous call.
      if (me !== 0) await new Promise((r) => setTimeout(r, 30));
      const r1 = comm.iallreduce(new Float64Array([me + 1]), a, 'sum');
      const r2 = comm.iallreduce(new Float64Array([10 * (me + 1)]), b, 'sum');
      if (me === 0) {
        if (how === 'recvSync') comm.recvSync(box, 1, 45); else other.barrierSync();
      } else {
        await r1.wait();
        await r2.wait();
        if (how === 'recvSync') { if (me === 1) await comm.send(new Int32Array([7]), 0, 45); } else other.barrierSync();
      }
      await r1.wait();
      await r2.wait();
      assert.deepEqual([a[0], b[0]], [want, 10 * want], `two iallreduce around a ${how}`);
      if (how === 'recvSync' && me === 0) assert.equal(box[0], 7);
    }
  }],
  ['a sync collective while a nonblocking one over point-to-point runs (alltoall), or the first one of a communicator: ERR_INVALID_ARG on every rank, no hang', async () => {
    const r = comm.ialltoall(new Uint8Array(p * 4).fill(me), new Uint8Array(p * 4));
    assert.throws(() => comm.barrierSync(), (e) => e.code === 'ERR_INVALID_ARG' && /wait for its Request/.test(e.message));
    assert.throws(() => comm.allreduceSync(new Float64Array(1), new Float64Array(1), 'sum'), (e) => e.code === 'ERR_INVALID_ARG');
    await r.wait();
    comm.barrierSync();
    // A new communicator's first collective sets up its shared memory over point-to-point.
    const fresh = await comm.dup();
    const first = fresh.ibarrier();
    assert.throws(() => fresh.barrierSync(), (e) => e.code === 'ERR_INVALID_ARG' && /(first collective|wait for its Request)/.test(e.message));
    await first.wait();
    fresh.barrierSync();
  }],
];

const failed = await runCases(comm, cases, { timeoutMs: 60000 });
await comm.finalize();
process.exit(failed > 0 ? 1 : 0);
