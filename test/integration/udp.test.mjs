// The udp rail in real jobs: the point-to-point suite over udp,self clean and
// under injected faults, the collective suite once, and real packet loss in the
// kernel (nftables in a network namespace). One job per configuration.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { railcomm, jobScript, caseResults, linesWith } from './jobs.mjs';
import { need, notRoot, report, which } from '../helpers/requires.mjs';
import { MARGIN_MS, within } from '../helpers/promises.mjs';

const UDP = { RAILCOMM_RAILS: 'udp,self' };
const FAULTS = 'drop=0.05,dup=0.02,reorder=0.1,corrupt=0.001';

function allOk(job, ranks, minCases) {
  const res = caseResults(job.stdout);
  assert.ok(res.size >= minCases, `expected every case to report, got ${[...res.keys()].join(', ')}\n${job.stderr.slice(-3000)}`);
  for (const [name, byRank] of res) for (let r = 0; r < ranks; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r) ?? 'no report'}`);
  assert.equal(job.code, 0, `exit ${job.code}\n${job.stderr.slice(-3000)}`);
}

test('p2p suite over udp,self, 4 ranks', async () => {
  const job = await railcomm(['run', '-n', '4', '--timeout', '100', jobScript('p2p-suite.mjs')], { limitMs: 120_000, env: UDP });
  allOk(job, 4, 20);
});

test(`p2p suite over udp,self with RAILCOMM_UDP_FAULTS=${FAULTS}`, async () => {
  const job = await railcomm(['run', '-n', '4', '--timeout', '150', '--stats=json', jobScript('p2p-suite.mjs')], { limitMs: 170_000, env: { ...UDP, RAILCOMM_UDP_FAULTS: FAULTS } });
  allOk(job, 4, 20);
  // The faults were real: datagrams were dropped and sent again.
  const stats = job.stderr.split('\n').filter((l) => l.includes('railcomm stats ')).map((l) => JSON.parse(l.slice(l.indexOf('{'))));
  const udp = stats.map((s) => Object.entries(s.rails).find(([k]) => k.startsWith('udp'))[1]);
  assert.ok(udp.length === 4 && udp.every((u) => u.faultDrops > 0 && u.retransmits > 0), JSON.stringify(udp));
});

test('collective suite over udp,self, 4 ranks', async () => {
  const job = await railcomm(['run', '-n', '4', '--timeout', '100', jobScript('coll-suite.mjs')], { limitMs: 120_000, env: UDP });
  allOk(job, 4, 7);
});

// ---- real packet loss: nftables drops 5% of UDP datagrams inside a namespace

const ns = `rcudp${process.pid % 100000}`;
/** null, or [part, why]: the part (network namespaces, nftables) that is missing. */
function lossSetup() {
  if (process.platform !== 'linux') return ['netns', 'network namespaces need Linux'];
  if (notRoot()) return ['netns', 'creating network namespaces needs root'];
  if (!which('ip')) return ['netns', 'iproute2 (ip) is not installed'];
  if (!which('nft')) return ['nftables', 'nftables (nft) is not installed'];
  const run = (args) => spawnSync(args[0], args.slice(1), { encoding: 'utf8' });
  const steps = [
    ['netns', ['ip', 'netns', 'add', ns]],
    ['netns', ['ip', '-n', ns, 'link', 'set', 'lo', 'up']],
    ['nftables', ['ip', 'netns', 'exec', ns, 'nft', 'add', 'table', 'inet', 't']],
    ['nftables', ['ip', 'netns', 'exec', ns, 'nft', 'add', 'chain', 'inet', 't', 'out', '{ type filter hook output priority 0; }']],
    ['nftables', ['ip', 'netns', 'exec', ns, 'nft', 'add', 'rule', 'inet', 't', 'out', 'meta', 'l4proto', 'udp', 'numgen', 'random', 'mod', '100', '<', '5', 'counter', 'drop']],
  ];
  for (const [part, s] of steps) {
    const r = run(s);
    if (r.status !== 0) { spawnSync('ip', ['netns', 'del', ns]); return [part, `'${s.join(' ')}' was refused: ${(r.stderr || r.error?.message || '').trim()}`]; }
  }
  return null;
}
const lossMissing = lossSetup();
const kernelLoss = lossMissing === null ? need('nftables', null) : need(...lossMissing);
report('udp kernel-loss test', kernelLoss);
after(() => { if (lossMissing === null) spawnSync('ip', ['netns', 'del', ns]); });

test('real kernel loss (nftables drops 5% of UDP): a 2-rank job completes with correct data and retransmits', kernelLoss, async () => {
  const job = await railcomm(['run', '-n', '2', '--timeout', '100', jobScript('udp-loss.mjs')], {
    limitMs: 120_000, env: { ...UDP, MESSAGES: '300' }, wrap: ['ip', 'netns', 'exec', ns],
  });
  assert.equal(job.code, 0, `exit ${job.code}\n${job.stdout.slice(-2000)}\n${job.stderr.slice(-2000)}`);
  const results = linesWith(job.stdout, 'RESULT');
  assert.equal(results.length, 2);
  for (const r of results) assert.equal(r.rest, 'ok 300', `rank ${r.rank}: ${r.rest}`);
  const stats = linesWith(job.stdout, 'UDPSTATS').map((l) => JSON.parse(l.rest));
  const retransmits = stats.reduce((n, s) => n + s.retransmits, 0);
  assert.ok(retransmits > 0, `the rail repaired the kernel's drops: ${JSON.stringify(stats)}`);
  const rules = spawnSync('ip', ['netns', 'exec', ns, 'nft', 'list', 'chain', 'inet', 't', 'out'], { encoding: 'utf8' }).stdout;
  const dropped = Number(/counter packets (\d+)/.exec(rules)?.[1] ?? 0);
  assert.ok(dropped > 0, `nftables dropped datagrams: ${rules}`);
  console.log(`# kernel dropped ${dropped} datagrams; the rail retransmitted ${retransmits} segments`);
});

test('udp keepalive: a computing peer nobody waits on stays, an idle one answers probes, a stopped one fails the receive that waits on it', async () => {
  const job = await railcomm(['run', '-n', '2', '--rails', 'udp', '--timeout', '60', jobScript('udp-keepalive.mjs')], { limitMs: 90_000, env: { RAILCOMM_UDP_PEER_TIMEOUT: '2' } });
  const results = linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`);
  for (const want of ['0 computing peer nobody waits on: alive', '1 computing peer nobody waits on: alive', '0 stopped peer: ERR_PEER_FAILED (keepalive)']) {
    assert.ok(results.includes(want), `missing '${want}' in:\n${job.stdout}\n${job.stderr}`);
  }
  assert.ok(results.some((r) => /^0 idle peer waited on: alive, probes sent [1-9]/.test(r)), results.join('\n'));
  // README: a peer waited on fails after RAILCOMM_UDP_PEER_TIMEOUT (2 s here) of silence.
  const elapsed = linesWith(job.stdout, 'ELAPSED');
  assert.equal(elapsed.length, 1, job.stdout);
  assert.ok(Number(elapsed[0].rest) < within(2000), `took ${elapsed[0].rest} ms, RAILCOMM_UDP_PEER_TIMEOUT is 2 s (+${MARGIN_MS} ms margin)`);
  // (Rank 1 went silent about 0.1 s before rank 0's receive began: not much earlier than that.)
  assert.ok(Number(elapsed[0].rest) >= 1700, `failed after ${elapsed[0].rest} ms, before the 2 s timeout`);
  // Rank 0 ends the stopped rank 1 with SIGKILL once it has its result, then exits 0: the job's code is rank 1's.
  assert.equal(job.code, 137, `exit ${job.code}\n${job.stderr.slice(-2000)}`);
  assert.match(job.stderr, /rank 1 .*(SIGKILL|signal 9|137)/);
});
