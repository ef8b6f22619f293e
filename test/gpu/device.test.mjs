// GPU memory end to end (issue 16): real jobs whose ranks move device arrays.
// Each test needs a GPU (need('cuda'), not required by CI): elsewhere it is
// skipped with the reason the CUDA component gives. test/gpu/run-on-gpu.sh runs
// this file on the lent GPU machine. RAILCOMM_GPU_FAKE=1 runs it on railcomm's
// stand-in driver (test/gpu/fake: host memory, built here with gcc) to check
// the protocol's paths on a machine without a GPU; that is never a GPU result.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, unlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { railcomm, caseResults, linesWith } from '../integration/jobs.mjs';
import { needCuda, report } from '../helpers/requires.mjs';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const FAKE = process.env.RAILCOMM_GPU_FAKE === '1';
if (FAKE && !process.env.RAILCOMM_CUDA_LIBRARY) {
  // Build the stand-in driver (once) and load it instead of libcuda.so.1.
  const lib = here('./fake/libcuda.so.1');
  if (!existsSync(lib)) {
    const r = spawnSync('gcc', ['-shared', '-fPIC', '-O2', '-o', lib, here('./fake/fakecuda.c'), '-lpthread'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`building the fake CUDA driver failed: ${r.stderr}`);
  }
  process.env.RAILCOMM_CUDA_LIBRARY = lib;
}
const gpu = await needCuda();
report('GPU tests', gpu);

// On the stand-in, smaller sizes: its "device" copies are memcpy on this machine's CPUs.
const MAX = process.env.RAILCOMM_GPU_MAX_BYTES ?? String(FAKE ? 16 << 20 : 2 ** 30);
const LARGE = process.env.RAILCOMM_GPU_COLL_LARGE ?? String(FAKE ? 1 << 19 : 1 << 22);
// A GPU job takes seconds: one that hangs is stopped well inside run-on-gpu.sh's limit.
const JOB_S = FAKE ? 280 : 100;
const ENV = { RAILCOMM_GPU_MAX_BYTES: MAX, RAILCOMM_GPU_COLL_LARGE: LARGE, RAILCOMM_GPU_CASE_MS: String((JOB_S - 10) * 1000), RAILCOMM_RAILS: '' };
const job = (name) => here(`./jobs/${name}`);

/** The stand-in's segments of processes that are gone (a killed rank cannot remove its own). */
function removeFakeLeftovers() {
  for (const n of readdirSync('/dev/shm')) {
    const m = /^fakecuda-(\d+)-/.exec(n);
    if (m && !existsSync(`/proc/${m[1]}`)) try { unlinkSync(`/dev/shm/${n}`); } catch { /* gone */ }
  }
}
before(() => { if (FAKE) removeFakeLeftovers(); });
after(() => { if (FAKE) removeFakeLeftovers(); });

async function suite(args, script, ranks, env = {}) {
  const r = await railcomm(['run', ...args, '--timeout', String(JOB_S), script], { limitMs: (JOB_S + 20) * 1000, env: { ...ENV, ...env } });
  const res = caseResults(r.stdout);
  assert.ok(res.size > 0, `no cases ran\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
  for (const [name, byRank] of res) for (let k = 0; k < ranks; k++) assert.equal(byRank.get(k), 'ok', `${name}, rank ${k}: ${byRank.get(k)}\n${r.stderr.slice(-2000)}`);
  assert.equal(r.code, 0, r.stderr.slice(-3000));
  return r;
}

test('the reduction kernels (PTX through the driver) combine every type and op as the host kernels do, NaN, -0 and the tail included', gpu, async () => {
  const { cuda } = await import('../../dist/index.js');
  const { reduceOnDevice } = await import('../../dist/cuda/kernels.js');
  const { reduceInto } = await import('../../dist/comm/coll/ops.js');
  const n = 100003; // not a multiple of the block: the tail is covered
  const special = [NaN, -0, 0, Infinity, -Infinity, 1e-40, 3.4e38, -1.5];
  for (const T of [Float32Array, Float64Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array]) {
    for (const op of ['sum', 'prod', 'min', 'max']) {
      const big = T === BigInt64Array || T === BigUint64Array;
      const a = new T(n), b = new T(n);
      for (let i = 0; i < n; i++) {
        const x = ((i * 2654435761) >>> 0) % 2001 - 1000, y = ((i * 40503 + 7) >>> 0) % 2001 - 1000;
        if (big) { a[i] = BigInt(x) * 123456789n; b[i] = BigInt(y) * 987654321n; }
        else if (T === Float32Array || T === Float64Array) { a[i] = i < special.length ** 2 ? special[i % special.length] : x / 7; b[i] = i < special.length ** 2 ? special[Math.floor(i / special.length)] : y / 3; }
        else { a[i] = x * 65537; b[i] = y * 40503; }
      }
      const da = cuda.alloc(n, T), db = cuda.alloc(n, T);
      da.upload(a); db.upload(b);
      reduceOnDevice(op, T, da.ptr, db.ptr, n);
      const want = a.slice();
      reduceInto(op, want, b, n);
      const got = da.download();
      // Equal values, -0 told from 0; a NaN equals any NaN (the GPU's arithmetic makes the canonical NaN, the host's keeps a payload).
      for (let i = 0; i < n; i++) {
        const g = got[i], w = want[i];
        if (!(Object.is(g, w) || (typeof g === 'number' && Number.isNaN(g) && Number.isNaN(w)))) assert.fail(`${op} ${T.name}: element ${i}: ${a[i]} op ${b[i]} = ${g} on the GPU, ${w} on the host`);
      }
      da.free(); db.free();
    }
  }
});

test('2 processes on one GPU: every size 0 B .. 1 GiB, data checked; IPC negotiated (OK), the handle cache hits on the second message', gpu, async () => {
  const r = await suite(['-n', '2'], job('device-p2p.mjs'), 2);
  const stats = linesWith(r.stdout, 'STATS').map((l) => JSON.parse(l.rest));
  assert.equal(stats.length, 2, r.stdout.slice(-2000));
  const s0 = stats.find((s) => s.rank === 0), s1 = stats.find((s) => s.rank === 1);
  assert.equal(s0.ipc['1'].tx, 'OK');
  assert.ok(s0.ipcSends > 0);
  assert.ok(s1.handleCache.hits > 0, JSON.stringify(s1.handleCache));
});

test('RAILCOMM_CUDA_IPC=0: the same data through pinned host memory, counted', gpu, async () => {
  await suite(['-n', '2'], job('device-p2p.mjs'), 2, { RAILCOMM_CUDA_IPC: '0' });
});

test('2 thread ranks: device copies within the process, no IPC', gpu, async () => {
  await suite(['-n', '2', '--threads'], job('device-p2p.mjs'), 2);
});

for (const n of [2, 4]) {
  test(`collectives on device arrays, ${n} processes: bcast, allreduce (f32, f64 vs host), allgather, the rest staged`, gpu, async () => {
    await suite(['-n', String(n)], job('device-coll.mjs'), n);
  });
}

test('a rank killed mid-transfer: its peer fails with ERR_PEER_FAILED within seconds, survivors go on', gpu, async (t) => {
  // A run whose sender finished before its watch saw 8 MiB go (the stand-in device is host memory, and
  // a transfer can end within one turn of its event loop) killed nobody mid-transfer: it tested nothing
  // (rank 0 rightly received the whole message), so it runs again, up to five times.
  let r, results;
  for (let attempt = 0; attempt < 5; attempt++) {
    r = await railcomm(['run', '-n', '3', '--timeout', '90', job('device-kill.mjs')], { limitMs: 120_000, env: { ...ENV, RAILCOMM_GPU_KILL_BYTES: String(256 << 20) } });
    results = linesWith(r.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`);
    if (!results.includes('2 sender finished before it was killed')) break;
    t.diagnostic(`attempt ${attempt + 1}: the sender finished before it was killed; again`);
  }
  assert.equal(r.code, 137, `${r.stdout}\n${r.stderr}`);
  assert.ok(results.includes('0 recv from killed rank: ERR_PEER_FAILED'), r.stdout + r.stderr);
  assert.ok(results.some((x) => /^0 survivors: ok deviceRecvs [1-9]/.test(x)), results.join('\n'));
  const elapsed = Number(linesWith(r.stdout, 'ELAPSED')[0]?.rest ?? NaN);
  assert.ok(elapsed < 10_000, `the failure took ${elapsed} ms`);
});
