// Failures a user must survive: a rank that dies mid-job, connections that do
// not know the job key, random bytes and malformed frames on a rank's port.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, linesWith } from './jobs.mjs';
import { PEER_GONE_MS, MARGIN_MS, within } from '../helpers/promises.mjs';

test('a rank that exits mid-job: survivors get ERR_PEER_FAILED within a second, never a hang', async () => {
  const job = await railcomm(['run', '-n', '3', '--timeout', '60', jobScript('fault-peer-exit.mjs')], { limitMs: 90_000 });
  assert.equal(job.code, 3, 'the launcher returns the dead rank\'s exit code');
  const results = linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`);
  for (const want of [
    '0 recv from dead rank: ERR_PEER_FAILED',
    '0 ANY_SOURCE recv: ERR_PEER_FAILED',
    '0 rendezvous send to dead rank: ERR_PEER_FAILED',
    '0 send after failure: ERR_PEER_FAILED',
    '0 survivors talk: ok',
    '1 recv from dead rank: ERR_PEER_FAILED',
  ]) assert.ok(results.includes(want), `missing '${want}' in:\n${job.stdout}\n${job.stderr}`);
  // README: a rank whose process vanished fails the requests on it within a second (shm here; tcp sees the socket close).
  const elapsed = linesWith(job.stdout, 'ELAPSED');
  assert.deepEqual(elapsed.map((l) => l.rank).sort(), [0, 1], job.stdout);
  for (const { rank, rest } of elapsed) assert.ok(Number(rest) < within(PEER_GONE_MS), `rank ${rank} took ${rest} ms, README promises ${PEER_GONE_MS} (+${MARGIN_MS} margin)`);
  assert.match(job.stderr, /rank 2 exited with code 3/);
});

test('bad connections are refused and counted; the job is unaffected', async () => {
  const job = await railcomm(['run', '-n', '3', '--timeout', '60', jobScript('fault-auth.mjs')], { limitMs: 90_000 });
  assert.equal(job.code, 0, `${job.stdout}\n${job.stderr}`);
  const results = linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`);
  for (const want of [
    '2 random bytes: closed',
    '2 wrong key: closed',
    '2 wrong job: rejected',
    '2 malformed frame after auth: closed',
    '1 recv from the peer whose stream was malformed: ERR_PEER_FAILED',
    '1 rank 1 badFrames 1',
    '0 ranks 0 and 1 still talk: ok',
  ]) assert.ok(results.includes(want), `missing '${want}' in:\n${job.stdout}\n${job.stderr}`);
  const refused = results.find((r) => r.startsWith('0 rank 0 refused'));
  assert.ok(refused && Number(refused.split(' ').pop()) >= 3, refused);
  assert.match(job.stderr, /malformed stream \(bad magic 0xeeee\)/);
  assert.match(job.stderr, /does not know the job key/);
});

// (A rank that waits too long, and the launcher's report of it: hang.test.mjs.)

test('a rank that waits on one receive while small messages keep completing is not reported as hung', async () => {
  const job = await railcomm(['run', '-n', '2', '--timeout', '30', jobScript('busy-no-hang.mjs')], { limitMs: 60_000, env: { RAILCOMM_HANG_TIMEOUT: '300' } });
  assert.equal(job.code, 0, `${job.stdout}\n${job.stderr}`);
  assert.equal(linesWith(job.stdout, 'RESULT').length, 2, job.stdout);
  // Under railcomm run a rank's report goes to the launcher, which prints only when every rank is stuck.
  assert.doesNotMatch(job.stderr, /hang report|no request completed/);
});

test('a stream of one-sided gets completing over a network rail is not reported as hung', async () => {
  const job = await railcomm(['run', '-n', '2', '--rails', 'tcp', '--timeout', '30', jobScript('rma-busy-no-hang.mjs')], { limitMs: 60_000, env: { RAILCOMM_HANG_TIMEOUT: '300' } });
  assert.equal(job.code, 0, `${job.stdout}\n${job.stderr}`);
  assert.equal(linesWith(job.stdout, 'RESULT').length, 2, job.stdout);
  // (Rank 1 really waits in the barrier meanwhile, and may tell the launcher so;
  // a report from rank 0 too would make the launcher print the picture.)
  assert.doesNotMatch(job.stderr, /hang report|no request completed/);
});

test('with no eager credit at all, eager-sized sends still never wait for the receiver, and empty messages flow', async () => {
  const job = await railcomm(['run', '-n', '2', '--timeout', '60', jobScript('no-credits.mjs')], { limitMs: 90_000, env: { RAILCOMM_EAGER_CREDITS: '0' } });
  assert.equal(job.code, 0, `${job.stdout}\n${job.stderr}`);
  const oks = job.stdout.split('\n').filter((l) => l.endsWith(' ok'));
  assert.equal(oks.length, 6, job.stdout);
});

test('finalize edges: a full write batch at close, probes of a finalized rank, receives pending at finalize', async () => {
  const job = await railcomm(['run', '-n', '2', '--timeout', '60', jobScript('finalize-edge.mjs')], { limitMs: 90_000 });
  assert.equal(job.code, 0, `${job.stdout}\n${job.stderr}`);
  const results = linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`);
  for (const want of [
    '1 finalize after a full batch: ok',
    '0 4096 empty messages: received',
    '0 send to a finalized rank: ERR_PEER_FAILED',
    '0 probe from a finalized rank: ERR_PEER_FAILED',
    '0 recvObject from a finalized rank: ERR_PEER_FAILED',
    '0 mprobe from a finalized rank: ERR_PEER_FAILED',
    '0 pending receive at finalize: ERR_FINALIZED',
    '0 pending probe at finalize: ERR_FINALIZED',
  ]) assert.ok(results.includes(want), `missing '${want}' in:\n${job.stdout}\n${job.stderr}`);
});
