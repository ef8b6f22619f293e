// Integration tests of `railcomm run --threads` / `--threads-per-process` (through
// test/helpers/run-cli.mjs) with throwaway scripts: what a thread rank sees, output
// prefixes, exit codes, stopping, usage errors, and that no thread-host process is left.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startJob } from '../../dist/cli/run.js';
import { launchKit, alive, kvClientUrl, kvRankScript, waitFor } from '../helpers/launch-kit.mjs';

const { dir, seenPids, script, launch } = launchKit('railcomm-threads-');


/** rank -> pid of the process it ran in, from the files the pid prelude wrote under dir/sub. */
function pidsIn(sub) {
  const d = join(dir, sub);
  let names = [];
  try { names = readdirSync(d); } catch { return new Map(); }
  const out = new Map();
  for (const n of names.filter((x) => x.endsWith('.pid'))) {
    const pid = Number(readFileSync(join(d, n), 'utf8'));
    if (pid > 0) {
      seenPids.add(pid);
      out.set(Number(n.slice(1, -4)), pid);
    }
  }
  return out;
}

/** Rank script prelude: notes the pid of the process this (thread) rank runs in under dir/sub. */
const pidPrelude = (sub) => `
import { writeFileSync, mkdirSync, renameSync } from 'node:fs';
const pidDir = ${JSON.stringify(join(dir, sub))};
mkdirSync(pidDir, { recursive: true });
const rank = process.env.RAILCOMM_RANK;
// Written then renamed, so the test never reads a half-written pid.
writeFileSync(pidDir + '/r' + rank + '.tmp', String(process.pid));
renameSync(pidDir + '/r' + rank + '.tmp', pidDir + '/r' + rank + '.pid');
`;

const sleeper = `setInterval(() => {}, 1000);\n`;

/** Parses "[r] {json}" lines into rank -> object. */
function jsonByRank(stdout) {
  const out = new Map();
  for (const l of stdout.split('\n').filter(Boolean)) {
    const m = /^\[(\d+)\] (?:part-)?(\{.*\})$/.exec(l);
    if (m) out.set(Number(m[1]), JSON.parse(m[2]));
  }
  return out;
}

const whoAmI = script('whoami.mjs', `
import { isMainThread } from 'node:worker_threads';
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('RAILCOMM_') || k === 'MY_VAR'));
const r = process.env.RAILCOMM_RANK;
// A partial line first: it must reach the output joined with the rest, under one prefix.
process.stdout.write('part-');
setTimeout(() => {
  console.log(JSON.stringify({ rank: r, argv: process.argv, isMainThread, pid: process.pid, env }));
  console.error('err from ' + r);
  process.stdout.write('last-without-newline');
}, 30);
`);

test('--threads: 4 thread ranks in one process, prefixed output, the argv and environment of a process rank', async () => {
  const args = ['two words', '--flag', 'x'];
  const asProcess = await launch(['-n', '1', '-x', 'MY_VAR=v', whoAmI, ...args]);
  assert.equal(asProcess.code, 0, asProcess.stderr);
  const ref = jsonByRank(asProcess.stdout).get(0);
  assert.equal(ref.isMainThread, true);

  const res = await launch(['-n', '4', '--threads', '-x', 'MY_VAR=v', whoAmI, ...args]);
  assert.equal(res.code, 0, res.stderr);
  const lines = res.stdout.split('\n').filter(Boolean);
  assert.equal(lines.length, 8, res.stdout);
  assert.ok(lines.every((l) => /^\[[0-3]\] /.test(l)), res.stdout);
  const got = jsonByRank(res.stdout);
  assert.deepEqual([...got.keys()].sort(), [0, 1, 2, 3]);
  const pids = new Set();
  for (const [r, o] of got) {
    assert.equal(o.rank, String(r));
    assert.equal(o.isMainThread, false);
    assert.deepEqual(o.argv, ref.argv);
    pids.add(o.pid);
    assert.equal(o.env.RAILCOMM_SIZE, '4');
    assert.equal(o.env.RAILCOMM_LOCAL_RANK, String(r));
    assert.equal(o.env.RAILCOMM_LOCAL_SIZE, '4');
    assert.equal(o.env.RAILCOMM_THREAD_BASE, '0');
    assert.equal(o.env.RAILCOMM_THREADS, '4');
    assert.equal(o.env.MY_VAR, 'v');
    assert.match(o.env.RAILCOMM_KV, /^127\.0\.0\.1:\d+$/);
    assert.equal(o.env.RAILCOMM_JOB_KEY, got.get(0).env.RAILCOMM_JOB_KEY);
    assert.equal(o.env.RAILCOMM_JOB_ID, got.get(0).env.RAILCOMM_JOB_ID);
    assert.ok(lines.includes(`[${r}] last-without-newline`), res.stdout);
    assert.match(res.stderr, new RegExp(`^\\[${r}\\] err from ${r}$`, 'm'));
  }
  assert.equal(pids.size, 1, 'all thread ranks run in one process');
  // A thread rank sees what a process rank sees, plus the two thread variables.
  const keys = (e) => Object.keys(e).filter((k) => k !== 'RAILCOMM_THREAD_BASE' && k !== 'RAILCOMM_THREADS').sort();
  assert.deepEqual(keys(got.get(0).env), keys(ref.env));
  assert.equal(ref.env.RAILCOMM_THREADS, undefined);
});

test('--threads-per-process 2 -n 4: two processes of two thread ranks each', async () => {
  const res = await launch(['-n', '4', '--threads-per-process', '2', whoAmI]);
  assert.equal(res.code, 0, res.stderr);
  const got = jsonByRank(res.stdout);
  assert.deepEqual([...got.keys()].sort(), [0, 1, 2, 3]);
  const pid = (r) => got.get(r).pid;
  assert.equal(pid(0), pid(1));
  assert.equal(pid(2), pid(3));
  assert.notEqual(pid(0), pid(2));
  for (const [r, o] of got) {
    assert.equal(o.isMainThread, false);
    assert.equal(o.env.RAILCOMM_THREAD_BASE, r < 2 ? '0' : '2');
    assert.equal(o.env.RAILCOMM_THREADS, '2');
    assert.equal(o.env.RAILCOMM_LOCAL_RANK, String(r));
    assert.equal(o.env.RAILCOMM_LOCAL_SIZE, '4');
  }
});

test('a thread rank exiting with code 3 sets the exit code and the sleeping others are stopped', async () => {
  const s = script('exit3.mjs', `${pidPrelude('exit3')}
if (rank === '1') setTimeout(() => process.exit(3), 300);
${sleeper}`);
  const res = await launch(['-n', '4', '--threads-per-process', '2', '--grace', '1', s], { limitMs: 15_000 });
  assert.equal(res.code, 3, res.stderr);
  assert.match(res.stderr, /rank 1 exited with code 3/);
  assert.ok(res.ms < 8000, `took ${res.ms} ms`);
  const pids = pidsIn('exit3');
  assert.equal(pids.size, 4);
  assert.equal(new Set(pids.values()).size, 2);
  for (const p of pids.values()) assert.equal(alive(p), false, `pid ${p} survived`);
});

test('a thread rank that throws fails the job with 1 and its error is printed under its prefix', async () => {
  const s = script('throw.mjs', `
if (process.env.RAILCOMM_RANK === '1') setTimeout(() => { throw new TypeError('boom from rank 1'); }, 100);
else ${sleeper}`);
  const res = await launch(['-n', '2', '--threads', '--grace', '1', s], { limitMs: 15_000 });
  assert.equal(res.code, 1, res.stderr);
  assert.match(res.stderr, /^\[1\] TypeError: boom from rank 1$/m);
  assert.match(res.stderr, /^\[1\] +at /m);
  assert.ok(res.ms < 8000, `took ${res.ms} ms`);
});

test('SIGTERM to the launcher stops the thread processes; --timeout gives 124', async () => {
  const s = script('term.mjs', `${pidPrelude('term')}${sleeper}`);
  let launcher;
  const done = launch(['-n', '4', '--threads-per-process', '2', s], { onSpawn: (c) => { launcher = c; } });
  await waitFor(() => pidsIn('term').size === 4, 10_000, 'thread ranks to start');
  const pids = [...new Set(pidsIn('term').values())];
  assert.equal(pids.length, 2);
  launcher.kill('SIGTERM');
  const res = await done;
  assert.equal(res.code, 143, res.stderr);
  assert.match(res.stderr, /received SIGTERM/);
  await waitFor(() => pids.every((p) => !alive(p)), 3000, 'the thread processes to be gone');

  const t = script('hang.mjs', `${pidPrelude('hang')}${sleeper}`);
  const timedOut = await launch(['-n', '2', '--threads', '--timeout', '1', '--grace', '1', t], { limitMs: 15_000 });
  assert.equal(timedOut.code, 124, timedOut.stderr);
  assert.ok(timedOut.ms < 6000, `took ${timedOut.ms} ms`);
  for (const p of pidsIn('hang').values()) assert.equal(alive(p), false, `pid ${p} survived`);
});

test('abort, a rank leaving without finalize, and a clean finalize work for thread ranks', async () => {
  const s = script('kv.mjs', kvRankScript);
  const aborted = await launch(['-n', '4', '--threads-per-process', '2', '--grace', '1', s, 'abort']);
  assert.equal(aborted.code, 5, aborted.stderr);
  assert.match(aborted.stderr, /rank 1 called abort: out of cheese/);

  // Rank 0's thread exits while rank 1 runs on in the same process: the launcher must still notice.
  const unfinalized = await launch(['-n', '2', '--threads', '--grace', '1', s, 'nofinalize']);
  assert.equal(unfinalized.code, 1, unfinalized.stderr);
  assert.match(unfinalized.stderr, /rank 0 exited without calling finalize\(\)/);

  const clean = await launch(['-n', '4', '--threads-per-process', '2', s, 'clean']);
  assert.equal(clean.code, 0, clean.stderr);
  assert.equal(clean.stderr, '');
});

test('thread ranks that wired up end their process when the launcher is SIGKILLed (no orphans)', async () => {
  const s = script('orphan.mjs', `${pidPrelude('orphan')}
const { KvClient } = await import(${JSON.stringify(kvClientUrl)});
const [host, port] = process.env.RAILCOMM_KV.split(':');
const kv = await KvClient.connect({ host, port: Number(port) }, process.env.RAILCOMM_JOB_KEY, Number(rank));
kv.onLost(() => process.exit(70));
writeFileSync(pidDir + '/c' + rank, '');
${sleeper}`);
  let launcher;
  const done = launch(['-n', '4', '--threads-per-process', '2', s], { onSpawn: (c) => { launcher = c; } });
  const connected = () => {
    try { return readdirSync(join(dir, 'orphan')).filter((n) => n.startsWith('c')).length; } catch { return 0; }
  };
  await waitFor(() => connected() === 4, 10_000, 'thread ranks to connect');
  const pids = [...new Set(pidsIn('orphan').values())];
  launcher.kill('SIGKILL');
  await done;
  await waitFor(() => pids.every((p) => !alive(p)), 5000, 'the thread processes to notice the launcher is gone');
});

test('startJob with threadsPerProcess and capture sorts the lines by rank and reports every rank', async () => {
  const s = script('capture.mjs', `console.log('hi ' + process.env.RAILCOMM_RANK); console.error('e');\n`);
  const job = await startJob({ np: 4, threadsPerProcess: 2, command: [s], capture: true });
  assert.equal(job.pids.length, 4);
  assert.equal(job.pids[0], job.pids[1]);
  assert.notEqual(job.pids[1], job.pids[2]);
  const res = await job.wait();
  assert.equal(res.code, 0);
  assert.deepEqual(res.outputs, [0, 1, 2, 3].map((r) => ({ stdout: [`hi ${r}`], stderr: ['e'] })));
  assert.deepEqual(res.exits, [0, 1, 2, 3].map((rank) => ({ rank, code: 0, signal: null })));
});

test('bad thread options are usage errors (exit 2)', async () => {
  const ok = script('ok.mjs', '');
  for (const args of [
    ['-n', '4', '--threads-per-process', '3', ok],
    ['-n', '4', '--threads-per-process', '0', ok],
    ['-n', '4', '--threads-per-process', ok],
    ['--threads', '--hosts', 'a:2', ok],
    ['-n', '2', '--threads', '--hosts', 'a:2', ok],
    ['-n', '2', '--threads', '--threads-per-process', '2', ok],
    ['-n', '2', '--threads', '--', '/bin/sh', '-c', 'true'],
    ['-n', '2', '-x', 'RAILCOMM_THREADS=2', ok],
  ]) {
    const res = await launch(args);
    assert.equal(res.code, 2, `args ${JSON.stringify(args)}: ${res.stderr}`);
    assert.match(res.stderr, /usage: railcomm run -n N/);
    assert.equal(res.stdout, '');
  }
  const help = await launch(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--threads-per-process K/);
  assert.match(help.stdout, /--threads /);
});
