// GPU job, 2 ranks (processes on one GPU, or --threads): device arrays of every
// size from 0 B to RAILCOMM_GPU_MAX_BYTES (default 1 GiB) across the staging and
// rendezvous thresholds, each way, with data checks; device <-> host mixes;
// the IPC negotiation reaching OK and the handle cache hitting on the second
// message to a buffer (or, with RAILCOMM_CUDA_IPC=0, every large message staged
// and counted); nonblocking exchange, ANY_SOURCE, truncation, and bad input.

import { init, cuda, ANY_SOURCE } from '../../../dist/index.js';
import { runCases, assert, rejectsWith, throwsWith } from '../../jobs/harness.mjs';

const comm = await init();
const me = comm.rank, peer = 1 - me;
const MAX = Number(process.env.RAILCOMM_GPU_MAX_BYTES ?? 2 ** 30);
const ipcOn = process.env.RAILCOMM_CUDA_IPC !== '0';
const threads = comm.stats().rails.tbsm !== undefined;
const SIZES = [0, 1, 8, 4095, 16384, 16385, 65536, 262143, 262144, 262145, 1 << 20, (4 << 20) + 3, 64 << 20, 256 << 20, 1 << 30].filter((n) => n <= MAX);

/** A pattern that depends on (seed, word index): misplaced or missing words are caught. */
function fill(h, seed) {
  const w = new Uint32Array(h.buffer, h.byteOffset, h.byteLength >> 2);
  for (let i = 0; i < w.length; i++) w[i] = (Math.imul(i, 2654435761) ^ seed) >>> 0;
  for (let i = w.length * 4; i < h.byteLength; i++) h[i] = (i * 131 + seed) & 0xff;
}
function check(h, n, seed, what) {
  const w = new Uint32Array(h.buffer, h.byteOffset, n >> 2);
  for (let i = 0; i < w.length; i++) if (w[i] !== ((Math.imul(i, 2654435761) ^ seed) >>> 0)) assert.fail(`${what}: word ${i} of ${n} bytes is ${w[i]}`);
  for (let i = w.length * 4; i < n; i++) if (h[i] !== ((i * 131 + seed) & 0xff)) assert.fail(`${what}: byte ${i} of ${n} is ${h[i]}`);
}

/** One device buffer per size, reused (the cache must hit on the second message). */
const bufs = new Map();
const devOf = (n) => { let d = bufs.get(n); if (d === undefined) { d = cuda.alloc(n); bufs.set(n, d); } return d; };

async function exchange(n, seed, mode) {
  // mode: 'dd' device -> device, 'dh' device -> host, 'hd' host -> device
  const h = new Uint8Array(n);
  const d = devOf(n);
  if (me === 0) {
    fill(h, seed);
    if (mode === 'hd') await comm.send(h, 1, seed);
    else { d.upload(h); await comm.send(d, 1, seed); }
  } else {
    let st;
    if (mode === 'dh') st = await comm.recv(h, 0, seed);
    else { d.fill(0); st = await comm.recv(d, 0, seed); d.download(h); }
    assert.equal(st.bytes, n);
    assert.equal(st.source, 0);
    check(h, n, seed, `${mode} ${n} B`);
  }
}

const cases = [
  ['every size, device to device, twice each (the second from the same buffer)', async () => {
    for (const n of SIZES) { await exchange(n, 11, 'dd'); await exchange(n, 12, 'dd'); }
  }],
  ['device to host and host to device', async () => {
    for (const n of SIZES.filter((x) => x <= 64 << 20)) { await exchange(n, 21, 'dh'); await exchange(n, 22, 'hd'); }
  }],
  ['the path each large message took is counted', async () => {
    const s = comm.stats().cuda;
    assert.ok(s, 'stats carry a cuda block');
    if (threads) {
      if (me === 0) assert.ok(s.directSends > 0, `thread ranks copy directly: ${JSON.stringify(s)}`);
      assert.equal(s.ipcSends, 0);
      return;
    }
    if (!ipcOn) {
      if (me === 0) { assert.equal(s.ipcSends, 0); assert.ok(s.stagedIpcOff > 0, `RAILCOMM_CUDA_IPC=0: staged and counted: ${JSON.stringify(s)}`); }
      return;
    }
    if (me === 0) {
      assert.equal(s.ipc['1']?.tx, 'OK', `negotiation with rank 1: ${JSON.stringify(s.ipc)}`);
      assert.ok(s.ipcSends > 0 && s.stagedNegotiating >= 1, JSON.stringify(s));
    } else {
      assert.equal(s.ipc['0']?.rx, 'ACKED', `rank 1 answered yes: ${JSON.stringify(s.ipc)}`);
      // Each large size: the first message from a buffer opens its handle, the second finds it cached.
      assert.ok(s.handleCache.misses >= 1 && s.handleCache.hits >= s.handleCache.misses - 1, `cache ${JSON.stringify(s.handleCache)}`);
      assert.ok(s.deviceRecvs > 0, JSON.stringify(s));
    }
    console.log(`STATS ${JSON.stringify({ rank: me, ...s })}`);
  }],
  ['cache: a second message to the same buffer hits, a freed buffer is closed', async () => {
    if (threads || !ipcOn) return;
    const n = 1 << 20;
    const before = comm.stats().cuda.handleCache;
    const d = cuda.alloc(n);
    for (let k = 0; k < 2; k++) {
      if (me === 0) { d.fill(k + 1); await comm.send(d, 1, 30 + k); } else { await comm.recv(d, 0, 30 + k); }
    }
    const after = comm.stats().cuda.handleCache;
    if (me === 1) { assert.equal(after.misses - before.misses, 1, 'opened once'); assert.equal(after.hits - before.hits, 1, 'hit the second time'); }
    await comm.barrier();
    d.free();
    // The owner's free notice travels ahead of this message (one lane, in order): it is handled first.
    if (me === 0) await comm.send(new Uint8Array(1), 1, 33); else await comm.recv(new Uint8Array(1), 0, 33);
    const closed = comm.stats().cuda.handleCache;
    if (me === 1) assert.ok(closed.closed > after.closed, `the owner's free closed it here: ${JSON.stringify(closed)}`);
  }],
  ['isend and irecv both ways at once, and ANY_SOURCE', async () => {
    for (const n of [100, 1 << 20, 8 << 20].filter((x) => x <= MAX)) {
      const a = cuda.alloc(n), b = cuda.alloc(n), h = new Uint8Array(n);
      fill(h, 40 + me); a.upload(h);
      const rr = comm.irecv(b, ANY_SOURCE, 7);
      const sr = comm.isend(a, peer, 7);
      const [st] = await Promise.all([rr.wait(), sr.wait()]);
      assert.equal(st.source, peer);
      b.download(h);
      check(h, n, 40 + peer, `exchange ${n}`);
      a.free(); b.free();
    }
  }],
  ['subarrays and typed device arrays', async () => {
    const n = 1 << 18;
    const d = cuda.alloc(n, Float64Array);
    if (me === 0) {
      d.upload(Float64Array.from({ length: n }, (_, i) => i * 0.5));
      await comm.send(d.subarray(1000, 3000), 1, 8);
    } else {
      const r = cuda.alloc(2000, Float64Array);
      const st = await comm.recv(r, 0, 8);
      assert.equal(st.bytes, 16000);
      const h = r.download();
      for (let i = 0; i < 2000; i++) assert.equal(h[i], (i + 1000) * 0.5);
      r.free();
    }
    d.free();
  }],
  ['truncation: a device receive too small', async () => {
    const n = 1 << 20;
    if (me === 0) { const d = cuda.alloc(n); await comm.send(d, 1, 9); d.free(); }
    else { const d = cuda.alloc(n / 2); await rejectsWith(comm.recv(d, 0, 9), 'ERR_TRUNCATE'); d.free(); }
  }],
  ['bad input says what to do', async () => {
    const d = cuda.alloc(16);
    throwsWith(() => comm.sendObject(d, peer), 'ERR_INVALID_ARG');
    throwsWith(() => cuda.wrap(BigInt(0x1000), 4, Float32Array), 'ERR_INVALID_ARG');
    throwsWith(() => cuda.wrap(d.ptr, 5, Float32Array), 'ERR_INVALID_ARG'); // past its end
    const w = cuda.wrap(d.ptr + 4n, 2, Float32Array);
    assert.equal(w.byteLength, 8);
    await rejectsWith(() => comm.window(d), 'ERR_INVALID_ARG');
    const big = cuda.alloc(1 << 20);
    const r = comm.irecv(big, peer, 99);
    throwsWith(() => big.free(), 'ERR_INVALID_ARG'); // a pending request moves it
    r.cancel();
    await rejectsWith(r.wait(), 'ERR_CANCELLED');
    big.free();
    d.free();
    throwsWith(() => d.download(), 'ERR_INVALID_ARG');
    await rejectsWith(async () => comm.send(d, peer), 'ERR_INVALID_ARG');
  }],
];

const failed = await runCases(comm, cases, { timeoutMs: Number(process.env.RAILCOMM_GPU_CASE_MS ?? 240_000) });
for (const d of bufs.values()) d.free();
await comm.finalize();
process.exitCode = failed > 0 ? 1 : 0;
