// The second-wave API in real jobs: object collectives, user-defined ops,
// Cartesian grids with a halo exchange, waitSome/testAll/testAny and argument
// errors (test/jobs/api-suite.mjs) on 1, 3, 4 and 7 ranks as processes and as
// threads (and over tcp, where the point-to-point algorithms run); the
// collective mismatch check (test/jobs/check-suite.mjs) in each mode.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, caseResults } from './jobs.mjs';

/** Every case reported ok by every rank, and the job exited 0. */
function allOk(job, p, minCases) {
  const res = caseResults(job.stdout);
  assert.ok(res.size >= minCases, `cases reported: ${[...res.keys()].join(', ')}\n${job.stdout.slice(-2000)}\n${job.stderr.slice(-2000)}`);
  for (const [name, byRank] of res) for (let r = 0; r < p; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0, job.stderr.slice(-2000));
}

const API_CASES = 13;
const modes = [
  ...[1, 3, 4, 7].map((p) => ({ p, args: [], what: 'processes' })),
  ...[3, 4, 7].map((p) => ({ p, args: ['--threads'], what: 'threads' })),
  { p: 4, args: ['--rails', 'tcp'], what: 'processes over tcp' },
];
for (const { p, args, what } of modes) {
  test(`new API against sequential references: ${p} rank${p > 1 ? 's' : ''}, ${what}`, async () => {
    const job = await railcomm(['run', '-n', String(p), ...args, '--timeout', '100', jobScript('api-suite.mjs')], { limitMs: 130_000 });
    allOk(job, p, API_CASES);
  });
}

const checkModes = [
  { p: 1, args: [], what: 'one rank' },
  { p: 3, args: [], what: 'processes (shared segment)' },
  { p: 3, args: ['--rails', 'tcp'], what: 'processes over tcp (point-to-point agreement)' },
  { p: 4, args: ['--threads'], what: 'threads' },
  { p: 4, args: ['--threads-per-process', '2'], what: 'two processes of two threads' },
];
for (const { p, args, what } of checkModes) {
  test(`RAILCOMM_CHECK=1 fails every mismatch on every rank and the communicator stays usable: ${what}`, async () => {
    const job = await railcomm(['run', '-n', String(p), ...args, '-x', 'RAILCOMM_CHECK=1', '--timeout', '100', jobScript('check-suite.mjs')], { limitMs: 130_000 });
    allOk(job, p, p > 1 ? 14 : 1);
  });
}

test('init({ check: true }) turns the check on without the environment', async () => {
  const job = await railcomm(['run', '-n', '3', '-x', 'USE_INIT_CHECK=1', '--timeout', '100', jobScript('check-suite.mjs')], { limitMs: 130_000, env: { RAILCOMM_CHECK: '' } });
  allOk(job, 3, 14);
});

test('the API suite also passes with the check on (every collective agreed first)', async () => {
  const job = await railcomm(['run', '-n', '4', '-x', 'RAILCOMM_CHECK=1', '--timeout', '100', jobScript('api-suite.mjs')], { limitMs: 130_000 });
  allOk(job, 4, API_CASES);
});
