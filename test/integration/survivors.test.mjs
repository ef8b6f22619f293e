// Survivors of a dead rank fail fast and finish (issues "Hardening" and "No
// silent failures"): ranks wired up by hand (env://, no railcomm run to kill
// them) whose peer is killed with SIGKILL mid-loop all get ERR_PEER_FAILED and
// finalize within seconds, 20 runs in a row over tcp and shm, allreduce and a
// point-to-point ring, with the service host (rank 0) or another rank killed;
// a thread rank that throws mid-allreduce fails its siblings' allreduce.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { readdirSync } from 'node:fs';
import { railcomm, jobScript, linesWith } from './jobs.mjs';
import { PEER_GONE_MS, within } from '../helpers/promises.mjs';
import { loadNative } from '../../dist/native/addon.js';

const clean = Object.fromEntries(Object.keys(process.env).filter((k) => /^(RAILCOMM_|OMPI_|PMIX_|SLURM_|PMI_)|^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT)$/.test(k)).map((k) => [k, undefined]));

function freePort() {
  return new Promise((resolve) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); }); });
}

/** One env:// job of 4 ranks; resolves with each rank's exit and RESULT line. */
async function envJob(mode, rails, victim) {
  const port = await freePort();
  return Promise.all([0, 1, 2, 3].map((r) => new Promise((resolve) => {
    const c = spawn(process.execPath, [jobScript('kill-survive.mjs'), mode, String(victim)], {
      env: { ...process.env, ...clean, RANK: String(r), WORLD_SIZE: '4', LOCAL_RANK: String(r), LOCAL_WORLD_SIZE: '4',
        MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), RAILCOMM_JOB_KEY: 'ab'.repeat(16), RAILCOMM_RAILS: rails },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.stderr.on('data', (d) => { out += d; });
    const t = setTimeout(() => c.kill('SIGKILL'), 30_000);
    c.on('close', (code, signal) => { clearTimeout(t); resolve({ rank: r, code, signal, out }); });
  })));
}

const shm = loadNative() !== null;
const combos = [];
for (const mode of ['allreduce', 'p2p']) for (const rails of shm ? ['tcp', 'shm'] : ['tcp']) for (const victim of [2, 0]) combos.push([mode, rails, victim]);

const shmNames = () => new Set(readdirSync('/dev/shm').filter((n) => n.startsWith('railcomm-')));

test('env://: survivors of a SIGKILLed rank get ERR_PEER_FAILED and finalize within seconds, 20 runs in a row', async () => {
  const before = shmNames();
  for (let i = 0; i < 20; i++) {
    const [mode, rails, victim] = combos[i % combos.length];
    const ranks = await envJob(mode, rails, victim);
    for (const r of ranks) {
      if (r.rank === victim) { assert.equal(r.signal, 'SIGKILL', `run ${i}: the victim was killed`); continue; }
      const what = `run ${i} (${mode} over ${rails}, rank ${victim} killed), rank ${r.rank}`;
      assert.equal(r.code, 0, `${what} exited with ${r.code} ${r.signal}:\n${r.out}`);
      const m = /RESULT rank \d+ got (\S+) after (\d+) ms, finalized in (\d+) ms/.exec(r.out);
      assert.ok(m, `${what} printed no result:\n${r.out}`);
      assert.equal(m[1], 'ERR_PEER_FAILED', what);
      assert.ok(Number(m[2]) < 3000 && Number(m[3]) < 3000, `${what}: failed after ${m[2]} ms, finalized in ${m[3]} ms`);
    }
  }
  // No launcher sweeps the job's names here: the survivors removed the dead rank's.
  assert.deepEqual([...shmNames()].filter((n) => !before.has(n)), []);
});

// (Process ranks under railcomm run are stopped by the launcher as soon as one fails, as mpirun does.)
test('railcomm run --threads: a thread rank that throws mid-allreduce fails its siblings\' allreduce within a second', async () => {
  const job = await railcomm(['run', '--threads', '-n', '4', '--timeout', '30', jobScript('kill-survive.mjs'), 'allreduce', '2'], { env: { HOW: 'throw' }, limitMs: 40_000 });
  assert.equal(job.code, 1, job.stdout + job.stderr);
  const results = linesWith(job.stdout, 'RESULT');
  assert.deepEqual(results.map((l) => l.rank).sort(), [0, 1, 3], job.stdout + job.stderr);
  for (const { rest } of results) {
    const m = /got (\S+) after (\d+) ms/.exec(rest);
    assert.equal(m?.[1], 'ERR_PEER_FAILED', rest);
    assert.ok(Number(m[2]) < 1000, rest);
  }
});

// (Processes only: a thread rank that exits unfinalized stops its whole process, its siblings with it.)
test('a message its sender saw complete before exiting is received, though the death notice came first (processes over shm, over tcp)', async () => {
  for (const args of [[], ['--rails', 'tcp']]) {
    const job = await railcomm(['run', '-n', '2', ...args, '--timeout', '30', jobScript('sent-before-exit.mjs')], { limitMs: 40_000 });
    const out = `${args.join(' ') || 'processes'}\n${job.stdout}\n${job.stderr}`;
    assert.deepEqual(linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`), ['1 got 7'], out);
  }
});

// udp's own detection of a dead peer takes a port check (about a second) or
// RAILCOMM_UDP_PEER_TIMEOUT (minutes, for a host gone silent); the wire-up
// service's notice must end a send already under way at once, as on every rail.
test('a large send under way to a rank that dies fails at the death notice (udp, and tcp)', async () => {
  for (const rails of ['udp,self', 'tcp']) {
    const job = await railcomm(['run', '-n', '2', '--rails', rails, '--grace', '10', '--timeout', '30', jobScript('send-to-dead.mjs')], { limitMs: 40_000 });
    const out = `${rails}\n${job.stdout}\n${job.stderr}`;
    const [r] = linesWith(job.stdout, 'RESULT');
    const m = /^(\S+) after (\d+) ms/.exec(r?.rest ?? '');
    assert.equal(m?.[1], 'ERR_PEER_FAILED', out);
    assert.ok(Number(m[2]) < within(PEER_GONE_MS), `${rails}: failed ${m[2]} ms after the death\n${out}`);
  }
});
