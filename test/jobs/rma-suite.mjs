// One-sided communication (windows) on every rank count and rail:
//   railcomm run -n P [--threads | --threads-per-process K] test/jobs/rma-suite.mjs
// Every rank knows what every other rank does, so each can check the result
// alone. Results are exact: integer arithmetic, or sums of small integers.

import fc from 'fast-check';
import { randomInt } from 'node:crypto';
import { init, ErrorCode } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern, rejectsWith, throwsWith } from './harness.mjs';

const comm = await init();
const { rank: me, size: p } = comm;
const next = (me + 1) % p;
const prev = (me + p - 1) % p;
const K = Number(process.env.RMA_ITERS ?? 20);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const cases = [
  ['window creation and argument errors', async () => {
    const w = await comm.allocWindow(64);
    assert.equal(w.buffer.byteLength, 64);
    assert.ok(w.buffer.every((b) => b === 0), 'allocWindow memory is zero-filled');
    assert.equal(w.buffer.byteOffset % 8, 0);
    // Outside an epoch.
    throwsWith(() => w.put(new Uint8Array(1), next, 0), ErrorCode.INVALID_ARG);
    await w.fence();
    throwsWith(() => w.put(new Uint8Array(8), next, 60), ErrorCode.INVALID_ARG);      // past the end
    throwsWith(() => w.get(new Uint8Array(1), next, -1), ErrorCode.INVALID_ARG);       // negative offset
    throwsWith(() => w.put(new Uint8Array(1), p, 0), ErrorCode.RANK);                   // no such rank
    throwsWith(() => w.fetchAndOp(1, next, 2, 'sum', 'i32'), ErrorCode.INVALID_ARG);    // misaligned
    throwsWith(() => w.fetchAndOp(1, next, 0, 'sum', 'i64'), ErrorCode.INVALID_ARG);    // number for a 64-bit type
    throwsWith(() => w.fetchAndOp(1n, next, 0, 'sum', 'i32'), ErrorCode.INVALID_ARG);   // bigint for i32
    throwsWith(() => w.fetchAndOp(1, next, 0, 'band', 'f64'), ErrorCode.INVALID_ARG);   // bitwise on float
    throwsWith(() => w.fetchAndOp(1, next, 0, 'prod', 'i32'), ErrorCode.INVALID_ARG);   // not a fetch op
    throwsWith(() => w.fetchAndOp(1, next, 0, 'sum', 'i16'), ErrorCode.INVALID_ARG);    // not an atomic type
    throwsWith(() => w.accumulate(new Float64Array(1), next, 0, 'bxor'), ErrorCode.INVALID_ARG);
    throwsWith(() => w.accumulate(new Int32Array(1), next, 2, 'sum'), ErrorCode.INVALID_ARG);
    throwsWith(() => w.accumulate(new DataView(new ArrayBuffer(4)), next, 0, 'sum'), ErrorCode.INVALID_ARG);
    await rejectsWith(() => w.lock(next, 'sideways'), ErrorCode.INVALID_ARG);
    await rejectsWith(() => w.unlock(next), ErrorCode.INVALID_ARG);                     // not locked
    await w.fence();
    await w.free();
    await rejectsWith(() => w.fence(), ErrorCode.INVALID_ARG);                          // freed
    await rejectsWith(() => comm.allocWindow(-1), ErrorCode.INVALID_ARG);
  }],

  ['fence epochs: put to the next rank, get from the previous one', async () => {
    const n = 4096;
    const w = await comm.allocWindow(n * 2);
    await w.fence();
    await w.put(pattern(n, me), next, n);
    await w.fence();
    assert.ok(samePattern(w.buffer.subarray(n), n, prev), 'the previous rank put its pattern here');
    const got = new Uint8Array(n);
    const pending = w.get(got, prev, n); // the previous rank's window holds the pattern of prev-1
    await w.fence();
    await pending;
    assert.ok(samePattern(got, n, (prev + p - 1) % p), 'get read the previous rank\'s window');
    await w.free();
  }],

  ['window over an existing buffer (with a byte offset)', async () => {
    const backing = new Uint8Array(100);
    const buf = backing.subarray(3, 3 + 40);
    buf.fill(me + 1);
    const w = await comm.window(buf);
    assert.equal(w.buffer, buf);
    await w.fence();
    const got = new Uint8Array(40);
    await w.get(got, next, 0);
    await w.fence();
    assert.ok(got.every((b) => b === next + 1), `read rank ${next}'s buffer`);
    await w.put(new Uint8Array([200, 201]), next, 38);
    await w.fence();
    assert.deepEqual([...backing.subarray(41, 43)], [200, 201]);
    assert.equal(backing[43], 0, 'nothing written past the window');
    await w.free();
  }],

  ['two windows over the same buffer are two windows: their own locks, and freeing one leaves the other', async () => {
    const buf = new Uint8Array(16);
    const a = await comm.window(buf);
    const b = await comm.window(buf);
    const target = p - 1;
    if (me === 0) {
      await a.lock(target, 'exclusive');
      // MPI: locks belong to a window; holding a's lock must not hold back b's.
      let timer;
      const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('the lock on the second window waited for the first window\'s lock')), 5000); });
      try { await Promise.race([b.lock(target, 'exclusive'), late]); } finally { clearTimeout(timer); }
      await b.unlock(target);
      await a.unlock(target);
    }
    await comm.barrier();
    await a.free();
    // b still works, on the same bytes.
    await b.fence();
    if (me === 0) await b.put(new Uint8Array([7, 8]), target, 4);
    await b.fence();
    if (me === target) assert.deepEqual([...buf.subarray(4, 6)], [7, 8]);
    await b.free();
  }],

  ['large put and get (several chunks)', async () => {
    const n = 3 * 1024 * 1024 + 17;
    const w = await comm.allocWindow(n);
    await w.fence();
    await w.put(pattern(n, me + 11), next, 0);
    await w.fence();
    assert.ok(samePattern(w.buffer, n, prev + 11));
    const got = new Uint8Array(n);
    await w.get(got, next, 0);
    await w.fence();
    assert.ok(samePattern(got, n, me + 11), 'got back what this rank put there');
    await w.free();
  }],

  ['fetch-add from every rank gives exact totals and distinct old values', async () => {
    const w = await comm.allocWindow(16);
    await w.fence();
    const olds = [];
    for (let i = 0; i < K; i++) {
      olds.push(Number(await w.fetchAndOp(1n, 0, 0, 'sum', 'i64')));
      await w.fetchAndOp(2, 0, 8, 'sum', 'i32');
    }
    await w.fence();
    if (me === 0) {
      const v = new DataView(w.buffer.buffer, w.buffer.byteOffset);
      assert.equal(v.getBigInt64(0, true), BigInt(p * K));
      assert.equal(v.getInt32(8, true), 2 * p * K);
    }
    const all = new Float64Array(p * K);
    await comm.allgather(new Float64Array(olds), all);
    const seen = new Set(all);
    assert.equal(seen.size, p * K, 'every fetch-add saw a different old value');
    await w.free();
  }],

  ['fetchAndOp and compareAndSwap, every op and type, against a model', async () => {
    const w = await comm.allocWindow(64);
    await w.fence();
    if (me === 0) {
      const t = next; // one rank drives, the others watch: results are sequential
      const cases = [
        ['i32', 5, [['sum', 3, 8], ['min', -2, -2], ['max', 7, 7], ['band', 6, 6], ['bor', 9, 15], ['bxor', 5, 10], ['replace', -40, -40], ['no_op', 0, -40]]],
        ['u32', 0xfffffff0, [['sum', 0x20, 0x10], ['max', 0xffffffff, 0xffffffff], ['min', 3, 3], ['bxor', 1, 2], ['replace', 7, 7]]],
        ['i64', -(2n ** 62n), [['sum', -(2n ** 62n), -(2n ** 63n)], ['sum', -1n, 2n ** 63n - 1n], ['min', 5n, 5n], ['bor', 2n, 7n], ['no_op', 0n, 7n]]],
        ['u64', 2n ** 64n - 1n, [['sum', 2n, 1n], ['max', 2n ** 63n, 2n ** 63n], ['band', 2n ** 63n + 1n, 2n ** 63n]]],
        ['f64', 1.5, [['sum', 0.25, 1.75], ['min', -3.5, -3.5], ['max', 2, 2], ['replace', Math.PI, Math.PI], ['no_op', 0, Math.PI]]],
      ];
      let off = 0;
      for (const [type, init, steps] of cases) {
        await w.fetchAndOp(init, t, off, 'replace', type);
        let expect = init;
        for (const [op, v, after] of steps) {
          const old = await w.fetchAndOp(v, t, off, op, type);
          assert.equal(old, expect, `${type} ${op}: old value`);
          expect = after;
        }
        assert.equal(await w.fetchAndOp(type === 'i64' || type === 'u64' ? 0n : 0, t, off, 'no_op', type), expect, `${type}: final`);
        // compare-and-swap: a miss leaves the value, a hit swaps it.
        const other = typeof expect === 'bigint' ? expect + 1n : expect + 1;
        assert.equal(await w.compareAndSwap(other, other, t, off, type), expect, `${type} cas miss`);
        assert.equal(await w.compareAndSwap(expect, other, t, off, type), expect, `${type} cas hit`);
        assert.equal(await w.fetchAndOp(type === 'i64' || type === 'u64' ? 0n : 0, t, off, 'no_op', type), other, `${type}: swapped`);
        off += 8;
      }
    }
    await w.fence();
    await w.free();
  }],

  ['compare-and-swap spin lock protects a plain read-modify-write', async () => {
    const w = await comm.allocWindow(16);
    await w.fence();
    for (let i = 0; i < K; i++) {
      let spins = 0;
      while ((await w.compareAndSwap(0, me + 1, 0, 0, 'i32')) !== 0) {
        if (++spins > 100000) throw new Error('spin lock never acquired');
        if ((spins & 15) === 0) await sleep(0);
      }
      const cell = new Int32Array(1);
      await w.get(cell, 0, 8);
      await w.flush(0);
      cell[0] += 1;
      await w.put(cell, 0, 8);
      await w.flush(0);
      assert.equal(await w.compareAndSwap(me + 1, 0, 0, 0, 'i32'), me + 1, 'the lock was ours');
    }
    await w.fence();
    if (me === 0) assert.equal(new Int32Array(w.buffer.buffer, w.buffer.byteOffset + 8, 1)[0], p * K);
    await w.free();
  }],

  ['exclusive lock protects get + put without atomics', async () => {
    const w = await comm.allocWindow(8);
    const target = p - 1;
    for (let i = 0; i < K; i++) {
      await w.lock(target, 'exclusive');
      const cell = new Float64Array(1);
      await w.get(cell, target, 0);
      cell[0] += 1;
      await w.put(cell, target, 0);
      await w.unlock(target);
    }
    await comm.barrier();
    if (me === target) assert.equal(new Float64Array(w.buffer.buffer, w.buffer.byteOffset, 1)[0], p * K);
    await w.free();
  }],

  ['shared locks are held at once; lock twice is refused', async () => {
    const w = await comm.allocWindow(8);
    const granting = w.lock(0, 'shared');
    // Until the grant, the epoch is not open: no operation slips past the lock.
    throwsWith(() => w.put(new Uint8Array(4), 0, 0), ErrorCode.INVALID_ARG);
    await rejectsWith(() => w.unlock(0), ErrorCode.INVALID_ARG);
    await granting;
    await rejectsWith(() => w.lock(0, 'shared'), ErrorCode.INVALID_ARG);
    // Every rank holds the shared lock at the same time: nobody waits for an unlock.
    await comm.barrier();
    await w.fetchAndOp(1, 0, 0, 'sum', 'i32');
    await w.unlock(0);
    await comm.barrier();
    if (me === 0) assert.equal(new Int32Array(w.buffer.buffer, 0, 1)[0], p);
    await w.free();
  }],

  ['flush makes a put visible before a message says so', async () => {
    const w = await comm.allocWindow(1024);
    if (me !== 0) {
      await w.lock(0, 'shared');
      await w.put(pattern(64, me), 0, me * 64 % 1024);
      await w.flush(0);
      await comm.send(new Uint8Array(1), 0, 7);
      await w.unlock(0);
    } else {
      for (let i = 1; i < p; i++) {
        const st = await comm.recv(new Uint8Array(1), -1, 7);
        assert.ok(samePattern(w.buffer.subarray(st.source * 64 % 1024), 64, st.source), `rank ${st.source}'s put is here`);
      }
    }
    await comm.barrier();
    await w.free();
  }],

  ['puts and gets not awaited, completed by testFlush or flush (MPI_Put + MPI_Win_flush)', async () => {
    // Slots [0, 64p) take the puts; each rank's own pattern is at 64p + 64 * rank.
    const w = await comm.allocWindow(128 * p);
    w.buffer.set(pattern(64, me + 20), 64 * p + me * 64);
    await comm.barrier();
    await w.lock(next, 'shared');
    // The fast form: no await at all where the target is mapped here.
    void w.put(pattern(64, me + 30), next, me * 64);
    const got = new Uint8Array(64);
    void w.get(got, next, 64 * p + next * 64);
    if (!w.testFlush(next)) await w.flush(next);
    assert.equal(w.testFlush(next), true, 'nothing outstanding after the flush');
    assert.ok(samePattern(got, 64, next + 20), 'the get is complete after the flush');
    throwsWith(() => w.testFlush(p), ErrorCode.RANK);
    throwsWith(() => w.testFlush(-1), ErrorCode.RANK);
    throwsWith(() => w.testFlush('1'), ErrorCode.RANK);
    await w.unlock(next);
    await comm.barrier();
    // The previous rank's put replaced our own pattern at its slot.
    assert.ok(samePattern(w.buffer.subarray(prev * 64), 64, prev + 30), 'the put is here');
    await w.free();
    throwsWith(() => w.testFlush(next), ErrorCode.INVALID_ARG);
  }],

  ['a flush complete at the call (testFlush true, or flush resolved at once) means the target has the data: a message after it finds it there', async () => {
    // Each round: a put, every other round an accumulate too (emulated where a
    // rail runs puts natively but not that atomic), then testFlush or flush,
    // then a message to the target, which looks at its memory on receipt.
    const w = await comm.allocWindow(72 * p);
    const counts = new Int32Array(w.buffer.buffer, w.buffer.byteOffset + 64 * p, 2 * p);
    await comm.barrier();
    await w.lock(next, 'shared');
    const one = new Int32Array([1]), note = new Uint8Array(4), seen = new Uint8Array(4);
    for (let round = 0; round < 24; round++) {
      void w.put(pattern(64, me + 7 * round), next, me * 64);
      if (round % 2 === 1) void w.accumulate(one, next, 64 * p + me * 8, 'sum');
      if (!w.testFlush(next)) await w.flush(next);
      await Promise.all([comm.send(note, next, 60), comm.recv(seen, prev, 60)]);
      assert.ok(samePattern(w.buffer.subarray(prev * 64), 64, prev + 7 * round), `round ${round}: rank ${prev}'s put is here when its message is`);
      assert.equal(counts[prev * 2], (round + 1) >> 1, `round ${round}: and its accumulates`);
      await comm.barrier();
    }
    await w.unlock(next);
    await comm.barrier();
    await w.free();
  }],

  ['flushAll (and the per-rail flush) complete puts to every rank before a message says so', async () => {
    // Each rank writes its pattern into every other rank's window under
    // shared locks, flushAll()s once, then tells each rank with a message.
    const w = await comm.allocWindow(64 * p);
    for (let t = 0; t < p; t++) if (t !== me) await w.lock(t, 'shared');
    for (let t = 0; t < p; t++) if (t !== me) await w.put(pattern(64, me + 10), t, me * 64);
    if (me % 2 === 0) await w.flushAll();
    else {
      // The protocol layer's per-rail flush, once for each rail that carries a target.
      const ctx = comm.world.ctx;
      const rails = new Set();
      for (let t = 0; t < p; t++) if (t !== me) rails.add(ctx.endpointFor(comm.worldRankOf(t)).lane?.rail.name ?? null);
      for (const r of rails) await ctx.rma.flushRail(r);
    }
    for (let t = 0; t < p; t++) if (t !== me) await comm.send(new Uint8Array(1), t, 8);
    for (let i = 1; i < p; i++) {
      const st = await comm.recv(new Uint8Array(1), -1, 8);
      assert.ok(samePattern(w.buffer.subarray(st.source * 64), 64, st.source + 10), `rank ${st.source}'s put is here`);
    }
    for (let t = 0; t < p; t++) if (t !== me) await w.unlock(t);
    await comm.barrier();
    await w.free();
    throwsWith(() => w.flushAll(), ErrorCode.INVALID_ARG);
  }],

  ['passive target: a rank busy in a timer still serves locks and puts', async () => {
    const w = await comm.allocWindow(8 * p);
    if (me === 0) {
      await sleep(300); // not in railcomm: only the event loop runs
    } else {
      await w.lock(0, 'exclusive');
      await w.put(new Float64Array([me]), 0, 8 * me);
      await w.unlock(0);
    }
    await comm.barrier();
    if (me === 0) {
      const f = new Float64Array(w.buffer.buffer, w.buffer.byteOffset, p);
      for (let r = 1; r < p; r++) assert.equal(f[r], r);
    }
    await w.free();
  }],

  ['a rank polling a flag in its own window (get + flush, compare-and-swap) still serves the others', async () => {
    // Every call of the loop completes at once on mapped memory: railcomm must
    // let the event loop turn now and then, or rank 0's locks are never granted.
    for (const plain of [false, true]) {
      const w = plain ? await comm.window(new Int32Array(2)) : await comm.allocWindow(8);
      if (me === 0) {
        await w.lock(0, 'shared');
        const flag = new Int32Array(1);
        while (flag[0] !== p - 1) { await w.get(flag, 0, 0); await w.flush(0); }
        await w.unlock(0);
      } else {
        await sleep(20);
        await w.lock(0, 'shared');
        await w.accumulate(new Int32Array([1]), 0, 0, 'sum');
        await w.unlock(0);
      }
      await comm.barrier();
      // The same with compare-and-swap in a fence epoch: rank 0 waits for the others' increments of element 1.
      await w.fence();
      if (me === 0) { while ((await w.compareAndSwap(p - 1, 0, 0, 4, 'i32')) !== p - 1); }
      else await w.fetchAndOp(1, 0, 4, 'sum', 'i32');
      await w.fence();
      await w.free();
    }
  }],

  ['accumulate: every type and op from every rank', async () => {
    const TYPES = [Int8Array, Uint8Array, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];
    const n = 5;
    const w = await comm.allocWindow(TYPES.length * 64 * 4);
    await w.fence();
    const val = (T, r, i) => { const v = ((r * 3 + i) % 4) + 1; return T === BigInt64Array || T === BigUint64Array ? BigInt(v) : v; };
    let off = 0;
    const layout = [];
    for (const T of TYPES) {
      for (const op of ['sum', 'max', 'min', 'replace']) {
        if (op === 'replace' && p > 1) continue; // concurrent replace has no single answer
        const a = new T(n);
        for (let i = 0; i < n; i++) a[i] = val(T, me, i);
        await w.accumulate(a, 0, off, op);
        layout.push([T, op, off]);
        off += 64;
      }
    }
    await w.fence();
    if (me === 0) {
      for (const [T, op, o] of layout) {
        const got = new T(w.buffer.buffer, w.buffer.byteOffset + o, n);
        for (let i = 0; i < n; i++) {
          let e = T === BigInt64Array || T === BigUint64Array ? 0n : 0; // window starts at zero
          for (let r = 0; r < p; r++) {
            const v = val(T, r, i);
            if (op === 'sum') e += v; else if (op === 'max') e = v > e ? v : e; else if (op === 'min') e = v < e ? v : e; else e = v;
          }
          assert.equal(got[i], e, `${T.name} ${op} [${i}]`);
        }
      }
    }
    // A large accumulate (several chunks).
    const big = new Float64Array(100_000).fill(1);
    await w.fence();
    const w2 = await comm.allocWindow(big.byteLength);
    await w2.fence();
    await w2.accumulate(big, next, 0, 'sum');
    await w2.accumulate(big, prev, 0, 'sum');
    await w2.fence();
    const f = new Float64Array(w2.buffer.buffer, w2.buffer.byteOffset, big.length);
    const expect = p === 1 ? 2 : (p === 2 ? 2 : 2);
    assert.ok(f.every((x) => x === expect), `every element got ${expect}`);
    await w2.free();
    await w.free();
  }],

  ['many operations in flight at once (queues behind full lanes keep their bytes)', async () => {
    const big = 256 * 1024;
    const w = await comm.allocWindow(big + 64);
    w.buffer.set(pattern(big, me + 3));
    await w.fence();
    const gets = [];
    const olds = [];
    for (let i = 0; i < 24; i++) {
      const dst = new Uint8Array(big);
      gets.push(w.get(dst, next, 0).then(() => dst));
      for (let j = 0; j < 20; j++) olds.push(w.fetchAndOp(1n, next, big, 'sum', 'i64'));
    }
    const got = await Promise.all(gets);
    const values = (await Promise.all(olds)).map(Number).sort((a, b) => a - b);
    await w.fence();
    for (const g of got) assert.ok(samePattern(g, big, next + 3));
    // Only this rank adds to the next rank's counter: old values are 0 .. n-1 exactly once.
    if (p > 1) assert.deepEqual(values, values.map((_, i) => i));
    await w.free();
  }],

  ['random one-sided sequences with fences match a sequential model', async () => {
    // A new seed every run (RMA_SEED=n replays one): rank 0 draws it and every
    // rank draws the same programs from it. A failure names the seed.
    const s = new Uint32Array([process.env.RMA_SEED !== undefined ? Number(process.env.RMA_SEED) : randomInt(2 ** 31)]);
    await comm.bcast(s, 0);
    for (let k = 0; k < 3; k++) {
      const seed = s[0] + k;
      try { await randomProgram(seed); } catch (e) { throw new Error(`seed ${seed} (replay: RMA_SEED=${seed}): ${e.message}`, { cause: e }); }
    }
  }],
];

/**
 * One random program of epochs. Per epoch each rank writes only its own slice
 * of each target (puts never overlap) and adds into shared counters (sums
 * commute), so the model is exact.
 */
async function randomProgram(seed) {
  const BYTES = 512;
  const slice = Math.floor(BYTES / 2 / p) & ~7;
  const opArb = fc.record({
    kind: fc.constantFrom('put', 'acc', 'fadd', 'get'),
    from: fc.integer({ min: 0, max: p - 1 }),
    target: fc.integer({ min: 0, max: p - 1 }),
    at: fc.integer({ min: 0, max: Math.max(0, slice / 8 - 1) }),
    len: fc.integer({ min: 1, max: 8 }),
    value: fc.integer({ min: -50, max: 50 }),
    counter: fc.integer({ min: 0, max: 7 }),
  });
  const program = fc.sample(fc.array(fc.array(opArb, { maxLength: 12 }), { minLength: 3, maxLength: 8 }), { seed, numRuns: 1 })[0];
  const model = Array.from({ length: p }, () => new Uint8Array(BYTES));
  const w = await comm.allocWindow(BYTES);
  await w.fence();
  let ops = 0;
  for (const epoch of program) {
    const gets = [];
    for (const o of epoch) {
      const t = model[o.target];
      const base = BYTES / 2;
      if (o.kind === 'put') {
        const off = o.from * slice + o.at * 8;
        const len = Math.min(o.len * 8, slice - o.at * 8);
        const bytes = new Uint8Array(len).fill((o.value + 256) & 0xff);
        if (o.from === me) { await w.put(bytes, o.target, off); ops++; }
        t.set(bytes, off);
      } else if (o.kind === 'acc' || o.kind === 'fadd') {
        const off = base + o.counter * 8;
        if (o.from === me) {
          if (o.kind === 'acc') await w.accumulate(new BigInt64Array([BigInt(o.value)]), o.target, off, 'sum');
          else await w.fetchAndOp(BigInt(o.value), o.target, off, 'sum', 'i64');
          ops++;
        }
        const v = new DataView(t.buffer);
        v.setBigInt64(off, v.getBigInt64(off, true) + BigInt(o.value), true);
      } else if (o.from === me) {
        // A get reads the epoch's starting state of another rank's slice (nobody writes it this epoch).
        const writer = (o.from + 1) % p;
        if (epoch.some((x) => x.kind === 'put' && x.from === writer && x.target === o.target)) continue;
        const off = writer * slice;
        const dst = new Uint8Array(slice);
        gets.push([w.get(dst, o.target, off), dst, model[o.target].slice(off, off + slice)]);
        ops++;
      }
    }
    await w.fence();
    for (const [done, dst, expect] of gets) { await done; assert.deepEqual(dst, expect, 'get saw the epoch\'s start'); }
  }
  assert.deepEqual(w.buffer, model[me], 'final window contents equal the model');
  await w.free();
}

const failed = await runCases(comm, cases, { timeoutMs: Number(process.env.CASE_TIMEOUT_MS ?? 60000) });
if (process.env.RMA_STATS) console.log(`RMA native ${comm.world.ctx.rma.nativeOps} emulated ${comm.world.ctx.rma.emulatedOps}`);
await comm.finalize();
process.exit(failed ? 1 : 0);
