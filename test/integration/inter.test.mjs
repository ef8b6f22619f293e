// Jobs that meet (ports, accept/connect, spawn): two jobs started separately
// connect through a port passed in a file and run point-to-point, merge,
// collectives, a window and disconnect (processes, worker threads, env://);
// wrong secrets, closed, silent and unreachable ports and a killed rank of
// the other job fail only what they should; spawn under railcomm run, and no
// process left when its launcher is killed; two jobs on two network-namespace
// hosts (skipped, with the reason printed, where namespaces cannot be made).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import os from 'node:os';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { railcomm, runCommand, jobScript, caseResults, linesWith, CLI } from './jobs.mjs';
import { need, report } from '../helpers/requires.mjs';
import { twoHosts as twoHostNamespaces } from '../helpers/two-hosts.mjs';

const dir = mkdtempSync(join(os.tmpdir(), 'railcomm-inter-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const portFile = () => join(dir, `port-${files++}`);

/** Every case of a harness job passed on ranks 0..n-1. */
function allOk(stdout, n, min) {
  const res = caseResults(stdout);
  assert.ok(res.size >= min, `only ${res.size} cases:\n${stdout.slice(-3000)}`);
  for (const [name, byRank] of res) for (let r = 0; r < n; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
}

// Launcher variables of the test runner's own environment must not leak in.
const clean = Object.fromEntries(Object.keys(process.env).filter((k) => /^(RAILCOMM_|OMPI_|PMIX_|SLURM_|PMI_)|^(RANK|WORLD_SIZE|LOCAL_RANK|MASTER_ADDR|MASTER_PORT)$/.test(k)).map((k) => [k, undefined]));

const run = (cmd, args, env, limitMs = 90_000) => runCommand(cmd, args, { ...clean, ...env }, limitMs);

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

const PAIR_CASES = 9;

test('two railcomm run jobs (3 and 2 processes) meet through a port in a file: p2p, merge, collectives, window, disconnect', async () => {
  const f = portFile();
  const [a, b] = await Promise.all([
    railcomm(['run', '-n', '3', '--timeout', '90', jobScript('inter-pair.mjs'), 'accept', f]),
    railcomm(['run', '-n', '2', '--timeout', '90', jobScript('inter-pair.mjs'), 'connect', f]),
  ]);
  allOk(a.stdout, 3, PAIR_CASES);
  allOk(b.stdout, 2, PAIR_CASES);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
});

test('a job of worker threads accepts a job wired up by env:// (plain node ranks)', async () => {
  const f = portFile();
  const master = await freePort();
  const key = 'fe'.repeat(16);
  const envJob = [0, 1].map((r) => run(process.execPath, [jobScript('inter-pair.mjs'), 'connect', f],
    { RANK: String(r), WORLD_SIZE: '2', LOCAL_RANK: String(r), MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(master), RAILCOMM_JOB_KEY: key }));
  const [a, ...b] = await Promise.all([railcomm(['run', '-n', '3', '--threads', '--timeout', '90', jobScript('inter-pair.mjs'), 'accept', f]), ...envJob]);
  allOk(a.stdout, 3, PAIR_CASES);
  assert.equal(a.code, 0, a.stderr);
  for (const [r, x] of b.entries()) {
    assert.equal(x.code, 0, `env:// rank ${r}: ${x.stderr.slice(-2000)}`);
    assert.equal(x.stdout.split('\n').filter((l) => / ok$/.test(l)).length, PAIR_CASES, x.stdout);
  }
});

test('wrong secret refused, closed / silent / unreachable ports fail in time, a killed rank of the other job fails only what involves it', async () => {
  const f = portFile();
  const [a, b] = await Promise.all([
    railcomm(['run', '-n', '2', '--timeout', '90', jobScript('inter-faults.mjs'), 'a', f]),
    railcomm(['run', '-n', '3', '--timeout', '90', '-x', 'RAILCOMM_CONNECT_TIMEOUT=3000', jobScript('inter-faults.mjs'), 'b', f]),
  ]);
  allOk(a.stdout, 2, 3);
  assert.equal(a.code, 0, `job A must outlive job B's dead rank:\n${a.stderr}`);
  const bres = caseResults(b.stdout);
  for (const name of ['wrong-secret', 'closed-port', 'unreachable-port', 'silent-port', 'connect', 'carry-on']) {
    for (let r = 0; r < 3; r++) assert.equal(bres.get(name)?.get(r), 'ok', `${name}, rank ${r}: ${bres.get(name)?.get(r)}\n${b.stdout.slice(-2000)}`);
  }
  assert.equal(b.code, 137, 'job B stops: its rank 2 was killed');
  const killed = linesWith(a.stdout, 'KILLED-PEER');
  assert.equal(killed.length, 1, a.stdout);
  assert.ok(Number(/in (\d+) ms/.exec(killed[0].rest)[1]) < 2000, killed[0].rest);
  assert.equal(linesWith(a.stdout, 'SILENT-PEER').length, 1, `a receive from a rank never talked to fails too:\n${a.stdout}`);
});

test('spawn: 2 parents start 3 workers (processes, then threads) that compute and report through the inter-communicator', async () => {
  for (const extra of [[], ['--threads']]) {
    const job = await railcomm(['run', '-n', '2', ...extra, '--timeout', '90', jobScript('inter-spawn.mjs')]);
    assert.equal(job.code, 0, `${extra.join(' ')}\n${job.stdout}\n${job.stderr}`);
    assert.equal(linesWith(job.stdout, 'SPAWN').length, 1, job.stdout);
    const workers = job.stdout.split('\n').filter((l) => /^\[1\.\d\] WORKER \d of 3 job \d+$/.test(l));
    assert.equal(workers.length, 3, `each worker's line carries [1.rank]:\n${job.stdout}`);
  }
});

test('spawn of a script that is not there rejects with ERR_BOOT on every parent rank, where it is awaited', async () => {
  for (const extra of [[], ['--threads']]) {
    const job = await railcomm(['run', '-n', '3', ...extra, '--timeout', '60', jobScript('inter-spawn.mjs'), 'missing']);
    const out = `${extra.join(' ')}\n${job.stdout}\n${job.stderr}`;
    assert.equal(job.code, 0, out);
    assert.deepEqual(linesWith(job.stdout, 'MISSING').map((l) => `${l.rank} ${l.rest}`).sort(), ['0 ERR_BOOT', '1 ERR_BOOT', '2 ERR_BOOT'], out);
  }
});

test('spawned ranks that die before any traffic fail the receives waiting for them (named, ANY_SOURCE, probes)', async () => {
  const job = await railcomm(['run', '-n', '2', '--timeout', '60', jobScript('inter-spawn.mjs'), 'vanish']);
  const out = `${job.stdout}\n${job.stderr}`;
  assert.deepEqual(linesWith(job.stdout, 'VANISHED').map((l) => `${l.rank} ${l.rest}`).sort(),
    ['0', '1'].map((r) => `${r} ERR_PEER_FAILED ERR_PEER_FAILED ERR_PEER_FAILED ERR_PEER_FAILED`), out);
  assert.equal(job.code, 137, `the job reports its killed spawned ranks:\n${out}`);
});

test('spawn where railcomm run does not start the ranks fails with what to do', async () => {
  const r = await run(process.execPath, [jobScript('inter-spawn.mjs')], {});
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /ERR_BOOT|only railcomm run starts spawned ranks/);
  assert.match(r.stderr, /railcomm run -n N app\.js/);
});

test('killing the launcher of a job that spawned leaves no process behind', async () => {
  const child = spawn(process.execPath, [CLI, 'run', '-n', '2', '--timeout', '90', jobScript('inter-spawn.mjs'), 'hang'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...clean } });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const until = Date.now() + 60_000;
  while ((out.match(/HANGING/g) ?? []).length < 3 || !/SPAWNED/.test(out)) {
    assert.ok(Date.now() < until, `workers never started:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const closed = new Promise((r) => child.on('close', r));
  child.kill('SIGKILL');
  await closed;
  const script = jobScript('inter-spawn.mjs');
  let left = [];
  for (const stop = Date.now() + 10_000; Date.now() < stop;) {
    left = spawnSync('pgrep', ['-f', script], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
    if (left.length === 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.deepEqual(left, [], `processes left 10 s after the launcher was killed:\n${spawnSync('ps', ['-o', 'pid,args', '-p', left.join(',')], { encoding: 'utf8' }).stdout}`);
});

// ---- two jobs on two "hosts" (network namespaces) --------------------------------

const { subnet, A, B, why: hostsWhy } = twoHostNamespaces(String(10 + ((process.pid + 37) % 80)));
const twoHosts = need('netns', hostsWhy);
report('inter-job tests across hosts', twoHosts);

test('two jobs on two network-namespace hosts connect over tcp', twoHosts, async () => {
  const f = portFile();
  const [a, b] = await Promise.all([
    railcomm(['run', '-n', '3', '--timeout', '90', jobScript('inter-pair.mjs'), 'accept', f], { wrap: ['ip', 'netns', 'exec', A] }),
    railcomm(['run', '-n', '2', '--timeout', '90', jobScript('inter-pair.mjs'), 'connect', f], { wrap: ['ip', 'netns', 'exec', B] }),
  ]);
  allOk(a.stdout, 3, PAIR_CASES);
  allOk(b.stdout, 2, PAIR_CASES);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
});
