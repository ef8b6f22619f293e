// Side-by-side shared-memory comparison on this host (issue 4): railcomm's shm
// rail (processes; single copy by default, and with RAILCOMM_SHM_SINGLE_COPY=0
// the ring path) against Open MPI's vader BTL, interleaved round by round so
// that machine noise hits all alike; medians over rounds and the median of the
// per-round ratios, as markdown. Usage (hold the bench lock, the machine is shared):
//   flock /tmp/railcomm-bench.lock node bench/compare-shm.mjs [--rounds 5] [--threads] [--json out.json]
// Open MPI is included when `mpirun` and bench/mpi/pingpong exist (make -C bench/mpi).

import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { benchPath, opt, roundTables, runRounds, flag } from './lib/compare.mjs';

const rounds = Number(opt('--rounds', '5'));
const latSizes = opt('--lat-sizes', '8,65536,1048576');
const bwSizes = opt('--bw-sizes', '65536,1048576,4194304');
const jsonOut = opt('--json', '');
/** Also thread ranks (tbsm), with and without single copy. */
const withThreads = flag('--threads');

const cli = benchPath('../dist/cli/main.js');
const mpiBin = benchPath('mpi/pingpong');
const haveMpi = existsSync(mpiBin) && (() => { try { execFileSync('which', ['mpirun']); return true; } catch { return false; } })();
const vader = (mode, sizes, extra = []) => ['mpirun', ['--allow-run-as-root', '-np', '2', '--mca', 'pml', 'ob1', '--mca', 'btl', 'self,vader',
  mpiBin, mode, '--json', '--label', 'ompi-vader', '--sizes', sizes, ...extra]];
const node = (argv, env = {}) => [process.execPath, argv, env];

const runners = {
  latency: {
    'railcomm-shm': () => node([cli, 'bench', 'latency', '--rails', 'shm', '--sizes', latSizes, '--json']),
    ...(withThreads ? { 'railcomm-tbsm': () => node([cli, 'bench', 'latency', '--threads', '--sizes', latSizes, '--json']) } : {}),
    ...(haveMpi ? { 'ompi-vader': () => vader('latency', latSizes) } : {}),
  },
  bw: {
    'railcomm-shm': () => node([cli, 'bench', 'bw', '--rails', 'shm', '--sizes', bwSizes, '--json']),
    'railcomm-shm-ring': () => node([cli, 'bench', 'bw', '--rails', 'shm', '--sizes', bwSizes, '--json'], { RAILCOMM_SHM_SINGLE_COPY: '0' }),
    ...(withThreads ? {
      'railcomm-tbsm': () => node([cli, 'bench', 'bw', '--threads', '--sizes', bwSizes, '--json']),
      'railcomm-tbsm-ring': () => node([cli, 'bench', 'bw', '--threads', '--sizes', bwSizes, '--json'], { RAILCOMM_SHM_SINGLE_COPY: '0' }),
    } : {}),
    ...(haveMpi ? { 'ompi-vader': () => vader('bw', bwSizes, ['--iters', '30']) } : {}),
  },
};

const data = runRounds(runners, rounds);
process.stdout.write(roundTables(data, rounds, { latency: 'half round trip, us (median of per-run medians)', bw: 'MB/s (median over runs)' }, (whos) => whos.filter((w) => w !== 'ompi-vader').map((w) => [`${w} / ompi-vader`, w, 'ompi-vader'])));
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ date: new Date().toISOString(), rounds, data }, null, 1));
