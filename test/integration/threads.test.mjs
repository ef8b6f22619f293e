// Worker-thread ranks over the tbsm rail (railcomm run --threads), and the
// hybrid layout (--threads-per-process: tbsm inside a process, tcp between).
// The same job scripts as the process-rank tests.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, caseResults } from './jobs.mjs';

async function suite(args, script, ranks, minCases) {
  const job = await railcomm(['run', ...args, '--timeout', '200', jobScript(script)], { limitMs: 230_000 });
  const res = caseResults(job.stdout);
  assert.ok(res.size >= minCases, `cases reported: ${[...res.keys()].join(', ')}\n${job.stderr.slice(-2000)}`);
  for (const [name, byRank] of res) for (let r = 0; r < ranks; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0, job.stderr.slice(-2000));
}

test('point-to-point suite, 4 thread ranks (tbsm)', () => suite(['-n', '4', '--threads'], 'p2p-suite.mjs', 4, 23));
test('point-to-point suite, 2 processes x 2 threads (tbsm + shm, or tcp without the addon)', () => suite(['-n', '4', '--threads-per-process', '2'], 'p2p-suite.mjs', 4, 23));
for (const p of [2, 3, 7]) {
  test(`collectives, ${p} thread ranks`, () => suite(['-n', String(p), '--threads'], 'coll-suite.mjs', p, 7));
}

test('16 thread ranks on 2 cores (oversubscribed): idle waits, ring, all-to-all, large messages', () => suite(['-n', '16', '--threads'], 'shm-suite.mjs', 16, 4));

test('thread ranks use tbsm among themselves (railcomm bench --threads)', async () => {
  const job = await railcomm(['bench', 'latency', '--threads', '--sizes', '8,100000', '--iters', '200', '--json'], { limitMs: 60_000 });
  assert.equal(job.code, 0, job.stderr);
  const r = JSON.parse(job.stdout.trim());
  assert.equal(r.rails, 'tbsm');
});
