// The shared-memory reduce path (one phase below RAILCOMM_COLL_SHARED_SPLIT,
// split arithmetic above, a slot at a time) at its edges, with a 4 KiB slot so
// that small vectors cross slot boundaries, and a 64 KiB one so that blocks
// are long enough for the addon's kernels: thread ranks (SharedArrayBuffer)
// and processes (a /dev/shm segment; skipped, saying why, without the addon;
// under CI=true, failed: helpers/requires.mjs),
// 2, 3 and 5 ranks. RAILCOMM_PROTO_INFO shows the shared path really ran.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, caseResults, linesWith } from './jobs.mjs';
import { needAddon } from '../helpers/requires.mjs';

const ENV = { RAILCOMM_COLL_SHARED_SLOT: '4096', RAILCOMM_COLL_SHARED_SPLIT: '256', RAILCOMM_PROTO_INFO: '1' };
const shm = needAddon();

async function suite(args, ranks, env = ENV) {
  const job = await railcomm(['run', ...args, '--timeout', '200', jobScript('coll-shared-suite.mjs')], { limitMs: 230_000, env });
  const res = caseResults(job.stdout);
  assert.ok(res.size >= 3, `cases reported: ${[...res.keys()].join(', ')}\n${job.stderr.slice(-2000)}`);
  for (const [name, byRank] of res) for (let r = 0; r < ranks; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0, job.stderr.slice(-2000));
  assert.match(job.stderr, new RegExp(`allreduce on ${ranks} ranks: shared memory`), 'the shared path ran');
}

for (const p of [2, 3, 5]) {
  test(`shared-memory reduce edges, ${p} thread ranks`, () => suite(['-n', String(p), '--threads'], p));
  test(`shared-memory reduce edges, ${p} processes`, shm, () => suite(['-n', String(p)], p));
}
const LONG = { ...ENV, RAILCOMM_COLL_SHARED_SLOT: '65536' };
test('shared-memory reduce edges with long blocks, 3 thread ranks', () => suite(['-n', '3', '--threads'], 3, LONG));
test('shared-memory reduce edges with long blocks, 2 processes', shm, () => suite(['-n', '2'], 2, LONG));

test('finalize ends the doorbell thread of every communicator whose collectives used a /dev/shm segment', shm, async () => {
  const job = await railcomm(['run', '-n', '2', '--timeout', '60', jobScript('coll-shared-threads-end.mjs')], { limitMs: 90_000, env: { RAILCOMM_RAILS: 'shm,self' } });
  assert.equal(job.code, 0, job.stderr.slice(-2000));
  for (const { rest } of linesWith(job.stdout, 'THREADS')) {
    const [before, during, after] = rest.split(' ').map(Number);
    assert.ok(during >= before + 4, `4 dups, 4 doorbell threads: ${rest}`);
    assert.ok(after < before, `all gone after finalize (the rail's too): ${rest}`);
  }
  assert.equal(linesWith(job.stdout, 'THREADS').length, 2, job.stdout);
});
