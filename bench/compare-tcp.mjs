// Side-by-side tcp comparison on this host, as the foundation issue asks:
// railcomm's tcp rail vs raw Node sockets (sleeping and polling) vs Open MPI's
// tcp BTL, interleaved round by round so that machine noise hits all alike.
// Prints medians per size over the rounds, and the median of the per-round
// ratios, as a markdown table. Usage:
//   node bench/compare-tcp.mjs [--rounds 5] [--lat-sizes 0,8,...] [--bw-sizes ...] [--json out.json]
// Open MPI is included when `mpirun` and bench/mpi/pingpong exist (make -C bench/mpi).

import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { benchPath, median, opt } from './lib/compare.mjs';

const rounds = Number(opt('--rounds', '5'));
const latSizes = opt('--lat-sizes', '0,8,1024,16384,65536,1048576,4194304');
const bwSizes = opt('--bw-sizes', '8,1024,65536,1048576,4194304');
const jsonOut = opt('--json', '');

const cli = benchPath('../dist/cli/main.js');
const mpiBin = benchPath('mpi/pingpong');
const haveMpi = existsSync(mpiBin) && (() => { try { execFileSync('which', ['mpirun']); return true; } catch { return false; } })();
const mpirun = (mode, sizes) => ['mpirun', ['--allow-run-as-root', '--oversubscribe', '-n', '2', '--mca', 'pml', 'ob1', '--mca', 'btl', 'self,tcp',
  '--mca', 'btl_tcp_if_include', 'lo', mpiBin, mode, '--json', '--label', 'ompi-tcp', '--sizes', sizes]];

const runners = {
  latency: {
    'railcomm-tcp': () => [process.execPath, [cli, 'bench', 'latency', '--rails', 'tcp', '--sizes', latSizes, '--json']],
    'raw-node': () => [process.execPath, [benchPath('raw-tcp-pingpong.mjs'), '--sizes', latSizes, '--json']],
    'raw-node-spin': () => [process.execPath, [benchPath('raw-tcp-pingpong.mjs'), '--sizes', latSizes, '--json', '--spin']],
    ...(haveMpi ? { 'ompi-tcp': () => mpirun('latency', latSizes) } : {}),
  },
  bw: {
    'railcomm-tcp': () => [process.execPath, [cli, 'bench', 'bw', '--rails', 'tcp', '--sizes', bwSizes, '--iters', '1200', '--json']],
    'raw-node': () => [process.execPath, [benchPath('raw-tcp-stream.mjs'), '--sizes', bwSizes, '--json', '--iters', '30']],
    'raw-node-spin': () => [process.execPath, [benchPath('raw-tcp-stream.mjs'), '--sizes', bwSizes, '--json', '--spin', '--iters', '30']],
    ...(haveMpi ? { 'ompi-tcp': () => [mpirun('bw', bwSizes)[0], [...mpirun('bw', bwSizes)[1], '--iters', '30']] } : {}),
  },
};

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');

// data[bench][who][size] = [value per round]
const data = { latency: {}, bw: {} };
for (let r = 0; r < rounds; r++) {
  for (const bench of ['latency', 'bw']) {
    for (const [who, make] of Object.entries(runners[bench])) {
      const [cmd, argv] = make();
      let out;
      try {
        out = execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
      } catch (e) {
        process.stderr.write(`round ${r + 1}: ${bench} ${who} failed: ${e.message.split('\n')[0]}\n`);
        continue;
      }
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (!line) continue;
      for (const row of JSON.parse(line).results) {
        const v = bench === 'latency' ? (row.usec_median ?? row.usec) : row.mbps;
        ((data[bench][who] ??= {})[row.size] ??= []).push(v);
      }
      process.stderr.write(`round ${r + 1}/${rounds}: ${bench} ${who} done\n`);
    }
  }
}

const lines = [];
for (const bench of ['latency', 'bw']) {
  const whos = Object.keys(data[bench]);
  const sizes = [...new Set(whos.flatMap((w) => Object.keys(data[bench][w]).map(Number)))].sort((a, b) => a - b);
  const unit = bench === 'latency' ? 'us (median of per-run medians)' : 'MB/s (median over runs)';
  lines.push('', `### ${bench}: ${unit}, ${rounds} interleaved rounds`, '');
  const ratioCols = whos.filter((w) => w !== 'railcomm-tcp').map((w) => `railcomm / ${w}`);
  lines.push(`| size | ${whos.join(' | ')} | ${ratioCols.join(' | ')} |`);
  lines.push(`|${'---|'.repeat(1 + whos.length + ratioCols.length)}`);
  for (const size of sizes) {
    const cells = whos.map((w) => fmt(median(data[bench][w]?.[size] ?? []), bench === 'latency' ? 2 : 0));
    const mine = data[bench]['railcomm-tcp']?.[size] ?? [];
    const ratios = whos.filter((w) => w !== 'railcomm-tcp').map((w) => {
      const other = data[bench][w]?.[size] ?? [];
      const per = mine.map((v, i) => (other[i] === undefined ? NaN : v / other[i])).filter(Number.isFinite);
      return fmt(median(per));
    });
    lines.push(`| ${size} | ${cells.join(' | ')} | ${ratios.join(' | ')} |`);
  }
}
process.stdout.write(lines.join('\n') + '\n');
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ date: new Date().toISOString(), rounds, data }, null, 1));
