// Many hosts on one machine: two network namespaces joined by a bridge, each
// a "host"; `railcomm run --hosts A:2,B:2 --rsh 'ip netns exec'` runs the
// point-to-point and collective suites across them, and ranks must pick the
// device that routes (eth0), not the one listed first that goes nowhere.
// Skipped, with the reason printed, where namespaces cannot be created (under
// CI=true, failed: helpers/requires.mjs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, caseResults, linesWith } from './jobs.mjs';
import { need, report } from '../helpers/requires.mjs';
import { twoHosts as twoHostNamespaces } from '../helpers/two-hosts.mjs';
import { PEER_GONE_MS, MARGIN_MS, within } from '../helpers/promises.mjs';

const { subnet, A, B, why: skipReason } = twoHostNamespaces(String(10 + (process.pid % 80)));
const twoHosts = need('netns', skipReason);
report('multi-host tests', twoHosts);

const across = (hosts, script, extra = []) => ['run', '--hosts', hosts, '--rsh', 'ip netns exec', '--kv-host', `${subnet}.1`, '--timeout', '120', ...extra, jobScript(script)];

test('ranks on two hosts wire up through the device that routes', twoHosts, async () => {
  const job = await railcomm([...across(`${A}:2,${B}:2`, 'wireup-check.mjs', ['-x', 'SHOW_DEVICE=1'])], { limitMs: 150_000 });
  assert.equal(job.code, 0, job.stderr);
  assert.equal(linesWith(job.stdout, 'WIREUP').filter((l) => l.rest.startsWith('ok launcher=railcomm')).length, 4, job.stdout);
  const devices = linesWith(job.stdout, 'DEVICE');
  assert.equal(devices.length, 4);
  for (const d of devices) assert.match(d.rest, new RegExp(`^rank=\\d eth0 ${subnet.replace(/\./g, '\\.')}\\.[23]:\\d+$`), `rank ${d.rank} chose ${d.rest} (the unroutable docker0 is listed first)`);
});

test('point-to-point suite across two hosts', twoHosts, async () => {
  const job = await railcomm(across(`${A}:2,${B}:2`, 'p2p-suite.mjs'), { limitMs: 150_000 });
  const res = caseResults(job.stdout);
  assert.ok(res.size >= 21, job.stderr.slice(-2000));
  for (const [name, byRank] of res) for (let r = 0; r < 4; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0);
});

test('collectives across two hosts, 3 ranks', twoHosts, async () => {
  const job = await railcomm(across(`${A}:2,${B}:1`, 'coll-suite.mjs'), { limitMs: 150_000 });
  const res = caseResults(job.stdout);
  assert.ok(res.size >= 7, job.stderr.slice(-2000));
  for (const [name, byRank] of res) for (let r = 0; r < 3; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0);
});

test('point-to-point and one-sided suites across two hosts over udp (shm inside each host)', twoHosts, async () => {
  for (const script of ['p2p-suite.mjs', 'rma-suite.mjs']) {
    const job = await railcomm(across(`${A}:2,${B}:2`, script, ['--rails', 'udp,shm', '-x', 'RMA_STATS=1']), { limitMs: 150_000 });
    const res = caseResults(job.stdout);
    assert.ok(res.size >= 13, `${script}: ${job.stderr.slice(-2000)}`);
    for (const [name, byRank] of res) for (let r = 0; r < 4; r++) assert.equal(byRank.get(r), 'ok', `${script} ${name}, rank ${r}: ${byRank.get(r)}`);
    assert.equal(job.code, 0);
    // Windows are mapped inside a host only: operations on the other host's ranks go through udp
    // (lock, unlock and flush requests alone account for about 50 per rank). Every rank says so.
    if (script === 'rma-suite.mjs') {
      const rma = linesWith(job.stdout, 'RMA');
      assert.deepEqual(rma.map((l) => l.rank).sort(), [0, 1, 2, 3], `one RMA line per rank:\n${job.stdout.slice(-2000)}`);
      for (const { rest } of rma) assert.ok(Number(/emulated (\d+)/.exec(rest)[1]) > 80, rest);
    }
  }
});

test('a remote rank that dies mid-job: survivors fail with ERR_PEER_FAILED, the launcher stops the job', twoHosts, async () => {
  const job = await railcomm(across(`${A}:2,${B}:1`, 'fault-peer-exit.mjs'), { limitMs: 90_000 });
  assert.equal(job.code, 3, job.stderr);
  const results = linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`);
  assert.ok(results.includes('0 recv from dead rank: ERR_PEER_FAILED'), job.stdout);
  assert.ok(results.includes('1 recv from dead rank: ERR_PEER_FAILED'), job.stdout);
  // A vanished peer fails the requests on it within a second (README); over tcp the socket closes at once.
  const elapsed = linesWith(job.stdout, 'ELAPSED');
  assert.deepEqual(elapsed.map((l) => l.rank).sort(), [0, 1], job.stdout);
  for (const { rank, rest } of elapsed) assert.ok(Number(rest) < within(PEER_GONE_MS), `rank ${rank} took ${rest} ms, README promises ${PEER_GONE_MS} (+${MARGIN_MS} margin)`);
});
