// Process ranks over the shm rail (RAILCOMM_RAILS=shm,self): the point-to-
// point and collective suites, the hybrid layout (tbsm inside a process, shm
// across), a rank killed mid-transfer, 8 ranks on 2 cores, comm.alloc's
// registered segments, and /dev/shm left clean. Skipped, saying why, when the
// native addon did not build (under CI=true, failed: helpers/requires.mjs).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { railcomm, jobScript, caseResults, linesWith } from './jobs.mjs';
import { need, needAddon, needAll } from '../helpers/requires.mjs';
import { PEER_GONE_MS, MARGIN_MS, within } from '../helpers/promises.mjs';

const shm = needAddon();
const SHM = { RAILCOMM_RAILS: 'shm,self' };
const segments = () => readdirSync('/dev/shm').filter((n) => n.startsWith('railcomm-'));
const before = new Set(segments());

async function suite(args, script, ranks, minCases, env = SHM) {
  const job = await railcomm(['run', ...args, '--timeout', '200', jobScript(script)], { limitMs: 230_000, env });
  const res = caseResults(job.stdout);
  assert.ok(res.size >= minCases, `cases reported: ${[...res.keys()].join(', ')}\n${job.stderr.slice(-2000)}`);
  for (const [name, byRank] of res) for (let r = 0; r < ranks; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0, job.stderr.slice(-2000));
  return job;
}

/** The `railcomm stats` JSON each rank printed (--stats=json, on stderr). */
const statsOf = (stderr) => linesWith(stderr, 'railcomm stats').map((l) => JSON.parse(l.rest));

test('point-to-point suite, 4 processes over shm; large messages read once (RGET)', shm, async () => {
  const job = await suite(['-n', '4', '--stats=json'], 'p2p-suite.mjs', 4, 23);
  const stats = statsOf(job.stderr);
  assert.equal(stats.length, 4);
  for (const s of stats) {
    assert.ok(s.rails.shm.msgsSent > 0, 'shm carried the traffic');
    assert.equal(s.rails.tcp, undefined, 'no tcp rail with RAILCOMM_RAILS=shm,self');
  }
  assert.ok(stats.reduce((a, s) => a + s.protocol.rgetMsgs, 0) > 0, 'some rendezvous went by single copy');
});

test('blocking receives wait at the call on shared memory (2 processes, 2 threads) and keep MPI matching', shm, async () => {
  for (const [args, env] of [[['-n', '2'], SHM], [['-n', '2', '--threads'], {}]]) {
    const job = await suite(args, 'recv-at-call.mjs', 2, 1, env);
    const atCall = linesWith(job.stdout, 'ATCALL').reduce((a, l) => a + Number(l.rest), 0);
    // 2 ranks on 2 cores spin: of the ~120 receives that can wait at the call, some did.
    assert.ok(atCall > 0, `${args.join(' ')}: no receive completed at the call\n${job.stdout.slice(-1500)}`);
  }
});

test('hybrid: 2 processes x 2 threads, tbsm inside a process and shm across (counters)', shm, async () => {
  const job = await suite(['-n', '4', '--threads-per-process', '2', '--stats=json'], 'p2p-suite.mjs', 4, 23, {});
  const stats = statsOf(job.stderr);
  assert.deepEqual(stats.map((s) => s.rank).sort(), [0, 1, 2, 3], 'every rank printed its counters');
  for (const s of stats) {
    assert.ok(s.rails.tbsm.msgsSent > 0 && s.rails.tbsm.msgsRecv > 0, `rank ${s.rank}: tbsm to its sibling thread`);
    assert.ok(s.rails.shm.msgsSent > 0 && s.rails.shm.msgsRecv > 0, `rank ${s.rank}: shm to the other process`);
    assert.ok(!s.rails.tcp || s.rails.tcp.msgsSent === 0, `rank ${s.rank}: nothing on tcp`);
  }
});

test('collectives, 3 processes over shm', shm, () => suite(['-n', '3'], 'coll-suite.mjs', 3, 7));

test('8 processes on 2 cores (oversubscribed): idle waits use no CPU, ring, all-to-all, single copy', shm, async () => {
  const job = await suite(['-n', '8'], 'shm-suite.mjs', 8, 4);
  assert.equal(linesWith(job.stdout, 'IDLE').length, 7);
});

test('a rank killed mid-transfer: the receiver fails within a second, survivors go on, nothing left in /dev/shm', shm, async () => {
  const job = await railcomm(['run', '-n', '3', '--timeout', '60', jobScript('shm-kill.mjs')], { limitMs: 90_000, env: SHM });
  assert.equal(job.code, 137, `${job.stdout}\n${job.stderr}`);
  const results = linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`);
  assert.ok(results.includes('0 recv from killed rank: ERR_PEER_FAILED'), job.stdout + job.stderr);
  assert.ok(results.some((r) => /^0 survivors large: ok rget [1-9]/.test(r)), results.join('\n'));
  // README: a rank whose process vanished fails the requests on it within a second.
  const elapsed = linesWith(job.stdout, 'ELAPSED');
  assert.equal(elapsed.length, 1, job.stdout);
  assert.ok(Number(elapsed[0].rest) < within(PEER_GONE_MS), `took ${elapsed[0].rest} ms, README promises ${PEER_GONE_MS} (+${MARGIN_MS} margin)`);
  const prefix = linesWith(job.stdout, 'SHMPREFIX')[0].rest;
  assert.deepEqual(segments().filter((n) => n.startsWith(prefix)), []);
});

/** Rank 1 of the fallback job runs in a user namespace of its own: whether this machine allows one. */
const userns = need('userns', (() => {
  const r = spawnSync('unshare', ['--user', '--map-root-user', 'true'], { encoding: 'utf8' });
  if (r.error) return `unshare cannot run: ${r.error.message}`;
  return r.status === 0 ? null : `unshare --user --map-root-user fails here: ${r.stderr.trim() || `exit ${r.status}`}`;
})());

test('single copy refused by the kernel (EPERM: rank 1 in a user namespace of its own), one way only, and a refused write (simulated): ring fallback, data intact, no hang', needAll(shm, userns), async () => {
  // Rank 1 alone starts through unshare: the kernel then refuses its
  // process_vm_readv/writev into ranks 0 and 2 (it has no CAP_SYS_PTRACE in
  // their namespace), not theirs into it (they own its namespace).
  const wrap = ['sh', '-c', '[ "$RAILCOMM_RANK" = 1 ] && exec unshare --user --map-root-user "$@"; exec "$@"', 'sh', process.execPath];
  const job = await railcomm(['run', '-n', '3', '--timeout', '60', '--', ...wrap, jobScript('shm-fallback.mjs')], { limitMs: 90_000, env: SHM });
  const res = caseResults(job.stdout);
  assert.ok(res.size >= 4, `cases reported: ${[...res.keys()].join(', ')}\n${job.stderr.slice(-2000)}`);
  for (const [name, byRank] of res) for (let r = 0; r < 3; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0, job.stderr.slice(-2000));
  const ns = new Map(linesWith(job.stdout, 'USERNS').map((l) => [l.rank, l.rest]));
  assert.ok(ns.get(0) === ns.get(2) && ns.get(1) !== ns.get(0), `rank 1 alone in its own user namespace: ${JSON.stringify([...ns])}`);
});

test('comm.alloc: large sends read from the sender\'s registered segment (LRU cache), invalidated when it is freed', shm, async () => {
  const job = await railcomm(['run', '-n', '2', '--timeout', '60', process.execPath, '--expose-gc', jobScript('shm-alloc.mjs')], { limitMs: 90_000, env: SHM });
  const res = caseResults(job.stdout);
  assert.equal(res.size, 2, job.stdout + job.stderr);
  for (const [name, byRank] of res) for (const r of [0, 1]) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0, job.stderr);
});

test('railcomm info names the shm rail, or why it is unavailable', async () => {
  const job = await railcomm(['info'], { limitMs: 30_000 });
  assert.equal(job.code, 0, job.stderr);
  assert.match(job.stdout, shm.reason !== null ? /shm: unavailable \(/ : /shm: available \(native addon loaded/);
  const off = await railcomm(['info'], { limitMs: 30_000, env: { RAILCOMM_NO_NATIVE: '1' } });
  assert.match(off.stdout, /shm: unavailable \(disabled by RAILCOMM_NO_NATIVE=1\)/);
});

after(() => {
  // Every job above removed its segments (ranks unlink, the launcher sweeps by job prefix).
  const left = segments().filter((n) => !before.has(n));
  assert.deepEqual(left, [], `left in /dev/shm: ${left.join(', ')}`);
});
