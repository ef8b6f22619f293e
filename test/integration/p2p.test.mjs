// Point-to-point over tcp in real 4-rank jobs: every case of
// test/jobs/p2p-suite.mjs becomes one test here (one job, many cases).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, caseResults } from './jobs.mjs';

const RANKS = 4;
const job = await railcomm(['run', '-n', String(RANKS), '--rails', 'tcp', '--timeout', '240', jobScript('p2p-suite.mjs')], { limitMs: 260_000 });
const results = caseResults(job.stdout);

test('the p2p job finishes and every rank exits 0', () => {
  assert.equal(job.code, 0, `exit ${job.code}\n${job.stdout.slice(-3000)}\n${job.stderr.slice(-3000)}`);
  assert.ok(results.size >= 21, `expected every case to report, got ${[...results.keys()].join(', ')}`);
});

for (const [name, byRank] of results) {
  test(`p2p over tcp, ${RANKS} ranks: ${name}`, () => {
    for (let r = 0; r < RANKS; r++) assert.equal(byRank.get(r), 'ok', `rank ${r}: ${byRank.get(r) ?? 'no report'}`);
  });
}
