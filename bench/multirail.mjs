// Multirail figures (issue "Multirail"), on two network-namespace hosts joined
// by two veth links (test/helpers/netns-links.sh): 4 MiB bandwidth and 8 B
// latency over one lane (l1), the other (l2), and both (striped), in
// alternating rounds; and the pause a 1 GiB stream sees when one link is cut
// (nftables silent drop, link down, connection reset), and with tcp and udp
// lanes on one link when all its tcp is dropped (256 MiB: udp is slower).
// The cuts come in the stream's first tenth of a second (message 32 of 256),
// before its heartbeats run; --late adds an nftables drop at message 1536 of
// 2048 (8 GiB), with the heartbeats running. Needs root.
//   node bench/multirail.mjs [--rounds N] [--json] [--pauses] [--late]   (--pauses: the cuts only)
// The links share this machine's CPUs: on 2 cores both lanes compete for the
// same cores, which bounds striping (say so with the figures).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { median } from './lib/compare.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist/cli/main.js');
const links = join(root, 'test/helpers/netns-links.sh');
const args = process.argv.slice(2);
const rounds = Number(args[args.indexOf('--rounds') + 1] ?? 3) || 3;
const tag = '61';
const A = `rc${tag}a`, B = `rc${tag}b`;

spawnSync(links, ['down', tag]);
const up = spawnSync(links, ['up', tag], { encoding: 'utf8' });
if (up.status !== 0) { console.error(`cannot make the namespaces: ${up.stderr}`); process.exit(1); }

function run(script, scriptArgs, env, rails = 'tcp') {
  const r = spawnSync(process.execPath, [cli, 'run', '--hosts', `${A}:1,${B}:1`, '--rsh', 'ip netns exec', '--kv-host', `10.77.${tag}.1`,
    '--rails', rails, '--timeout', '200', script, ...scriptArgs], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 240_000 });
  return r.stdout + r.stderr;
}

const p2p = join(root, 'dist/bench/p2p.js');
const results = { bw4MiB: {}, lat8B: {}, pause: {} };
try {
  const configs = [['l1', 'l1'], ['l2', 'l2'], ['both', 'l1,l2']];
  for (const [name] of configs) { results.bw4MiB[name] = []; results.lat8B[name] = []; }
  for (let k = 0; k < rounds && !args.includes('--pauses'); k++) {
    for (const [name, devs] of configs) {
      const bw = /"mbps":(\d+(\.\d+)?)/.exec(run(p2p, ['bw', '4194304', '40', '16'], { RAILCOMM_TCP_DEVICES: devs }));
      const lat = /"usec_median":(\d+(\.\d+)?)/.exec(run(p2p, ['latency', '8', '2000'], { RAILCOMM_TCP_DEVICES: devs }));
      if (bw) results.bw4MiB[name].push(Number(bw[1]));
      if (lat) results.lat8B[name].push(Number(lat[1]));
      console.error(`multirail: round ${k + 1} ${name}: ${bw?.[1] ?? '?'} MB/s, ${lat?.[1] ?? '?'} us`);
    }
  }
  const stream = join(root, 'test/jobs/lane-failover.mjs');
  const cuts = {
    'nftables drop': [`nft add rule inet rclanes out ip daddr 10.82.${tag}.2 drop`, 'tcp', 'l1,l2', 256],
    'link down': ['ip link set l2 down', 'tcp', 'l1,l2', 256],
    'connection reset': [`ss -K dst 10.82.${tag}.2`, 'tcp', 'l1,l2', 256],
    'tcp dropped, udp lane on the link': [`nft add rule inet rclanes out ip daddr 10.81.${tag}.2 meta l4proto tcp drop`, 'tcp,udp', 'l1', 64],
    ...(args.includes('--late') ? { 'nftables drop, late in the stream': [`nft add rule inet rclanes out ip daddr 10.82.${tag}.2 drop`, 'tcp', 'l1,l2', 2048, 1536] } : {}),
  };
  for (const [name, [cut, rails, devs, msgs, cutAt = msgs >> 3]] of Object.entries(cuts)) {
    const pauses = [];
    for (let k = 0; k < rounds; k++) {
      const out = run(stream, [String(msgs), String(4 << 20), String(cutAt), '-1'], { RAILCOMM_TCP_DEVICES: devs, LANE_CUT: cut }, rails);
      const m = [...out.matchAll(/longest pause (\d+) ms/g)].map((x) => Number(x[1]));
      if (m.length === 2) pauses.push(Math.max(...m));
      spawnSync('ip', ['netns', 'exec', A, 'nft', 'flush', 'chain', 'inet', 'rclanes', 'out']);
      spawnSync('ip', ['-n', A, 'link', 'set', 'l2', 'up']);
      console.error(`multirail: ${name}: pause ${m.join(', ')} ms`);
    }
    results.pause[name] = pauses;
  }
} finally {
  spawnSync(links, ['down', tag]);
}
const med = (xs) => (xs.length ? Number(median(xs).toFixed(2)) : null);
if (args.includes('--json')) console.log(JSON.stringify(results));
else {
  if (!args.includes('--pauses')) {
    console.log('| lanes | 4 MiB bandwidth MB/s (median) | 8 B half round trip us (median) |\n|---|---|---|');
    for (const n of Object.keys(results.bw4MiB)) console.log(`| ${n} | ${med(results.bw4MiB[n])} | ${med(results.lat8B[n])} |`);
    const best = Math.max(med(results.bw4MiB.l1) ?? 0, med(results.bw4MiB.l2) ?? 0);
    console.log(`\nstriping: both / better single lane = ${(med(results.bw4MiB.both) / best).toFixed(2)}x; two-lane 8 B latency / l1 = ${(med(results.lat8B.both) / med(results.lat8B.l1)).toFixed(2)}x`);
  }
  console.log('\n| cut (RAILCOMM_LANE_TIMEOUT 3000 ms) | longest pause ms (median) | runs |\n|---|---|---|');
  for (const [n, p] of Object.entries(results.pause)) console.log(`| ${n} | ${med(p)} | ${p.join(', ')} |`);
}
