// RAILCOMM_TCP_PEER_TIMEOUT (rail/tcp/peer-check.ts): two hosts (network
// namespaces) over one tcp lane. When the link between them is cut both ways
// (nftables drops, silently), a rank that waits to receive (its connection
// idle: keepalive probes) and one whose data waits for an ACK both fail the
// peer with ERR_PEER_FAILED about the timeout later, naming it; before, both
// waited for ever (silence alone fails no peer). A peer that computes for four
// timeouts without its event loop while 64 MiB are sent to it is not failed:
// its kernel keeps answering.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { railcomm, jobScript, linesWith } from './jobs.mjs';
import { need, notRoot, report, which } from '../helpers/requires.mjs';
import { loadNative, nativeWhy } from '../../dist/native/addon.js';

const links = fileURLToPath(new URL('../helpers/netns-links.sh', import.meta.url));
const tag = String(10 + ((process.pid + 11) % 80));
const A = `rc${tag}a`, B = `rc${tag}b`;
const T = 3;

function setup() {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (notRoot()) return 'creating network namespaces needs root';
  if (!which('nft')) return 'nft is not installed (Debian nftables)';
  if (loadNative() === null) return `the check needs the native addon: ${nativeWhy()}`;
  spawnSync(links, ['down', tag]);
  const r = spawnSync(links, ['up', tag], { encoding: 'utf8' });
  if (r.status !== 0) { spawnSync(links, ['down', tag]); return `cannot create the namespaces and links: ${(r.stderr || r.error?.message || '').trim()}`; }
  return null;
}
const skipReason = setup();
const hosts = need('netns', skipReason);
report('tcp peer timeout tests', hosts);
after(() => { if (!skipReason) spawnSync(links, ['down', tag]); });

/** The job in MODE; each rank's RESULT line: [code, ms, message]. */
async function cutJob(mode, extraEnv = {}) {
  spawnSync('ip', ['netns', 'exec', A, 'nft', 'flush', 'chain', 'inet', 'rclanes', 'out']);
  spawnSync('ip', ['netns', 'exec', B, 'nft', 'flush', 'chain', 'inet', 'rclanes', 'out']);
  // Rank 0 (host A) cuts the link both ways: its own output to B, and B's to A.
  const cut = `nft add rule inet rclanes out ip daddr 10.81.${tag}.2 drop; ip netns exec ${B} nft add rule inet rclanes out ip daddr 10.81.${tag}.1 drop`;
  const job = await railcomm(['run', '--hosts', `${A}:1,${B}:1`, '--rsh', 'ip netns exec', '--kv-host', `10.77.${tag}.1`, '--rails', 'tcp,self', '--timeout', '60', jobScript('tcp-peer-cut.mjs')], {
    limitMs: 90_000,
    env: { MODE: mode, CUT: cut, RAILCOMM_TCP_DEVICES: 'l1', RAILCOMM_TCP_PEER_TIMEOUT: String(T), LINGER_MS: String(3 * T * 1000), ...extraEnv },
  });
  spawnSync('ip', ['netns', 'exec', A, 'nft', 'flush', 'chain', 'inet', 'rclanes', 'out']);
  spawnSync('ip', ['netns', 'exec', B, 'nft', 'flush', 'chain', 'inet', 'rclanes', 'out']);
  const results = new Map(linesWith(job.stdout, 'RESULT').map(({ rank, rest }) => {
    const [code, ms, ...why] = rest.split(' ');
    return [rank, { code, ms: Number(ms), why: why.join(' ') }];
  }));
  return { job, results };
}

for (const [mode, what] of [['idle', 'both ranks wait to receive (idle connections: keepalive)'], ['send', 'rank 0 sends 64 MiB, rank 1 waits for it (data waits for an ACK)']]) {
  test(`a link cut both ways fails the peer after RAILCOMM_TCP_PEER_TIMEOUT: ${what}`, hosts, async () => {
    const { job, results } = await cutJob(mode);
    const all = `${job.stdout}\n${job.stderr}`;
    assert.equal(results.size, 2, all);
    for (const [rank, r] of results) {
      assert.equal(r.code, 'ERR_PEER_FAILED', `rank ${rank}: ${r.code} ${r.why}\n${all}`);
      // Its own verdict (keepalive or the ACK wait), or the other's finalize told by the service: within the timeout and a few seconds.
      assert.ok(r.ms >= T * 1000 - 500 && r.ms < T * 1000 + 4000, `rank ${rank} failed the peer after ${r.ms} ms (timeout ${T} s): ${r.why}`);
      assert.match(r.why, /RAILCOMM_TCP_PEER_TIMEOUT/, `rank ${rank}: ${r.why}`);
    }
    assert.equal(job.code, 0, all);
  });
}

test('a peer that computes for four timeouts without its event loop while 64 MiB are sent to it is not failed (its kernel answers)', hosts, async () => {
  const { job, results } = await cutJob('busy', { BUSY_MS: String(4 * T * 1000), LINGER_MS: '0' });
  const all = `${job.stdout}\n${job.stderr}`;
  assert.equal(results.size, 2, all);
  for (const [rank, r] of results) assert.equal(r.code, 'ok', `rank ${rank}: ${r.code} ${r.why}\n${all}`);
  assert.doesNotMatch(job.stderr, /failed/, all);
  assert.equal(job.code, 0, all);
});
