// A real single-host Slurm (Debian slurm-wlm + munge, started by
// test/helpers/slurm.sh as root, stopped afterwards): srun starts the ranks;
// plain srun wires up through rank 0's service on the step's first host,
// srun --mpi=pmix through Slurm's PMIx server. Skipped, saying why, where
// missing; under CI=true a missing Slurm or PMIx module fails (helpers/requires.mjs).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jobScript, caseResults } from './jobs.mjs';
import { need, needAll, needPmix, notRoot, report } from '../helpers/requires.mjs';

const helper = fileURLToPath(new URL('../helpers/slurm.sh', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'railcomm-slurm-'));
const port = String(20000 + (process.pid % 20000));

function setup() {
  if (spawnSync('which', ['slurmctld']).status !== 0) return 'Slurm is not installed (Debian slurm-wlm, munge)';
  if (notRoot()) return 'this test runs the Slurm daemons as root';
  const r = spawnSync(helper, ['up', dir], { encoding: 'utf8', env: { ...process.env, SLURM_TEST_PORT: port }, timeout: 60_000 });
  if (r.status !== 0) { spawnSync(helper, ['down', dir]); return `Slurm did not start: ${(r.stderr || r.error?.message || '').trim().slice(0, 300)}`; }
  return null;
}
const skipReason = setup();
const slurm = need('slurm', skipReason);
report('Slurm tests', slurm);
after(() => { if (!skipReason) spawnSync(helper, ['down', dir]); });

const clean = Object.fromEntries(Object.keys(process.env).filter((k) => /^(RAILCOMM_|OMPI_|PMIX_|SLURM_|PMI_)|^(RANK|WORLD_SIZE|LOCAL_RANK|MASTER_ADDR|MASTER_PORT)$/.test(k)).map((k) => [k, undefined]));

function srun(args, limitMs = 120_000, env = { RAILCOMM_JOB_KEY: 'aa'.repeat(16) }) {
  const child = spawn('srun', args, { env: { ...process.env, ...clean, SLURM_CONF: join(dir, 'slurm.conf'), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '', stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`srun still running after ${limitMs} ms\n${stdout}\n${stderr}`)); }, limitMs);
    child.on('close', (code) => { clearTimeout(t); resolve({ code, stdout, stderr }); });
  });
}

const wireupLines = (stdout, prefix) => stdout.trim().split('\n').filter((l) => l.startsWith(prefix)).sort();

test('srun -n 4 --overcommit node app.js wires up through rank 0\'s service', slurm, async () => {
  const r = await srun(['-n', '4', '--overcommit', process.execPath, jobScript('wireup-check.mjs')]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(wireupLines(r.stdout, 'WIREUP '), [0, 1, 2, 3].map((x) => `WIREUP ok launcher=slurm rank=${x} size=4`));
  for (const l of wireupLines(r.stdout, 'WIREUP-VIA')) assert.match(l, /rank 0's service at /);
});

const slurmPmix = needAll(slurm, needPmix());
test('srun --mpi=pmix -n 4 --overcommit node app.js wires up through PMIx (no job key given, no warning)', slurmPmix, async () => {
  const r = await srun(['--mpi=pmix', '-n', '4', '--overcommit', process.execPath, jobScript('wireup-check.mjs')], 120_000, {});
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(wireupLines(r.stdout, 'WIREUP '), [0, 1, 2, 3].map((x) => `WIREUP ok launcher=slurm rank=${x} size=4`));
  const via = wireupLines(r.stdout, 'WIREUP-VIA');
  assert.equal(via.length, 4);
  for (const l of via) assert.match(l, /^WIREUP-VIA rank=\d PMIx \(namespace slurm\.pmix\.\d+\.\d+, /);
  assert.doesNotMatch(r.stderr, /no RAILCOMM_JOB_KEY/);
});

test('srun --mpi=pmix with PMIx turned off falls back to rank 0\'s service', slurm, async () => {
  const r = await srun(['--mpi=pmix', '-n', '4', '--overcommit', process.execPath, jobScript('wireup-check.mjs')], 120_000, { RAILCOMM_JOB_KEY: 'aa'.repeat(16), RAILCOMM_NO_PMIX: '1' });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(wireupLines(r.stdout, 'WIREUP '), [0, 1, 2, 3].map((x) => `WIREUP ok launcher=slurm rank=${x} size=4`));
  for (const l of wireupLines(r.stdout, 'WIREUP-VIA')) assert.match(l, /rank 0's service at .* \(PMIx unavailable: disabled by RAILCOMM_NO_PMIX=1\)/);
});

test('srun -n 4: the point-to-point suite', slurm, async () => {
  const r = await srun(['-n', '4', '--overcommit', '--label', process.execPath, jobScript('p2p-suite.mjs')]);
  // --label prefixes lines with "r: "; make them look like railcomm run's "[r] ".
  const res = caseResults(r.stdout.replace(/^(\d+): /gm, '[$1] '));
  assert.ok(res.size >= 19, r.stderr.slice(-2000));
  for (const [name, byRank] of res) for (let k = 0; k < 4; k++) assert.equal(byRank.get(k), 'ok', `${name}, rank ${k}: ${byRank.get(k)}`);
  assert.equal(r.code, 0);
});
