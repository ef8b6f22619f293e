// The shared-memory reduce path at its edges, run with a small slot and split
// threshold (RAILCOMM_COLL_SHARED_SLOT=4096, RAILCOMM_COLL_SHARED_SPLIT=256):
// lengths on and around slot multiples, fewer elements than ranks, recv that
// is send itself, rooted reduce, and bit-identical non-exact floats, against
// a reference computed here element by element in rank order.
//   RAILCOMM_COLL_SHARED_SLOT=4096 RAILCOMM_COLL_SHARED_SPLIT=256 railcomm run -n P [--threads] test/jobs/coll-shared-suite.mjs

import { init } from '../../dist/index.js';
import { runCases, assert } from './harness.mjs';

const comm = await init();
const { rank: me, size: p } = comm;
const SLOT = Number(process.env.RAILCOMM_COLL_SHARED_SLOT ?? 262144);

const big = (T) => T === BigInt64Array || T === BigUint64Array;
const F = {
  sum: (u, v) => u + v,
  prod: (u, v) => u * v,
  min: (u, v) => (v < u || v !== v ? v : u),
  max: (u, v) => (v > u || v !== v ? v : u),
  bxor: (u, v) => u ^ v,
};

function input(T, r, n, seed, op) {
  const a = new T(n);
  for (let i = 0; i < n; i++) {
    const v = op === 'prod' ? ((r + i + seed) % 5 === 0 ? 2 : 1) : ((r * 7 + i * 13 + seed) % 9) - 3;
    a[i] = big(T) ? BigInt(v) : v;
  }
  return a;
}

/** Rank 0 op rank 1 op ..., one element at a time, stored through T (wrap-around as railcomm's). */
function reference(T, op, n, seed) {
  const acc = input(T, 0, n, seed, op);
  for (let r = 1; r < p; r++) {
    const x = input(T, r, n, seed, op);
    for (let i = 0; i < n; i++) acc[i] = F[op](acc[i], x[i]);
  }
  return acc;
}

function same(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < got.length; i++) if (!Object.is(got[i], want[i])) assert.fail(`${what}: element ${i} is ${got[i]}, expected ${want[i]}`);
}

/** Lengths around the slot's capacity in elements, and below the rank count. */
function lengths(T) {
  const per = Math.floor(SLOT / T.BYTES_PER_ELEMENT);
  return [0, 1, Math.max(1, p - 1), per - 1, per, per + 1, 2 * per + 3, 3 * per - 1];
}

const TYPES = [Float64Array, Float32Array, Int8Array, Uint16Array, Int32Array, BigInt64Array];

const cases = [
  ['allreduce and reduce at slot boundaries, every rank count', async () => {
    let seed = 0;
    for (const T of TYPES) for (const op of ['sum', 'min', 'max', 'prod', 'bxor']) {
      if ((T === Float64Array || T === Float32Array) && op === 'bxor') continue;
      for (const n of lengths(T)) {
        seed++;
        const send = input(T, me, n, seed, op);
        const want = reference(T, op, n, seed);
        const got = new T(n);
        await comm.allreduce(send, got, op);
        same(got, want, `allreduce ${op} ${T.name} n=${n}`);
        same(send, input(T, me, n, seed, op), `allreduce left send alone (${op} ${T.name} n=${n})`);
        const root = seed % p;
        const r2 = me === root ? new T(n) : null;
        await comm.reduce(send, r2, op, root);
        if (me === root) same(r2, want, `reduce ${op} ${T.name} n=${n} root ${root}`);
      }
    }
  }],
  ['recv may be send itself', async () => {
    for (const n of lengths(Float64Array)) {
      const buf = input(Float64Array, me, n, 77, 'sum');
      await comm.allreduce(buf, buf, 'sum');
      same(buf, reference(Float64Array, 'sum', n, 77), `in place n=${n}`);
    }
  }],
  ['a typed-array subclass and a Buffer reduce as their built-in kinds', async () => {
    // A subclass whose constructor takes only a length, and Node's Buffer:
    // the shared slots must be viewed with the built-in constructors.
    class Vec extends Float64Array { constructor(n) { super(n); } }
    for (const n of [3, 100]) {
      const send = new Vec(n); send.fill(me + 1);
      const got = new Vec(n);
      await comm.allreduce(send, got, 'sum');
      for (let i = 0; i < n; i++) assert.equal(got[i], (p * (p + 1)) / 2, `Vec n=${n} [${i}]`);
      const b = Buffer.alloc(n, me + 1);
      const rb = Buffer.alloc(n);
      await comm.allreduce(b, rb, 'max');
      for (let i = 0; i < n; i++) assert.equal(rb[i], p, `Buffer n=${n} [${i}]`);
    }
  }],
  ['non-exact floats: the same bits on every rank, one phase and split', async () => {
    for (const n of [5, 100, 3 * Math.floor(SLOT / 8) + 7]) {
      const send = new Float64Array(n).map((_, i) => Math.sin(me * 1000 + i) * 1e-3 + 1 / (me + i + 3));
      const got = new Float64Array(n);
      await comm.allreduce(send, got, 'sum');
      const all = new Float64Array(n * p);
      await comm.allgather(got, all);
      for (let r = 1; r < p; r++) for (let i = 0; i < n; i++) if (!Object.is(all[r * n + i], all[i])) assert.fail(`n=${n}: rank ${r} differs at ${i}`);
    }
  }],
];

const failed = await runCases(comm, cases, { timeoutMs: 120000 });
await comm.finalize();
process.exitCode = failed ? 1 : 0;
