// The hang report (issue 19, point 1): ranks that wait with nothing completing
// anywhere in the job for RAILCOMM_HANG_TIMEOUT get one report from the
// launcher, naming who waits on whom and the cycle, in process and thread
// jobs; it never stops the job; a rank busy in its own code is progress; a
// rank with no launcher of ours prints its own.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { CLI, jobScript, railcomm, linesWith } from './jobs.mjs';

const HANG_MS = 1000;

/**
 * Runs a job until its stderr matches `until`, then `lingerMs` more (a second
 * report would show), then stops it with SIGTERM. Resolves with the output and
 * when the match arrived (ms after the start).
 */
function runUntil(args, until, { env = {}, lingerMs = 2500, limitMs = 60_000 } = {}) {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  let seenAt = -1;
  const t0 = Date.now();
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => {
    stderr += d;
    if (seenAt < 0 && until.test(stderr)) {
      seenAt = Date.now() - t0;
      setTimeout(() => child.kill('SIGTERM'), lingerMs);
    }
  });
  return new Promise((resolve, reject) => {
    const limit = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no match for ${until} after ${limitMs} ms\n${stdout}\n${stderr}`)); }, limitMs);
    child.on('close', (code, signal) => { clearTimeout(limit); resolve({ code, signal, stdout, stderr, seenAt }); });
  });
}

for (const mode of ['processes', 'threads']) {
  test(`a cycle of receives (${mode}): the launcher prints one report naming the cycle within the timeout, and the job goes on`, async () => {
    const args = ['run', '-n', '3', '--timeout', '40', ...(mode === 'threads' ? ['--threads'] : []), jobScript('deadlock.mjs')];
    const job = await runUntil(args, /deadlock: cycle/, { env: { RAILCOMM_HANG_TIMEOUT: String(HANG_MS) } });
    // Start-up (about a second on a loaded machine), then the timeout, then a look every quarter of it.
    assert.ok(job.seenAt < 15_000, `report after ${job.seenAt} ms`);
    assert.equal(job.code, 128 + 15, `stopped by our SIGTERM only, not by the report\n${job.stderr}`);
    assert.equal(job.stderr.match(/hang report:/g)?.length, 1, `printed once:\n${job.stderr}`);
    assert.match(job.stderr, /railcomm run: hang report: no operation completed on any running rank for at least \d\.\d s \(RAILCOMM_HANG_TIMEOUT=1000 ms\)/);
    for (let r = 0; r < 3; r++) {
      const next = (r + 1) % 3;
      assert.match(job.stderr, new RegExp(`rank ${r} waits on rank ${next}:\\n +receive on context 0 from rank ${next} tag 7 \\(4 B buffer\\), no matching message yet`), job.stderr);
    }
    assert.match(job.stderr, /deadlock: cycle rank 0 -> rank 1 -> rank 2 -> rank 0 \(each waits on the next\)/);
    assert.match(job.stderr, /the job goes on/);
    assert.match(job.stderr, /received SIGTERM/);
  });
}

test('a rendezvous send and a receive with the wrong tag: the report shows both sides and their cycle; --timeout ends the job', async () => {
  const job = await railcomm(['run', '-n', '2', '--timeout', '5', jobScript('hang.mjs')], { limitMs: 30_000, env: { RAILCOMM_HANG_TIMEOUT: '500' } });
  assert.equal(job.code, 124);
  assert.equal(job.stderr.match(/hang report:/g)?.length, 1, job.stderr);
  assert.match(job.stderr, /rank 0 waits on rank 1:\n +large send \(300000 B, tag 8\) to world rank 1: waiting for the receiver/);
  assert.match(job.stderr, /rank 1 waits on rank 0:\n +receive on context 0 from rank 0 tag 99 \(4 B buffer\), no matching message yet/);
  assert.match(job.stderr, /deadlock: cycle rank 0 -> rank 1 -> rank 0/);
  assert.match(job.stderr, /job exceeded --timeout 5 s/);
  // The report comes before the timeout, never instead of it.
  assert.ok(job.stderr.indexOf('hang report:') < job.stderr.indexOf('exceeded --timeout'), job.stderr);
});

test('a rank busy in its own code is progress: the rank waiting on it is not reported', async () => {
  const job = await railcomm(['run', '-n', '2', '--timeout', '30', jobScript('wait-on-busy.mjs')], { limitMs: 60_000, env: { RAILCOMM_HANG_TIMEOUT: '400' } });
  assert.equal(job.code, 0, `${job.stdout}\n${job.stderr}`);
  assert.deepEqual(linesWith(job.stdout, 'RESULT').map((l) => l.rest), ['got 42']);
  assert.doesNotMatch(job.stderr, /hang report|no request completed/);
});

test('without railcomm run (a world of one here) the rank prints its own report, once', async () => {
  const code = `
import { init } from ${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)};
const comm = await init();
await comm.recv(new Uint8Array(4), 0, 5);
`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RAILCOMM_HANG_TIMEOUT: '300' } });
  let stderr = '';
  const seen = new Promise((resolve) => child.stderr.on('data', (d) => {
    stderr += d;
    if (/tag 5/.test(stderr)) resolve();
  }));
  const limit = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await seen;
  await new Promise((r) => setTimeout(r, 1000));
  child.kill('SIGTERM');
  await new Promise((r) => child.on('close', r));
  clearTimeout(limit);
  assert.equal(stderr.match(/no request completed/g)?.length, 1, stderr);
  assert.match(stderr, /\[railcomm\] warn: rank 0: no request completed for \d+ ms \(RAILCOMM_HANG_TIMEOUT=300; the job goes on\); waiting on:\n {2}receive on context 0 from rank 0 tag 5 \(4 B buffer\), no matching message yet/);
});
