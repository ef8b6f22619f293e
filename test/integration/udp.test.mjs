// The udp rail in real jobs: the point-to-point suite over udp,self clean and
// under injected faults, the collective suite once, and real packet loss in the
// kernel (nftables in a network namespace). One job per configuration.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { railcomm, jobScript, caseResults, linesWith } from './jobs.mjs';

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
function lossSetup() {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'creating network namespaces needs root';
  const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
  if (!has('ip')) return 'iproute2 (ip) is not installed';
  if (!has('nft')) return 'nftables (nft) is not installed';
  const run = (args) => spawnSync(args[0], args.slice(1), { encoding: 'utf8' });
  const steps = [
    ['ip', 'netns', 'add', ns],
    ['ip', '-n', ns, 'link', 'set', 'lo', 'up'],
    ['ip', 'netns', 'exec', ns, 'nft', 'add', 'table', 'inet', 't'],
    ['ip', 'netns', 'exec', ns, 'nft', 'add', 'chain', 'inet', 't', 'out', '{ type filter hook output priority 0; }'],
    ['ip', 'netns', 'exec', ns, 'nft', 'add', 'rule', 'inet', 't', 'out', 'meta', 'l4proto', 'udp', 'numgen', 'random', 'mod', '100', '<', '5', 'counter', 'drop'],
  ];
  for (const s of steps) {
    const r = run(s);
    if (r.status !== 0) { spawnSync('ip', ['netns', 'del', ns]); return `'${s.join(' ')}' was refused: ${(r.stderr || r.error?.message || '').trim()}`; }
  }
  return null;
}
const lossSkip = lossSetup();
if (lossSkip) console.log(`# udp kernel-loss test skipped: ${lossSkip}`);
after(() => { if (!lossSkip) spawnSync('ip', ['netns', 'del', ns]); });

test('real kernel loss (nftables drops 5% of UDP): a 2-rank job completes with correct data and retransmits', { skip: lossSkip ?? false }, async () => {
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
  for (const { rest } of linesWith(job.stdout, 'ELAPSED')) assert.ok(Number(rest) < 4000, `took ${rest} ms`);
});
