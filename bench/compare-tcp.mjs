// Side-by-side tcp comparison on this host, as the foundation issue asks:
// railcomm's tcp rail vs raw Node sockets (sleeping and polling) vs Open MPI's
// tcp BTL, interleaved round by round so that machine noise hits all alike.
// Prints medians per size over the rounds, and the median of the per-round
// ratios, as a markdown table. Usage:
//   node bench/compare-tcp.mjs [--rounds 5] [--lat-sizes 0,8,...] [--bw-sizes ...] [--json out.json]
// Open MPI is included when `mpirun` and bench/mpi/pingpong exist (make -C bench/mpi).

import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { benchPath, opt, roundTables, runRounds } from './lib/compare.mjs';

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

const data = runRounds(runners, rounds);
process.stdout.write(roundTables(data, rounds, { latency: 'us (median of per-run medians)', bw: 'MB/s (median over runs)' }, (whos) => whos.filter((w) => w !== 'railcomm-tcp').map((w) => [`railcomm / ${w}`, 'railcomm-tcp', w])));
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ date: new Date().toISOString(), rounds, data }, null, 1));
