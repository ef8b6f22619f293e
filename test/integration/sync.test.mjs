// The synchronous calls (DESIGN 4b: sendSync, recvSync, sendrecvSync,
// barrierSync, bcastSync, allreduceSync, reduceSync, allgatherSync) and the
// async sendrecv: against references on processes and threads, mixed with the
// async API, through the shared segment and over point-to-point, under
// RAILCOMM_CHECK; ERR_NO_RAIL over tcp; a peer that dies while a rank waits;
// the hang report from inside a synchronous wait; no allocation per call.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, caseResults, linesWith } from './jobs.mjs';
import { needAddon } from '../helpers/requires.mjs';
import { PEER_GONE_MS, within } from '../helpers/promises.mjs';

const shm = needAddon();

async function suite(args, ranks, env = {}) {
  const job = await railcomm(['run', ...args, '--timeout', '200', jobScript('sync-suite.mjs')], { limitMs: 230_000, env });
  const res = caseResults(job.stdout);
  assert.ok(res.size >= 18, `cases reported: ${[...res.keys()].join(', ')}\n${job.stderr.slice(-2000)}`);
  for (const [name, byRank] of res) for (let r = 0; r < ranks; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0, job.stderr.slice(-2000));
}

test('sync calls, 2 processes (shm)', shm, () => suite(['-n', '2'], 2));
test('sync calls, 3 thread ranks (tbsm)', () => suite(['-n', '3', '--threads'], 3));
test('sync calls, 4 ranks as 2 processes x 2 threads (tbsm and shm)', shm, () => suite(['-n', '4', '--threads-per-process', '2'], 4));
test('sync collectives over point-to-point (no shared segment), 3 processes', shm, () => suite(['-n', '3'], 3, { RAILCOMM_COLL_SHARED_MAX: '0' }));
test('sync collectives agree first under RAILCOMM_CHECK, 2 thread ranks', () => suite(['-n', '2', '--threads'], 2, { RAILCOMM_CHECK: '1' }));
test('sync collectives with leader phases (RAILCOMM_COLL_SHARED_FLAT=1), 4 thread ranks', () => suite(['-n', '4', '--threads'], 4, { RAILCOMM_COLL_SHARED_FLAT: '1' }));

test('over tcp the sync calls throw ERR_NO_RAIL at the call, naming the rail and the async call', async () => {
  const job = await railcomm(['run', '-n', '2', '--rails', 'tcp,self', '--timeout', '60', jobScript('sync-norail.mjs')], { limitMs: 90_000 });
  const res = caseResults(job.stdout);
  assert.equal(res.size, 3, job.stdout + job.stderr);
  for (const [name, byRank] of res) for (const r of [0, 1]) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0, job.stderr.slice(-2000));
});

for (const [kind, args, need] of [['process', [], shm], ['thread', ['--threads'], {}]]) {
  test(`a peer ${kind} that dies while a rank waits in recvSync: ERR_PEER_FAILED within the detection time, never a hang`, need, async () => {
    const job = await railcomm(['run', '-n', '2', ...args, '--timeout', '60', jobScript('sync-peer-exit.mjs')], { limitMs: 90_000 });
    const results = linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`);
    for (const want of ['0 recvSync: ERR_PEER_FAILED', '0 barrierSync: ERR_PEER_FAILED', '0 sendSync: ERR_PEER_FAILED']) {
      assert.ok(results.includes(want), `missing '${want}' in:\n${job.stdout}\n${job.stderr}`);
    }
    const [elapsed] = linesWith(job.stdout, 'ELAPSED');
    assert.ok(elapsed !== undefined && Number(elapsed.rest) < within(PEER_GONE_MS), `detected after ${elapsed?.rest} ms (README promises ${PEER_GONE_MS})`);
  });
}

for (const [kind, args, need] of [['processes', [], shm], ['threads', ['--threads'], {}]]) {
  test(`a recvSync waiting past RAILCOMM_HANG_TIMEOUT prints the hang report (${kind})`, need, async () => {
    const job = await railcomm(['run', '-n', '2', ...args, '--timeout', '60', jobScript('sync-hang.mjs')], { limitMs: 90_000, env: { RAILCOMM_HANG_TIMEOUT: '400' } });
    assert.equal(job.code, 0, job.stderr.slice(-2000));
    assert.match(job.stderr, /recvSync from rank 1 \(world rank 1\) tag 7: waiting at the call/);
    assert.match(job.stderr, /RAILCOMM_HANG_TIMEOUT=400/);
    assert.deepEqual(linesWith(job.stdout, 'GOT').map((l) => l.rest), ['42'], 'the message still arrives');
  });
}

test('sendSync/recvSync and allreduceSync allocate nothing per call: no collection over a million calls', shm, async () => {
  const job = await railcomm(['run', '-n', '2', '--rails', 'shm,self', '--timeout', '120', jobScript('sync-alloc.mjs'), '1000000'], { limitMs: 150_000 });
  assert.equal(job.code, 0, job.stderr.slice(-2000));
  for (const tag of ['ALLOC', 'ALLOC_COLL']) {
    const [line] = linesWith(job.stdout, tag);
    assert.ok(line !== undefined, `${tag} missing: ${job.stdout}${job.stderr}`);
    const r = JSON.parse(line.rest);
    assert.equal(r.gcs, 0, `${tag}: garbage collections during a million calls: ${r.gcs} (${(r.kinds ?? []).join(", ")})`);
    // Some KiB come from the clock, the observer and the code around the loop, not from the calls.
    assert.ok(r.heapGrowthBytes < 512 * 1024, `${tag}: heap grew ${r.heapGrowthBytes} bytes over a million calls`);
  }
});

test('a synchronous wait spins RAILCOMM_SPIN_US of time, not of polls, before it blocks on the doorbell (shm, 2 processes)', async () => {
  const job = await railcomm(['run', '-n', '2', '--rails', 'shm,self', '--timeout', '30', jobScript('sync-spin.mjs')], { limitMs: 60_000, env: { RAILCOMM_SPIN_US: '200000' } });
  assert.equal(job.code, 0, job.stderr.slice(-2000));
  assert.deepEqual(linesWith(job.stdout, 'SHORT').map((l) => `${l.rank} ${l.rest}`), ['0 0'], 'a 30 ms wait within a 200 ms budget never blocks');
  assert.deepEqual(linesWith(job.stdout, 'LONG').map((l) => `${l.rank} ${l.rest}`), ['0 blocked 2'], 'a 600 ms wait blocks past the budget and gets its message');
});

test('a synchronous wait first sends what the udp rail packed for the end of the run (2 processes x 2 threads, udp between them)', async () => {
  const job = await railcomm(['run', '-n', '4', '--threads-per-process', '2', '--rails', 'udp,tbsm,self', '--timeout', '30', jobScript('sync-cork.mjs')], { limitMs: 60_000 });
  assert.deepEqual(linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`), ['0 30'], job.stdout + job.stderr.slice(-2000));
  assert.equal(job.code, 0, job.stderr.slice(-2000));
});
