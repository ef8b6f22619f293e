// finalize() is a protocol (issue "Hardening"): two live ranks whose sends
// nobody receives both finish, on every rail and in threads; the unreceived
// messages are reported, the sends fail with ERR_PEER_FAILED, and a receive
// waiting for a rank that finalized without sending fails instead of hanging.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, linesWith } from './jobs.mjs';
import { loadNative } from '../../dist/native/addon.js';

const modes = [['--rails', 'tcp'], ['--rails', 'udp'], ['--threads']];
if (loadNative() !== null) modes.unshift(['--rails', 'shm']);

for (const mode of modes) {
  test(`crossed rendezvous sends at finalize complete and fail loudly (${mode.join(' ')})`, async () => {
    const job = await railcomm(['run', '-n', '2', ...mode, '--timeout', '30', jobScript('finalize-crossed.mjs')], { limitMs: 40_000 });
    assert.equal(job.code, 0, job.stdout + job.stderr);
    const results = linesWith(job.stdout, 'RESULT');
    for (const rank of [0, 1]) {
      const mine = results.filter((l) => l.rank === rank).map((l) => l.rest);
      assert.ok(mine.includes('big send: ERR_PEER_FAILED names the finalize'), mine.join('\n'));
      const ms = Number(/finalize done in (\d+) ms/.exec(mine.find((l) => l.startsWith('finalize done')) ?? '')?.[1]);
      assert.ok(ms < 5000, `rank ${rank} took ${ms} ms to finalize`);
    }
    assert.ok(results.some((l) => l.rank === 0 && l.rest === 'lonely receive: ERR_PEER_FAILED names the finalize'), job.stdout);
    // Each rank says which messages it never received.
    for (const rank of [0, 1]) assert.match(job.stderr, new RegExp(`\\[railcomm ${rank}\\] warn: finalize\\(\\): 2 messages from rank ${1 - rank} .* will never be received`));
  });
}

test('a receive from a rank that finalized without ever connecting fails (the wire-up service says it finalized), on every rail', async () => {
  for (const mode of modes) {
    const job = await railcomm(['run', '-n', '3', ...mode, '--timeout', '30', jobScript('finalize-never-met.mjs')], { limitMs: 40_000 });
    const out = `${mode.join(' ')}\n${job.stdout}\n${job.stderr}`;
    assert.equal(job.code, 0, out);
    const res = linesWith(job.stdout, 'RESULT');
    assert.equal(res.length, 2, out);
    for (const r of res) {
      const [a, b, ms] = r.rest.split(' ');
      assert.deepEqual([a, b], ['ERR_PEER_FAILED', 'ERR_PEER_FAILED'], out);
      assert.ok(Number(ms) < 10_000, `${mode.join(' ')}: rank ${r.rank} waited ${ms} ms`);
    }
  }
});

test('a message sent just before its sender finalized is received later by a rank that slept meanwhile, on every rail', async () => {
  for (const mode of modes) {
    const job = await railcomm(['run', '-n', '2', ...mode, '--timeout', '30', jobScript('finalize-late-recv.mjs')], { limitMs: 40_000 });
    const out = `${mode.join(' ')}\n${job.stdout}\n${job.stderr}`;
    assert.equal(job.code, 0, out);
    assert.deepEqual(linesWith(job.stdout, 'RESULT').map((l) => l.rest), ['got 1 bytes, tag 7, value 42'], out);
  }
});

test('a lane bound but never used, to a peer that finalized first: finalize stays quiet (no "cannot map its inbox")', loadNative() !== null ? {} : { skip: 'no native addon: no shm rail' }, async () => {
  const job = await railcomm(['run', '-n', '2', '--rails', 'shm,self', '--timeout', '30', jobScript('finalize-unwritten.mjs')], { limitMs: 40_000 });
  assert.equal(job.code, 0, job.stdout + job.stderr);
  assert.deepEqual(linesWith(job.stdout, 'RESULT').map((l) => l.rest), ["rank 0's inbox gone: true", 'finalized'], job.stdout);
  assert.doesNotMatch(job.stderr, /error|warn|dropping peer/, job.stderr);
});

for (const [kind, args] of [['processes', []], ['thread ranks', ['--threads']]]) {
  test(`collectives still running at finalize() fail with ERR_FINALIZED (${kind}; threads ended with exit code 13, saying nothing)`, kind === 'processes' && loadNative() === null ? { skip: 'no native addon: no shm rail' } : {}, async () => {
    for (const v of ['a', 'b']) {
      const job = await railcomm(['run', '-n', '3', ...args, '-x', `V=${v}`, '--timeout', '60', jobScript('coll-at-finalize.mjs')], { limitMs: 90_000 });
      assert.equal(job.code, 0, `V=${v}: ${job.stdout}${job.stderr}`);
      const res = linesWith(job.stdout, 'RESULT').map((l) => l.rest);
      assert.deepEqual(res, ['ERR_FINALIZED', 'ERR_FINALIZED', 'ERR_FINALIZED'], `V=${v}: ${job.stdout}${job.stderr}`);
    }
  });
}
