// Jobs started by launchers other than railcomm run: env:// by hand, and Open
// MPI's mpirun through PMIx and through MASTER_ADDR (skipped, with the reason
// printed, where mpirun or railcomm's PMIx module is missing; under CI=true,
// failed: helpers/requires.mjs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync, readdirSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { jobScript, caseResults, CLI, runCommand } from './jobs.mjs';
import { need, needAll, needPmix, report, which } from '../helpers/requires.mjs';

async function freePort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

const run = (cmd, args, env, limitMs = 60_000) => runCommand(cmd, args, env, limitMs);

// Launcher variables of the test runner's own environment must not leak in.
const clean = Object.fromEntries(Object.keys(process.env).filter((k) => /^(RAILCOMM_|OMPI_|PMIX_|SLURM_|PMI_)|^(RANK|WORLD_SIZE|LOCAL_RANK|MASTER_ADDR|MASTER_PORT)$/.test(k)).map((k) => [k, undefined]));

test('env://: 4 ranks started by hand with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT', async () => {
  const port = await freePort();
  const ranks = [3, 1, 0, 2].map((r) => run(process.execPath, [jobScript('wireup-check.mjs')],
    { ...clean, RANK: String(r), WORLD_SIZE: '4', LOCAL_RANK: String(r), MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) }));
  const res = await Promise.all(ranks);
  for (const r of res) assert.equal(r.code, 0, r.stderr);
  const lines = res.map((r) => r.stdout.split('\n').find((l) => l.startsWith('WIREUP '))).sort();
  assert.deepEqual(lines, [0, 1, 2, 3].map((r) => `WIREUP ok launcher=env rank=${r} size=4`));
  assert.ok(res.some((r) => /no RAILCOMM_JOB_KEY set/.test(r.stderr)), 'rank 0 warns that without a job key anyone could join');
});

test('env:// with RAILCOMM_JOB_KEY: no warning; a rank with another key cannot join', async () => {
  const port = await freePort();
  const key = 'ef'.repeat(16);
  const good = [0, 1].map((r) => run(process.execPath, [jobScript('wireup-check.mjs')],
    { ...clean, RANK: String(r), WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), RAILCOMM_JOB_KEY: key }));
  const res = await Promise.all(good);
  for (const r of res) { assert.equal(r.code, 0, r.stderr); assert.doesNotMatch(r.stderr, /no RAILCOMM_JOB_KEY/); }
  const port2 = await freePort();
  const r0 = run(process.execPath, [jobScript('wireup-check.mjs')], { ...clean, RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port2), RAILCOMM_JOB_KEY: key, RAILCOMM_CONNECT_TIMEOUT: '3000' }, 30_000);
  const bad = await run(process.execPath, [jobScript('wireup-check.mjs')], { ...clean, RANK: '1', WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port2), RAILCOMM_JOB_KEY: '12'.repeat(16), RAILCOMM_CONNECT_TIMEOUT: '3000' }, 30_000);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /cannot reach rank 0's wire-up service/);
  const first = await r0;
  assert.notEqual(first.code, 0, 'rank 0 alone cannot finish the job either');
});

const mpirun = which('mpirun');
const mpirunThere = need('mpirun', mpirun ? null : 'mpirun is not on PATH');
const mpirunPmix = needAll(mpirunThere, needPmix());
report('mpirun PMIx tests', mpirunPmix);
const wireupLines = (stdout, prefix) => stdout.trim().split('\n').filter((l) => l.startsWith(prefix)).sort();

test("Open MPI's mpirun -n 4 with -x MASTER_ADDR -x MASTER_PORT (PMIx disabled)", mpirunThere, async () => {
  const port = await freePort();
  const r = await run(mpirun, ['--allow-run-as-root', '--oversubscribe', '-n', '4', '-x', 'MASTER_ADDR=127.0.0.1', '-x', `MASTER_PORT=${port}`, '-x', 'RAILCOMM_NO_PMIX=1',
    process.execPath, jobScript('wireup-check.mjs')], clean, 120_000);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(wireupLines(r.stdout, 'WIREUP '), [0, 1, 2, 3].map((x) => `WIREUP ok launcher=openmpi rank=${x} size=4`));
  for (const l of wireupLines(r.stdout, 'WIREUP-VIA')) assert.match(l, new RegExp(`rank 0's service at 127.0.0.1:${port} \\(PMIx unavailable: disabled by RAILCOMM_NO_PMIX=1\\)`));
});

test("Open MPI's mpirun -n 4 without MASTER_ADDR: wire-up through PMIx, no job key warning", mpirunPmix, async () => {
  // Over tcp, whose handshake proves every rank holds the job key rank 0 shared through PMIx.
  const r = await run(mpirun, ['--allow-run-as-root', '--oversubscribe', '-n', '4', '-x', 'RAILCOMM_RAILS=tcp', process.execPath, jobScript('wireup-check.mjs')], clean, 120_000);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(wireupLines(r.stdout, 'WIREUP '), [0, 1, 2, 3].map((x) => `WIREUP ok launcher=openmpi rank=${x} size=4`));
  const via = wireupLines(r.stdout, 'WIREUP-VIA');
  assert.equal(via.length, 4);
  for (const l of via) assert.match(l, /^WIREUP-VIA rank=\d PMIx \(namespace \S+, OpenPMIx/);
  assert.doesNotMatch(r.stderr, /no RAILCOMM_JOB_KEY/, 'the job key travelled through PMIx');
});

test("railcomm info under mpirun says it connected to the PMIx server", mpirunPmix, async () => {
  const r = await run(mpirun, ['--allow-run-as-root', '-n', '1', process.execPath, CLI, 'info'], clean, 60_000);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^pmix: available \(PMIx module loaded .*\); started under PMIx: connected to the launcher's server \(namespace \S+, rank 0 of 1/m);
  assert.match(r.stdout, /wire-up: PMIx \(namespace /);
});

test("Open MPI's mpirun -n 4 through PMIx: the point-to-point suite", mpirunPmix, async () => {
  const r = await run(mpirun, ['--allow-run-as-root', '--oversubscribe', '-n', '4', '--tag-output', process.execPath, jobScript('p2p-suite.mjs')], clean, 120_000);
  // --tag-output prefixes lines with "[jobid,r]<stdout>:"; make them look like railcomm run's "[r] ".
  const res = caseResults(r.stdout.replace(/^\[\d+,(\d+)\]<stdout>:\s?/gm, '[$1] '));
  assert.ok(res.size >= 21, r.stderr.slice(-2000));
  for (const [name, byRank] of res) for (let k = 0; k < 4; k++) assert.equal(byRank.get(k), 'ok', `${name}, rank ${k}: ${byRank.get(k)}`);
  assert.equal(r.code, 0);
});

test("mpirun killed mid-job: ranks wired up through PMIx exit, none is left behind", mpirunPmix, async () => {
  const child = spawn(mpirun, ['--allow-run-as-root', '--oversubscribe', '-n', '2', process.execPath, jobScript('wait-after-init.mjs')],
    { env: { ...process.env, ...clean }, stdio: ['ignore', 'pipe', 'pipe'] });
  const pids = [];
  let out = '';
  let job = '';
  try {
    await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`ranks did not come up: ${out}`)), 30_000);
      child.stdout.on('data', (d) => {
        out += d;
        for (const m of out.matchAll(/^UP rank=\d+ pid=(\d+) job=(\S+)$/gm)) { job = m[2]; if (!pids.includes(Number(m[1]))) pids.push(Number(m[1])); }
        if (pids.length === 2) { clearTimeout(t); resolve(); }
      });
    });
    child.kill('SIGKILL');
    const alive = (pid) => { try { process.kill(pid, 0); return !/^\S+ \S+ Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/\(.*\)/, 'x')); } catch { return false; } };
    const t0 = Date.now();
    while (pids.some(alive) && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(pids.filter(alive), [], 'ranks outlived mpirun');
    assert.deepEqual(readdirSync('/dev/shm').filter((n) => n.startsWith(job)), [], 'the job left shared-memory segments');
  } finally {
    child.kill('SIGKILL');
    for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  }
});

test('mpirun through PMIx: a rank that never calls init() fails the others within RAILCOMM_CONNECT_TIMEOUT', mpirunPmix, async () => {
  const r = await run(mpirun, ['--allow-run-as-root', '--oversubscribe', '-n', '2', '-x', 'RAILCOMM_CONNECT_TIMEOUT=2000', process.execPath, jobScript('late-rank.mjs')], clean, 60_000);
  assert.notEqual(r.code, 0);
  const m = /^LATE rank 0 failed after (\d+) ms: ERR_TIMEOUT: .*not all 2 ranks arrived within 2000 ms/m.exec(r.stdout);
  assert.ok(m, r.stdout + r.stderr);
  assert.ok(Number(m[1]) < 10_000, `took ${m[1]} ms`);
});

test('mpirun through PMIx: a rank that dies before the first collective leaves no shared segment in /dev/shm', mpirunPmix, async () => {
  const r = await run(mpirun, ['--allow-run-as-root', '--oversubscribe', '-n', '3', process.execPath, jobScript('coll-peer-dies-first.mjs')], clean, 60_000);
  assert.notEqual(r.code, 0, 'rank 1 failed');
  const prefix = /^PREFIX (\S+)$/m.exec(r.stdout)?.[1];
  assert.ok(prefix, r.stdout + r.stderr);
  await new Promise((res) => setTimeout(res, 1000));
  assert.deepEqual(readdirSync('/dev/shm').filter((n) => n.startsWith(prefix)), [], `${r.stdout}${r.stderr}`);
});

for (const after of ['init', 'talk']) {
  test(`mpirun through PMIx: a rank killed by SIGKILL (after ${after === 'init' ? 'init(), before any rank talked to it' : 'talking to every rank over shm'}) leaves no name of the job in /dev/shm`, mpirunPmix, async () => {
    // No launcher sweeps /dev/shm under mpirun, which stops the other ranks (SIGTERM) once one dies:
    // the survivors remove the dead rank's inbox, rings and segments as they leave.
    const r = await run(mpirun, ['--allow-run-as-root', '--oversubscribe', '-n', '3', '-x', `KILL_AFTER=${after}`, process.execPath, jobScript('shm-killed-mpirun.mjs')], clean, 60_000);
    assert.notEqual(r.code, 0, 'rank 2 was killed');
    const prefix = /^PREFIX (\S+)$/m.exec(r.stdout)?.[1];
    assert.ok(prefix, r.stdout + r.stderr);
    await new Promise((res) => setTimeout(res, 1000));
    assert.deepEqual(readdirSync('/dev/shm').filter((n) => n.startsWith(prefix)), [], `${r.stdout}${r.stderr}`);
  });
}

test("Open MPI's mpirun without PMIx module and without MASTER_ADDR: a clear ERR_BOOT, no hang", mpirunThere, async () => {
  const r = await run(mpirun, ['--allow-run-as-root', '--oversubscribe', '-n', '2', '-x', 'RAILCOMM_NO_PMIX=1', process.execPath, jobScript('wireup-check.mjs')], clean, 60_000);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /ERR_BOOT/);
  assert.match(r.stderr, /PMIx module is unavailable \(disabled by RAILCOMM_NO_PMIX=1\) and MASTER_ADDR and MASTER_PORT are not set/);
});
