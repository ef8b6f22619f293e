// One-sided communication (windows) in real jobs: emulated over tcp and udp
// between processes, directly on mapped memory between processes of one host
// (shm segments) and worker threads (SharedArrayBuffer), mixed in a hybrid
// job, on one rank, and with a target that dies.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { railcomm, jobScript, caseResults, linesWith } from './jobs.mjs';
import { needAddon } from '../helpers/requires.mjs';

const CASES = 19;

async function suite(args, ranks, env = {}) {
  const job = await railcomm(['run', ...args, '--timeout', '150', jobScript('rma-suite.mjs')], { limitMs: 180_000, env: { RMA_STATS: '1', ...env } });
  const res = caseResults(job.stdout);
  assert.equal(res.size, CASES, `cases reported: ${[...res.keys()].join(', ')}\n${job.stdout.slice(-3000)}\n${job.stderr.slice(-2000)}`);
  for (const [name, byRank] of res) for (let r = 0; r < ranks; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0, job.stderr.slice(-2000));
  return linesWith(job.stdout, 'RMA').map(({ rank, rest }) => {
    const m = /native (\d+) emulated (\d+)/.exec(rest);
    return { rank, native: Number(m[1]), emulated: Number(m[2]) };
  });
}

test('windows: 4 processes over tcp (emulated by active messages)', async () => {
  // A small socket high-water mark makes lanes answer "no resource", so operations and replies queue.
  const stats = await suite(['-n', '4', '--rails', 'tcp'], 4, { RAILCOMM_TCP_SEND_HIGH_WATER: '65536' });
  assert.ok(stats.every((s) => s.emulated > 100), JSON.stringify(stats));
});

test('windows: 4 processes on one host (shm: allocated windows are mapped by every rank, operations go straight to memory)', needAddon(), async () => {
  const before = new Set(readdirSync('/dev/shm'));
  const stats = await suite(['-n', '4'], 4);
  assert.ok(stats.every((s) => s.native > 3 * s.emulated), JSON.stringify(stats));
  const left = readdirSync('/dev/shm').filter((f) => f.startsWith('railcomm-') && !before.has(f));
  assert.deepEqual(left, [], 'window segments are unlinked once mapped');
});

test('windows: 3 processes over udp, clean and with injected faults', async () => {
  for (const faults of ['', 'drop=0.05,dup=0.02,reorder=0.1,corrupt=0.001']) {
    const stats = await suite(['-n', '3'], 3, { RAILCOMM_RAILS: 'udp,self', RAILCOMM_UDP_FAULTS: faults });
    assert.ok(stats.every((s) => s.emulated > 100), JSON.stringify(stats));
  }
});

test('windows: 4 thread ranks (direct shared-memory access)', async () => {
  const stats = await suite(['-n', '4', '--threads'], 4);
  // Only lock/unlock/flush requests travel; data and atomics go straight to memory.
  assert.ok(stats.every((s) => s.native > 150 && s.native > 3 * s.emulated), JSON.stringify(stats));
});

test('windows: 2 processes x 2 threads (direct inside a process, emulated across)', async () => {
  const stats = await suite(['-n', '4', '--threads-per-process', '2'], 4);
  assert.ok(stats.every((s) => s.native > 0 && s.emulated > 0), JSON.stringify(stats));
});

test('windows: a job of one rank', () => suite(['-n', '1'], 1));

test('windows: a target that dies fails the origin\'s operations and releases its locks (tcp: in flight; shm: mapped)', async () => {
  for (const [args, env] of [[['--rails', 'tcp'], {}], [[], { RMA_DIRECT: '1' }]]) {
    const job = await railcomm(['run', '-n', '3', ...args, '--timeout', '60', jobScript('rma-peer-exit.mjs')], { limitMs: 90_000, env });
    assert.equal(job.code, 3, `${job.stdout}\n${job.stderr}`);
    const results = linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`);
    assert.ok(results.includes('0 ok ERR_PEER_FAILED'), `${args} ${job.stdout}\n${job.stderr}`);
    assert.ok(results.includes('2 ok target'), `${args} ${job.stdout}\n${job.stderr}`);
  }
});
