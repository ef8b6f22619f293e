// The udp rail's figures (issue 3), measured side by side on this host and
// interleaved round by round so machine noise hits all alike: railcomm's udp
// rail vs raw Node dgram (bench/raw-udp.mjs) and vs railcomm's tcp rail; goodput
// under injected loss; datagrams/s at a 1472-byte MTU. Prints medians over the
// rounds and the ratios of round 1 and the median ratio, as markdown.
//   node bench/compare-udp.mjs [--rounds 5] [--json out.json]

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { benchPath, median, opt } from './lib/compare.mjs';

const rounds = Number(opt('--rounds', '5'));
const jsonOut = opt('--json', '');
const cli = benchPath('../dist/cli/main.js');
const raw = benchPath('raw-udp.mjs');
const MIB = 1048576;
/** Chunk payload per 1472-byte datagram (the rail's 40-byte chunk header). */
const CHUNK_PAYLOAD_1472 = 1472 - 40;

const rc = (kind, rails, sizes, iters, env = {}) => ({ cmd: [cli, 'bench', kind, '--rails', rails, '--sizes', sizes, '--iters', String(iters), '--json'], env });
const pick = (out, key) => JSON.parse(out.split('\n').find((l) => l.startsWith('{'))).results[0][key];

const figures = {
  'latency 8 B: railcomm udp (us, median)': { ...rc('latency', 'udp', '8', 3000), get: (o) => pick(o, 'usec_median') },
  'latency 8 B: raw dgram ping-pong (us, median)': { cmd: [raw, 'pingpong', '--size', '8', '--iters', '3000', '--json'], get: (o) => JSON.parse(o).usec_median },
  'bw 1 MiB: railcomm udp (MB/s)': { ...rc('bw', 'udp', String(MIB), 300), get: (o) => pick(o, 'mbps') },
  'bw 1 MiB, RAILCOMM_UDP_CHECKSUM=0: railcomm udp (MB/s)': { ...rc('bw', 'udp', String(MIB), 300, { RAILCOMM_UDP_CHECKSUM: '0' }), get: (o) => pick(o, 'mbps') },
  'bw 1 MiB: railcomm tcp (MB/s)': { ...rc('bw', 'tcp', String(MIB), 300), get: (o) => pick(o, 'mbps') },
  'raw dgram intake, 60000 B datagrams (MB/s)': { cmd: [raw, 'intake', '--size', '60000', '--json'], get: (o) => JSON.parse(o).mbps },
  'bw 1 MiB, drop=0.01: railcomm udp (MB/s)': { ...rc('bw', 'udp', String(MIB), 200, { RAILCOMM_UDP_FAULTS: 'drop=0.01' }), get: (o) => pick(o, 'mbps') },
  'bw 1 MiB, drop=0.05: railcomm udp (MB/s)': { ...rc('bw', 'udp', String(MIB), 100, { RAILCOMM_UDP_FAULTS: 'drop=0.05' }), get: (o) => pick(o, 'mbps') },
  'MTU 1472, bw 1 MiB: railcomm udp (datagrams/s)': { ...rc('bw', 'udp', String(MIB), 100, { RAILCOMM_UDP_MTU: '1472' }), get: (o) => (pick(o, 'mbps') * 1e6) / CHUNK_PAYLOAD_1472 },
  'raw dgram intake, 1472 B datagrams (datagrams/s)': { cmd: [raw, 'intake', '--size', '1472', '--json'], get: (o) => JSON.parse(o).datagramsPerSec },
};
const RATIOS = [
  ['udp 8 B latency / raw dgram', 'latency 8 B: railcomm udp (us, median)', 'latency 8 B: raw dgram ping-pong (us, median)', '<= 1.2'],
  ['udp 1 MiB bw / raw 60 KB intake', 'bw 1 MiB: railcomm udp (MB/s)', 'raw dgram intake, 60000 B datagrams (MB/s)', '>= 0.8'],
  ['udp 1 MiB bw, header-only checksum / raw 60 KB intake', 'bw 1 MiB, RAILCOMM_UDP_CHECKSUM=0: railcomm udp (MB/s)', 'raw dgram intake, 60000 B datagrams (MB/s)', '(checksum cost)'],
  ['udp 1 MiB bw / tcp rail', 'bw 1 MiB: railcomm udp (MB/s)', 'bw 1 MiB: railcomm tcp (MB/s)', '>= 0.5'],
  ['udp drop 1% / udp no loss', 'bw 1 MiB, drop=0.01: railcomm udp (MB/s)', 'bw 1 MiB: railcomm udp (MB/s)', '>= 0.5'],
  ['udp drop 5% / udp no loss', 'bw 1 MiB, drop=0.05: railcomm udp (MB/s)', 'bw 1 MiB: railcomm udp (MB/s)', 'completes'],
  ['MTU 1472 datagrams/s / raw intake', 'MTU 1472, bw 1 MiB: railcomm udp (datagrams/s)', 'raw dgram intake, 1472 B datagrams (datagrams/s)', '>= 0.8'],
];

const data = {};
for (let r = 0; r < rounds; r++) {
  for (const [name, f] of Object.entries(figures)) {
    try {
      const out = execFileSync(process.execPath, f.cmd, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000, env: { ...process.env, ...(f.env ?? {}) } });
      (data[name] ??= []).push(f.get(out));
    } catch (e) {
      process.stderr.write(`round ${r + 1}: ${name} failed: ${String(e.message).split('\n')[0]}\n`);
      (data[name] ??= []).push(NaN);
    }
  }
  process.stderr.write(`round ${r + 1}/${rounds} done\n`);
}
const fmt = (x) => (Number.isFinite(x) ? (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2)) : '-');
const lines = ['', `| figure | median of ${rounds} | runs |`, '|---|---|---|'];
for (const [name, xs] of Object.entries(data)) lines.push(`| ${name} | ${fmt(median(xs))} | ${xs.map(fmt).join(', ')} |`);
lines.push('', '| ratio | round 1 | median of per-round ratios | target |', '|---|---|---|---|');
for (const [label, a, b, target] of RATIOS) {
  const per = data[a].map((x, i) => x / data[b][i]);
  lines.push(`| ${label} | ${fmt(per[0])} | ${fmt(median(per))} | ${target} |`);
}
console.log(lines.join('\n'));
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ rounds, data }, null, 1));
