// GPU job, 2 or 4 ranks: collectives on device arrays checked against host
// references: bcast, allreduce (sum of f32 and f64, small: staged; large: the
// ring on the GPU; compared bit for bit with the same allreduce on host arrays),
// min/max/prod and integer types, in place, ranks mixing device and host
// arrays, allgather, and the rest staged (reduce, gather, scatter, alltoall, scan).

import { init, cuda } from '../../../dist/index.js';
import { runCases, assert } from '../../jobs/harness.mjs';

const comm = await init();
const me = comm.rank, p = comm.size;
const LARGE = Number(process.env.RAILCOMM_GPU_COLL_LARGE ?? 1 << 22); // elements (16 MiB of f32)

/** Deterministic values per (rank, i); small integers in floats sum exactly, the random ones test equal bits. */
const ints = (T, n, r) => T.from({ length: n }, (_, i) => ((i * 7 + r * 13) % 101) - 50);
function randoms(T, n, r) {
  const a = new T(n);
  let x = (r + 1) * 2654435761 >>> 0;
  for (let i = 0; i < n; i++) { x = (Math.imul(x, 1664525) + 1013904223) >>> 0; a[i] = (x / 2 ** 32 - 0.5) * 1000; }
  return a;
}
function sameBits(a, b, what) {
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength), y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  assert.equal(x.length, y.length, `${what}: lengths`);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) assert.fail(`${what}: byte ${i} differs (${a[Math.floor(i / a.BYTES_PER_ELEMENT)]} vs ${b[Math.floor(i / b.BYTES_PER_ELEMENT)]})`);
}
const dev = (host) => { const d = cuda.alloc(host.length, host.constructor); d.upload(host); return d; };

/** allreduce on device arrays and on host arrays of the same data: the same bits. */
async function allreduceBoth(T, n, op, make, inPlace = false) {
  const mine = make(T, n, me);
  const hostOut = new T(n);
  await comm.allreduce(mine, hostOut, op);
  const s = dev(mine);
  const r = inPlace ? s : cuda.alloc(n, T);
  const before = comm.stats().cuda?.gpuReductions ?? 0;
  await comm.allreduce(s, r, op);
  sameBits(r.download(), hostOut, `allreduce ${op} ${T.name} x ${n}${inPlace ? ' in place' : ''}`);
  const gpu = (comm.stats().cuda?.gpuReductions ?? 0) - before;
  if (r !== s) r.free();
  s.free();
  return gpu;
}

const cases = [
  ['bcast from each root, sizes across the thresholds', async () => {
    for (const n of [0, 8, 16384, 65537, 1 << 20, 16 << 20]) {
      for (let root = 0; root < p; root++) {
        const d = cuda.alloc(n);
        const ref = Uint8Array.from({ length: n }, (_, i) => (i * 31 + root) & 0xff);
        if (me === root) d.upload(ref); else d.fill(0);
        await comm.bcast(d, root);
        sameBits(d.download(), ref, `bcast ${n} from ${root}`);
        d.free();
      }
    }
  }],
  ['allreduce sum of f32 and f64: staged when small, on the GPU when large, equal to the host', async () => {
    let gpu = 0;
    for (const T of [Float32Array, Float64Array]) {
      for (const n of [1, 1000, 65536, LARGE]) {
        await allreduceBoth(T, n, 'sum', ints);
        gpu += await allreduceBoth(T, n, 'sum', randoms);
      }
    }
    assert.ok(gpu > 0, 'the large ones combined on the GPU');
  }],
  ['allreduce min, max and prod; integer types; in place', async () => {
    for (const [T, op] of [[Float32Array, 'min'], [Float64Array, 'max'], [Float64Array, 'prod'], [Int32Array, 'sum'], [Uint32Array, 'max'], [BigInt64Array, 'sum']]) {
      const make = T === BigInt64Array ? (t, n, r) => BigInt64Array.from({ length: n }, (_, i) => BigInt(i * 3 + r) - 7n) : ints;
      await allreduceBoth(T, LARGE / 4, op, make);
    }
    await allreduceBoth(Float32Array, LARGE, 'sum', randoms, true);
    await allreduceBoth(Float64Array, 100, 'sum', randoms, true);
  }],
  ['allreduce with ranks mixing device and host arrays', async () => {
    for (const n of [100, LARGE]) {
      const mine = randoms(Float32Array, n, me);
      const ref = new Float32Array(n);
      await comm.allreduce(mine, ref, 'sum');
      const out = new Float32Array(n);
      if (me % 2 === 0) { const s = dev(mine), r = cuda.alloc(n, Float32Array); await comm.allreduce(s, r, 'sum'); r.download(out); s.free(); r.free(); }
      else await comm.allreduce(mine, out, 'sum');
      sameBits(out, ref, `mixed allreduce of ${n}`);
    }
  }],
  ['allgather', async () => {
    for (const n of [1, 4096, 1 << 18]) {
      const mine = ints(Float64Array, n, me);
      const ref = new Float64Array(n * p);
      await comm.allgather(mine, ref);
      const s = dev(mine), r = cuda.alloc(n * p, Float64Array);
      await comm.allgather(s, r);
      sameBits(r.download(), ref, `allgather ${n}`);
      s.free(); r.free();
    }
  }],
  ['reduce, gather, scatter, alltoall, scan (staged)', async () => {
    const n = 1024;
    const mine = ints(Int32Array, n, me);
    const s = dev(mine);
    const check = async (what, hostCall, devCall, outLen) => {
      const href = outLen === 0 ? null : new Int32Array(outLen);
      await hostCall(href);
      const d = outLen === 0 ? null : cuda.alloc(outLen, Int32Array);
      await devCall(d);
      if (href !== null) sameBits(d.download(), href, what);
      d?.free();
    };
    await check('reduce', (o) => comm.reduce(mine, me === 0 ? o : null, 'sum', 0), (o) => comm.reduce(s, me === 0 ? o : null, 'sum', 0), me === 0 ? n : 0);
    await check('gather', (o) => comm.gather(mine, me === 1 % p ? o : null, 1 % p), (o) => comm.gather(s, me === 1 % p ? o : null, 1 % p), me === 1 % p ? n * p : 0);
    const big = ints(Int32Array, n * p, 99);
    const bigD = dev(big);
    await check('scatter', (o) => comm.scatter(me === 0 ? big : null, o, 0), (o) => comm.scatter(me === 0 ? bigD : null, o, 0), n);
    await check('alltoall', (o) => comm.alltoall(ints(Int32Array, n * p, me), o), (o) => comm.alltoall(dev(ints(Int32Array, n * p, me)), o), n * p);
    await check('scan', (o) => comm.scan(mine, o, 'sum'), (o) => comm.scan(s, o, 'sum'), n);
    s.free(); bigD.free();
  }],
];

const failed = await runCases(comm, cases, { timeoutMs: Number(process.env.RAILCOMM_GPU_CASE_MS ?? 240_000) });
if (me === 0) console.log(`STATS ${JSON.stringify(comm.stats().cuda)}`);
await comm.finalize();
process.exitCode = failed > 0 ? 1 : 0;
