// The command line as a user meets it: info, bench, a 2-rank example through
// the package name, a program started without a launcher, and --stats.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { railcomm, jobScript } from './jobs.mjs';
import { needPmix } from '../helpers/requires.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));

test('railcomm info shows every init step and, with --params, every parameter', async () => {
  const r = await railcomm(['info', '--params'], { limitMs: 30_000 });
  assert.equal(r.code, 0, r.stderr);
  for (const step of ['1. load configuration', '2. component availability', '3. filter components by layout', '4. query devices',
    '5. filter devices', '6. open rails', '7. rail capabilities and protocol tables']) assert.ok(r.stdout.includes(step), step);
  assert.match(r.stdout, /tcp:lo: reliable, ordered/);
  // The PMIx line names the module's state as this machine has it (under CI=true a missing module fails).
  const pmix = needPmix();
  if (pmix.failure !== null) assert.fail(pmix.failure);
  assert.match(r.stdout, pmix.reason === null ? /^pmix: available \(.+\); not started under PMIx/m : /^pmix: unavailable \(.+\); not started under PMIx/m);
  for (const p of ['RAILCOMM_EAGER_LIMIT', 'RAILCOMM_RNDV_THRESHOLD', 'RAILCOMM_TCP_DEVICES', 'RAILCOMM_SPIN_US', 'RAILCOMM_LOG']) assert.ok(r.stdout.includes(p), p);
  const j = await railcomm(['info', '--json'], { limitMs: 30_000 });
  const info = JSON.parse(j.stdout);
  assert.equal(info.steps.length, 7);
});

test('railcomm bench latency --json prints one JSON object', async () => {
  const r = await railcomm(['bench', 'latency', '--sizes', '0,8,70000', '--iters', '50', '--json'], { limitMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  const res = JSON.parse(r.stdout.trim());
  assert.equal(res.benchmark, 'latency');
  assert.equal(res.ranks, 2);
  assert.deepEqual(res.results.map((x) => x.size), [0, 8, 70000]);
  for (const x of res.results) assert.ok(x.usec > 0);
  const bw = await railcomm(['bench', 'bw', '--sizes', '1024,100000', '--iters', '20', '--window', '8', '--json', '--rails', 'tcp'], { limitMs: 60_000 });
  assert.equal(bw.code, 0, bw.stderr);
  const b = JSON.parse(bw.stdout.trim());
  assert.equal(b.rails, 'tcp');
  for (const x of b.results) assert.ok(x.mbps > 0);
  const bad = await railcomm(['bench', 'nonsense'], { limitMs: 10_000 });
  assert.equal(bad.code, 2);
});

test('examples/histogram.js: one-sided accumulate and fetch-and-op, every sample counted once', async () => {
  const r = await railcomm(['run', '-n', '3', '--timeout', '60', 'examples/histogram.js'], { limitMs: 90_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^\[0\] 40000 samples in 40 batches/m);
});

test('examples/ring.js on 4 ranks, importing the package by name', async () => {
  const r = await railcomm(['run', '-n', '4', '--timeout', '60', 'examples/ring.js'], { limitMs: 90_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^\[0\] token went around 4 ranks and came back as 6 \(expected 6\)$/m);
});

test('a program started with plain node is a world of one rank and exits by itself', () => {
  const r = spawnSync(process.execPath, [jobScript('singleton.mjs')], { cwd: root, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /SINGLETON ok/);
});

test('--stats=json prints counters per rail and per peer at finalize', async () => {
  const r = await railcomm(['run', '-n', '2', '--rails', 'tcp', '--stats=json', '--timeout', '60', 'examples/ring.js'], { limitMs: 90_000 });
  assert.equal(r.code, 0, r.stderr);
  const line = r.stderr.split('\n').find((l) => l.startsWith('[1] railcomm stats '));
  assert.ok(line, r.stderr);
  const st = JSON.parse(line.slice('[1] railcomm stats '.length));
  assert.equal(st.rank, 1);
  assert.equal(st.rails['tcp:lo'].msgsSent >= 1, true);
  assert.ok(st.peers['0']);
});

test('RAILCOMM_PROTO_INFO prints the protocol table per peer', async () => {
  const r = await railcomm(['run', '-n', '2', '--rails', 'tcp', '--timeout', '60', 'examples/ring.js'], { limitMs: 90_000, env: { RAILCOMM_PROTO_INFO: '1' } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /protocols to rank 1:/);
  assert.match(r.stderr, /rendezvous, 1048576 B chunks on tcp:lo/);
});

test('a bad parameter stops railcomm run before any rank starts, in one line; one given to init() is ERR_INVALID_ARG', async () => {
  for (const [env, args, name] of [[{ RAILCOMM_EAGER_LIMIT: 'lots' }, [], 'RAILCOMM_EAGER_LIMIT=lots'], [{}, ['-x', 'RAILCOMM_LANE_TIMEOUT=3s'], 'RAILCOMM_LANE_TIMEOUT=3s']]) {
    const r = await railcomm(['run', '-n', '2', ...args, '--timeout', '60', 'examples/ring.js'], { limitMs: 90_000, env });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`^railcomm run: ${name}: expected`), r.stderr);
    assert.equal(r.stdout, '', 'no rank ran');
  }
  // Under the launcher too (it once read as "cannot reach the launcher's wire-up service").
  const r = await railcomm(['run', '-n', '1', '--timeout', '60', jobScript('bad-param.mjs')], { limitMs: 90_000 });
  assert.match(r.stdout, /CODE ERR_INVALID_ARG unknown railcomm parameter 'nope'/, r.stdout + r.stderr);
});
