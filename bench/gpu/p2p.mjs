// railcomm's GPU figures, one job of 2 ranks (railcomm run -n 2 bench/gpu/p2p.mjs):
// device-array ping-pong (half round trip per size), the cost of the first
// message from a new buffer (its IPC handle opened) against a cached one, and
// allreduce of f32 device arrays. Rank 0 prints `RESULT {json}` lines.
//   BENCH_PARTS=pingpong,host,open,allreduce (default all); BENCH_SIZES=8,1048576,...
//   BENCH_LABEL names the configuration (the environment it ran with).

import { init, cuda } from '../../dist/index.js';

const comm = await init();
const me = comm.rank, peer = 1 - me;
const parts = (process.env.BENCH_PARTS ?? 'pingpong,host,open,allreduce').split(',');
const label = process.env.BENCH_LABEL ?? 'default';
const sizes = (process.env.BENCH_SIZES ?? `8,${1 << 20},${1 << 30}`).split(',').map(Number);
const out = (o) => { if (me === 0) console.log(`RESULT ${JSON.stringify({ label, ...o })}`); };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => Number(process.hrtime.bigint()) / 1e3;

/** Half round trip of an n-byte device message: blocks of iterations, the median block. */
async function pingpong(n, host = false) {
  const d = host ? new Uint8Array(n).fill(me + 1) : cuda.alloc(n).fill(me + 1);
  const iters = n <= 65536 ? 2000 : n <= 16 << 20 ? 200 : 10;
  const blocks = 5;
  const per = Math.max(1, Math.floor(iters / blocks));
  const times = [];
  for (let b = -1; b < blocks; b++) {   // block -1 warms up (negotiation, first open)
    await comm.barrier();
    const t0 = now();
    for (let i = 0; i < per; i++) {
      if (me === 0) { await comm.send(d, peer, 1); await comm.recv(d, peer, 1); } else { await comm.recv(d, peer, 1); await comm.send(d, peer, 1); }
    }
    if (b >= 0) times.push((now() - t0) / per / 2);
  }
  const us = median(times);
  out({ what: `${host ? 'host' : 'device'} ping-pong half round trip`, bytes: n, us: +us.toFixed(2), GBps: +(n / us / 1e3).toFixed(1), iterations: per * blocks });
  if (!host) d.free();
}

/** 1 MiB messages: from the same buffer each time (its handle cached) or from a new buffer each time (opened each time). */
async function openCost() {
  const n = 1 << 20, iters = 50;
  const r = cuda.alloc(n);
  const counters = () => ({ ...comm.stats().cuda?.handleCache });
  for (const fresh of [false, true]) {
    const same = cuda.alloc(n).fill(3);
    // Warm: negotiation done, the same buffer opened once.
    if (me === 0) await comm.send(same, peer, 2); else await comm.recv(r, peer, 2);
    await comm.barrier();
    const c0 = counters();
    const times = [];
    for (let i = 0; i < iters; i++) {
      const src = fresh && me === 0 ? cuda.alloc(n).fill(4) : same;
      await comm.barrier();
      const t0 = now();
      if (me === 0) { await comm.send(src, peer, 3); await comm.recv(r, peer, 4); } else { await comm.recv(r, peer, 3); await comm.send(new Uint8Array(1), peer, 4); }
      times.push(now() - t0);
      if (src !== same) src.free();
    }
    await comm.barrier();
    const c1 = counters();
    // Rank 1 opened the handles: its counters say what happened.
    const delta = { hits: (c1.hits ?? 0) - (c0.hits ?? 0), misses: (c1.misses ?? 0) - (c0.misses ?? 0) };
    const all = await comm.allgatherObject(delta);
    out({ what: fresh ? '1 MiB message from a new buffer each time (handle opened each time) + 1-byte reply' : '1 MiB message from the same buffer (handle cached) + 1-byte reply', bytes: n, us: +median(times).toFixed(2), receiverCache: all[1] });
    same.free();
  }
  r.free();
}

async function allreduce() {
  const n = (64 << 20) / 4;
  const s = cuda.alloc(n, Float32Array), r = cuda.alloc(n, Float32Array);
  s.upload(Float32Array.from({ length: n }, (_, i) => (i % 1000) + me));
  const times = [];
  const g0 = comm.stats().cuda?.gpuReductions ?? 0;
  for (let i = -1; i < 10; i++) {
    await comm.barrier();
    const t0 = now();
    await comm.allreduce(s, r, 'sum');
    if (i >= 0) times.push(now() - t0);
  }
  const h = r.download();
  const ok = h[12345] === 2 * (12345 % 1000) + 1;
  const gpu = (comm.stats().cuda?.gpuReductions ?? 0) - g0;
  out({ what: `allreduce of 64 MiB of f32 on 2 ranks, ${gpu > 0 ? 'combined on the GPU' : 'staged through host memory'}`, bytes: n * 4, us: +median(times).toFixed(1), correct: ok, gpuReductions: gpu });
  s.free(); r.free();
}

if (parts.includes('pingpong')) for (const n of sizes) await pingpong(n);
// The same with host arrays, in the same job: what the device path adds.
if (parts.includes('host')) for (const n of sizes) await pingpong(n, true);
if (parts.includes('open')) await openCost();
if (parts.includes('allreduce')) await allreduce();
if (me === 0) console.log(`STATS ${JSON.stringify(comm.stats().cuda ?? {})}`);
await comm.finalize();
