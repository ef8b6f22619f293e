// Multirail (issue "Multirail"): two hosts (network namespaces) joined by two
// direct links on subnets of their own, two NICs each. The point-to-point
// suite runs striped over both; a 1 GiB stream of checksummed messages goes
// on while one link is cut (an nftables rule that silently drops, the link
// set down, a connection reset), and with tcp and udp lanes on one link while
// all tcp is dropped: every message arrives once, in order, intact; the pause
// is bounded by RAILCOMM_LANE_TIMEOUT; a healed link rejoins. A lane one side
// gives up on and closes is a lost lane on the other side too, not a peer
// that finalized. An ofi lane (tcp;ofi_rxm) silently dropped fails over to
// tcp, and both ranks still close their ofi endpoints without crashing. With
// all udp dropped while tcp lives the stream goes on over tcp, no peer fails,
// finalize does not wait on the dropped lane, and a healed udp lane rejoins once.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { railcomm, jobScript, caseResults, linesWith } from './jobs.mjs';
import { need, notRoot, report, which } from '../helpers/requires.mjs';
import { loadOfi, ofiWhy } from '../../dist/rail/ofi/native.js';

const links = fileURLToPath(new URL('../helpers/netns-links.sh', import.meta.url));
const tag = String(10 + ((process.pid + 37) % 80));
const A = `rc${tag}a`, B = `rc${tag}b`;
const peerOn = (l) => `10.8${l}.${tag}.2`;

function setup() {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (notRoot()) return 'creating network namespaces needs root';
  if (!which('nft')) return 'nft is not installed (Debian nftables)';
  spawnSync(links, ['down', tag]);
  const r = spawnSync(links, ['up', tag], { encoding: 'utf8' });
  if (r.status !== 0) { spawnSync(links, ['down', tag]); return `cannot create the namespaces and links: ${(r.stderr || r.error?.message || '').trim()}`; }
  return null;
}
const skipReason = setup();
const twoLinks = need('netns', skipReason);
report('multirail tests', twoLinks);
after(() => { if (!skipReason) spawnSync(links, ['down', tag]); });

const across = (script, args, extra = [], hosts = `${A}:1,${B}:1`) => ['run', '--hosts', hosts, '--rsh', 'ip netns exec', '--kv-host', `10.77.${tag}.1`, '--timeout', '100', ...extra, jobScript(script), ...args];
const MSGS = 256, BYTES = 4 << 20; // 1 GiB

/** The stream job with a cut after message 40 (and a heal after 140); its results per rank. */
async function stream(env, rails, cut, heal = '', msgs = MSGS) {
  const job = await railcomm(across('lane-failover.mjs', [String(msgs), String(BYTES), String(msgs >> 3), heal ? String(msgs >> 1) : '-1'], ['--rails', rails]),
    { limitMs: 150_000, env: { ...env, LANE_CUT: cut, LANE_HEAL: heal } });
  assert.equal(job.code, 0, job.stdout + job.stderr);
  const res = linesWith(job.stdout, 'RESULT').map((l) => l.rest);
  assert.equal(res.length, 2, job.stdout);
  for (const r of res) assert.match(r, new RegExp(`: ${msgs} messages in \\d+ ms, 0 bad, longest pause \\d+ ms$`));
  const pause = Math.max(...res.map((r) => Number(/longest pause (\d+)/.exec(r)[1])));
  const lanes = JSON.parse(/^(\{.*\}) resends/.exec(linesWith(job.stdout, 'LANES').find((l) => l.rank === 0).rest)[1]);
  // What the ranks said about their lanes, for a failed bound's message.
  const said = job.stderr.split('\n').filter((l) => /lane /.test(l)).join('\n');
  const finalize = Math.max(...linesWith(job.stdout, 'FINALIZED').map((l) => Number(/in (\d+) ms/.exec(l.rest)[1])));
  return { pause, lanes, finalize, stderr: job.stderr, said: `paused ${pause} ms, finalize took ${finalize} ms; the ranks said:\n${said}` };
}

const TIMEOUT = 2000;
const twoNics = { RAILCOMM_TCP_DEVICES: 'l1,l2', RAILCOMM_LANE_TIMEOUT: String(TIMEOUT) };

test('point-to-point suite over two lanes (two NICs) between hosts, data striped over both', twoLinks, async () => {
  const job = await railcomm(across('p2p-suite.mjs', [], ['--stats=json'], `${A}:2,${B}:2`), { limitMs: 150_000, env: { RAILCOMM_TCP_DEVICES: 'l1,l2', RAILCOMM_RAILS: 'shm,tcp' } });
  const res = caseResults(job.stdout);
  assert.ok(res.size >= 21, job.stderr.slice(-2000));
  for (const [name, byRank] of res) for (let r = 0; r < 4; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
  assert.equal(job.code, 0);
  const stats = JSON.parse(/railcomm stats (\{.*\})/.exec(job.stderr.split('\n').find((l) => l.includes('"rank":0')))[1]);
  const lanes = stats.peers['2'].lanes;
  assert.ok(lanes['tcp:l1'].bytes > 0 && lanes['tcp:l2'].bytes > 0, JSON.stringify(lanes));
});

test('1 GiB stream while an nftables rule silently drops one link, then heals: no loss, a pause under the lane timeout, the lane rejoins', twoLinks, async () => {
  const r = await stream(twoNics, 'tcp', `nft add rule inet rclanes out ip daddr ${peerOn(2)} drop`, 'nft flush chain inet rclanes out');
  assert.ok(r.pause < TIMEOUT + 1500, r.said);
  assert.equal(r.lanes['tcp:l2'].failures, 1, JSON.stringify(r.lanes));
  assert.equal(r.lanes['tcp:l2'].rejoins, 1, JSON.stringify(r.lanes));
  assert.match(r.stderr, /lane tcp:l2 to peer failed \(no answer on it/);
});

test('1 GiB stream while one link is set down', twoLinks, async () => {
  const r = await stream(twoNics, 'tcp', 'ip link set l2 down', 'ip link set l2 up');
  assert.ok(r.pause < TIMEOUT + 1500, r.said);
  assert.equal(r.lanes['tcp:l2'].failures, 1, JSON.stringify(r.lanes));
});

test('1 GiB stream while one link\'s connection is reset', twoLinks, async () => {
  const r = await stream(twoNics, 'tcp', `ss -K dst ${peerOn(2)}`);
  assert.ok(r.pause < 1500, r.said);
  assert.equal(r.lanes['tcp:l2'].failures, 1, JSON.stringify(r.lanes));
});

// (256 MiB: udp over a 1500-byte MTU moves about 15 MB/s here.)
test('tcp and udp lanes on one link while all tcp is dropped: the stream goes on over udp', twoLinks, async () => {
  const r = await stream({ RAILCOMM_TCP_DEVICES: 'l1', RAILCOMM_LANE_TIMEOUT: String(TIMEOUT) }, 'tcp,udp', `nft add rule inet rclanes out ip daddr ${peerOn(1)} meta l4proto tcp drop`, '', 64);
  assert.ok(r.pause < TIMEOUT + 1500, r.said);
  assert.equal(r.lanes['tcp:l1'].failures, 1, JSON.stringify(r.lanes));
  assert.ok(r.lanes['udp:l1'].bytes > 0, JSON.stringify(r.lanes));
  // The receiver hears it from the sender (it had nothing outstanding to beat for), and at the end
  // neither rank takes the other's finalize for a failure (a rejoin attempt given up at close once said so).
  assert.doesNotMatch(r.stderr, /peer rank \d failed/, r.said);
});

// The mirror: all udp dropped while tcp lives. The udp lane carries control too (two eager lanes), so that
// the drop loses messages that must be resent on tcp. Multirail gives the silent udp lane up (UdpEndpoint.giveUp):
// with a close() instead, its BYE waited on the silent path and held finalize for RAILCOMM_CONNECT_TIMEOUT (28-30 s,
// 4 runs in 5), and after a heal a rejoin attempt took the closing endpoint back, whose sends it dropped: the lane
// failed again (4 in 5), or a message it carried was lost and the peer failed at finalize (1 in 5).
// (2 GiB: the cut lasts about 2 s, twice the lane timeout, before the heal or the end.)
const UDP_TIMEOUT = 1000;
const udpOnL1 = (heal) => stream({ RAILCOMM_TCP_DEVICES: 'l1', RAILCOMM_LANE_TIMEOUT: String(UDP_TIMEOUT), RAILCOMM_MAX_EAGER_RAILS: '2' }, 'tcp,udp',
  `nft flush chain inet rclanes out && nft add rule inet rclanes out ip daddr ${peerOn(1)} meta l4proto udp drop`, heal ? 'nft flush chain inet rclanes out' : '', 512);

test('tcp and udp lanes on one link while all udp is dropped: the stream goes on over tcp, no peer fails, finalize is quick', twoLinks, async () => {
  const r = await udpOnL1(false);
  assert.ok(r.pause < UDP_TIMEOUT + 1500, r.said);
  assert.equal(r.lanes['udp:l1'].failures, 1, JSON.stringify(r.lanes));
  assert.ok(r.lanes['tcp:l1'].bytes > 0, JSON.stringify(r.lanes));
  assert.doesNotMatch(r.stderr, /peer rank \d failed/, r.said);
  assert.ok(r.finalize < 5000, r.said);
});

test('tcp and udp lanes on one link while all udp is dropped, then healed: the udp lane rejoins', twoLinks, async () => {
  const r = await udpOnL1(true);
  assert.ok(r.pause < UDP_TIMEOUT + 1500, r.said);
  assert.equal(r.lanes['udp:l1'].failures, 1, JSON.stringify(r.lanes));
  assert.equal(r.lanes['udp:l1'].rejoins, 1, JSON.stringify(r.lanes));
  assert.doesNotMatch(r.stderr, /peer rank \d failed/, r.said);
  assert.ok(r.finalize < 5000, r.said);
});

test('a lane the peer gives up on and closes is failed over, not taken for the peer finalizing', twoLinks, async () => {
  // Rank 0 drops what comes from rank 1 over udp: its heartbeats on the udp lane go unanswered, it gives up on the lane and closes it.
  // Both lanes must connect first: the rule the test before left (all tcp dropped) goes. With it, rank 1's
  // answer to the first large send sat on a tcp lane that never connected until its 60 s lane timeout.
  spawnSync('ip', ['netns', 'exec', A, 'nft', 'flush', 'chain', 'inet', 'rclanes', 'out']);
  const cut = `nft flush chain inet rclanes out && nft add chain inet rclanes in '{ type filter hook input priority 0; }' && nft add rule inet rclanes in ip saddr ${peerOn(1)} meta l4proto udp drop`;
  const job = await railcomm(across('lane-given-up.mjs', [], ['--rails', 'tcp,udp']),
    { limitMs: 90_000, env: { RAILCOMM_TCP_DEVICES: 'l1', LANE_TIMEOUT_0: '1000', LANE_CUT: cut, LANE_HEAL: 'nft flush chain inet rclanes in' } });
  assert.deepEqual(linesWith(job.stdout, 'RESULT').map((l) => `${l.rank} ${l.rest}`).sort(), ['0 ok', '1 ok'], job.stdout + job.stderr);
  assert.equal(job.code, 0, job.stderr);
  assert.match(job.stderr, /\[0\].*lane udp:\S+ to peer failed \(no answer on it/);
  const lanes1 = JSON.parse(linesWith(job.stdout, 'LANES').find((l) => l.rank === 1).rest);
  const udp1 = Object.entries(lanes1).find(([name]) => name.startsWith('udp'))[1];
  assert.equal(udp1.failures, 1, JSON.stringify(lanes1));
  assert.match(udp1.lastFailure, /closed by the peer/);
});


// libfabric 1.17's tcp provider crashed ofi_rxm at close (a read's receive
// completed twice, the second time with a NULL context: rail/ofi/close-hazard.ts)
// once the dropped lane had a rendezvous read half received: 2-4 runs in 20
// died of SIGSEGV in finalize. The rail leaves such an endpoint open to the
// process's exit; test/rails/ofi-rail.test.mjs reproduces the crash every time.
const tcpOfi = twoLinks.reason !== null ? twoLinks : need('ofi', loadOfi() === null ? ofiWhy() : null);
test('a stream over an ofi lane and a tcp lane while the ofi lane\'s link is silently dropped: it goes on over tcp, and both ranks finalize and exit cleanly', tcpOfi, async () => {
  // The ofi lane on the bridge (eth0; the wire-up service is on the bridge's own address, .1, not dropped), tcp on l1.
  spawnSync('ip', ['netns', 'exec', A, 'nft', 'flush', 'chain', 'inet', 'rclanes', 'out']);
  const env = { RAILCOMM_TCP_DEVICES: 'l1', RAILCOMM_LANE_TIMEOUT: String(TIMEOUT), RAILCOMM_OFI_PROVIDERS: 'tcp', FI_TCP_IFACE: 'eth0' };
  const r = await stream(env, 'tcp,ofi', `nft add rule inet rclanes out ip daddr 10.77.${tag}.3 drop`, '', 64);
  const ofi = Object.entries(r.lanes).find(([name]) => name.startsWith('ofi:'));
  assert.ok(ofi !== undefined && ofi[0].endsWith('/eth0'), JSON.stringify(r.lanes));
  assert.equal(ofi[1].failures, 1, JSON.stringify(r.lanes));
  assert.ok(r.lanes['tcp:l1'].bytes > 0, JSON.stringify(r.lanes));
  assert.ok(r.pause < TIMEOUT + 1500, r.said);
  assert.doesNotMatch(r.stderr, /SIGSEGV|SIGABRT|peer rank \d failed/, r.said);
});
