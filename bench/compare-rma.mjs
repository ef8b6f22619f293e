// One-sided operations on one host (issue 6): railcomm's windows (2 processes,
// allocated windows mapped by both ranks) against Open MPI's one-sided
// component over vader (bench/mpi/osc), interleaved round by round; medians
// over rounds and the median of the per-round ratios, as markdown.
//   flock /tmp/railcomm-bench.lock node bench/compare-rma.mjs [--rounds 5] [--json out.json]
// Open MPI's default osc here (rdma) crashes in compare-and-swap
// (open-mpi/ompi#11349) after printing the other tests; those are used.

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { benchPath, median, opt } from './lib/compare.mjs';

const rounds = Number(opt('--rounds', '5'));
const jsonOut = opt('--json', '');
const cli = benchPath('../dist/cli/main.js');

/** stdout of a command, also when it failed after printing (Open MPI's crash in CAS). */
function run(cmd, argv) {
  try { return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 300_000 }); }
  catch (e) { return e.stdout ?? ''; }
}
const jsonLines = (out) => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
const pick = (rows, size, key) => rows.find((r) => r.size === size)?.[key];

/** One round of each side: { measure: value }. */
function railcomm() {
  const m = {};
  const bench = (kind, sizes) => jsonLines(run(process.execPath, [cli, 'bench', kind, '--sizes', sizes, '--json']))[0]?.results ?? [];
  const put = bench('put', '8,1048576');
  const get = bench('get', '8');
  m['put 8 B + flush, median us'] = pick(put, 8, 'usec_median');
  m['put 8 B + awaited flush, median us'] = pick(put, 8, 'usec_median_flush');
  m['put 8 B awaited + awaited flush, median us'] = pick(put, 8, 'usec_median_awaited');
  m['put 1 MiB bandwidth, MB/s'] = pick(put, 1048576, 'mbps');
  m['get 8 B + flush, median us'] = pick(get, 8, 'usec_median');
  m['get 8 B awaited, median us'] = pick(get, 8, 'usec_median_awaited');
  // The comparison runs 2-5 made: the same railcomm figure against Open MPI timed per operation.
  m['put 8 B + flush, median us, Open MPI timed per operation'] = m['put 8 B + flush, median us'];
  const at = bench('atomic', '8');
  m['fetch-add, median us'] = at[0]?.usec_median;
  // Rates from the medians on both sides (a batch median each).
  m['fetch-add rate, ops/s'] = at[0]?.usec_median > 0 ? Math.round(1e6 / at[0].usec_median) : undefined;
  return m;
}
function openmpi() {
  const rows = Object.fromEntries(jsonLines(run('mpirun', ['--allow-run-as-root', '-np', '2', '--mca', 'pml', 'ob1', '--mca', 'btl', 'self,vader',
    benchPath('mpi/osc'), 'all', '-s', '8,1048576', '--json'])).map((j) => [j.benchmark, j.results]));
  return {
    // Small puts and gets timed as railcomm's are: the median of per-batch
    // averages of 100 operations (a clock read per operation costs as much as
    // the put). Open MPI has no await to add: one figure for every railcomm form.
    'put 8 B + flush, median us': pick(rows.put ?? [], 8, 'usec_batch'),
    'put 8 B + awaited flush, median us': pick(rows.put ?? [], 8, 'usec_batch'),
    'put 8 B awaited + awaited flush, median us': pick(rows.put ?? [], 8, 'usec_batch'),
    'put 1 MiB bandwidth, MB/s': pick(rows.putbw ?? [], 1048576, 'mbps'),
    'get 8 B + flush, median us': pick(rows.get ?? [], 8, 'usec_batch'),
    'get 8 B awaited, median us': pick(rows.get ?? [], 8, 'usec_batch'),
    'put 8 B + flush, median us, Open MPI timed per operation': pick(rows.put ?? [], 8, 'usec_median'),
    'fetch-add, median us': pick(rows.fadd ?? [], 8, 'usec_batch'),
    'fetch-add rate, ops/s': pick(rows.fadd ?? [], 8, 'usec_batch') > 0 ? Math.round(1e6 / pick(rows.fadd, 8, 'usec_batch')) : undefined,
  };
}

const perRound = [];
for (let r = 0; r < rounds; r++) {
  perRound.push({ railcomm: railcomm(), openmpi: openmpi() });
  process.stderr.write(`round ${r + 1}/${rounds} done\n`);
}
const lines = ['| measure | railcomm (per round) | Open MPI (per round) | railcomm median | Open MPI median | median of per-round ratios |', '|---|---|---|---|---|---|'];
for (const k of Object.keys(perRound[0].railcomm)) {
  const a = perRound.map((p) => p.railcomm[k]);
  const b = perRound.map((p) => p.openmpi[k]);
  const ratios = perRound.map((p) => p.railcomm[k] / p.openmpi[k]);
  const f = (x) => (Number.isFinite(x) ? (x >= 1000 ? Math.round(x).toString() : x.toFixed(3)) : '-');
  lines.push(`| ${k} | ${a.map(f).join(' / ')} | ${b.map(f).join(' / ')} | ${f(median(a))} | ${f(median(b))} | ${median(ratios).toFixed(2)} |`);
}
console.log(lines.join('\n'));
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(perRound, null, 1));
