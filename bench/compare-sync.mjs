// The 8-byte half round trip through the synchronous calls against Open MPI's
// vader (issue 18's figures): sendSync/recvSync over shm (2 processes) and
// tbsm (2 threads), the async send/recv over both, and vader, interleaved
// round by round so that machine noise hits all alike. The figure compared is
// osu_latency's: the average over 20,000 timed round trips, the clock read once
// per batch of 100 on both sides (usec_batch_avg of `railcomm bench latency`
// and of bench/mpi/pingpong); also each job's median, and the async calls'
// average against their own median batch (the tail: issue 18 wants at most 1.3x;
// a batch that held a millisecond stall is one slow batch of 200, which the
// average counts and the median does not).
// Prints markdown; medians over rounds, ratios as the median of per-round ratios.
// --bind: also the railcomm jobs with RAILCOMM_BIND=core and vader with
// --bind-to none (mpirun binds 2 ranks to cores by default, railcomm does not:
// this compares like with like both ways).
//   flock /tmp/railcomm-bench.lock node bench/compare-sync.mjs [--rounds 5] [--sizes 8] [--spin 1000,20000] [--bind] [--json out.json]
// Open MPI is included when `mpirun` and bench/mpi/pingpong exist (make -C bench/mpi).

import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { benchPath, opt, median } from './lib/compare.mjs';

const rounds = Number(opt('--rounds', '5'));
const sizes = opt('--sizes', '8');
const jsonOut = opt('--json', '');
const cli = benchPath('../dist/cli/main.js');
const mpiBin = benchPath('mpi/pingpong');
const haveMpi = existsSync(mpiBin) && (() => { try { execFileSync('which', ['mpirun']); return true; } catch { return false; } })();

// --spin 1000,20000: the railcomm jobs once per spin budget (RAILCOMM_SPIN_US), named with it.
const spins = opt('--spin', '').split(',').filter(Boolean).map(Number);
const bind = process.argv.includes('--bind');
const rc = (spin, bound, ...extra) => {
  const env = { ...process.env, ...(spin === undefined ? {} : { RAILCOMM_SPIN_US: String(spin) }), ...(bound ? { RAILCOMM_BIND: 'core' } : {}) };
  return [process.execPath, [cli, 'bench', 'latency', '--sizes', sizes, '--json', ...extra], env];
};
const railcommJobs = (spin, bound = false) => {
  const at = (spin === undefined ? '' : `, spin ${spin} us`) + (bound ? ', bound' : '');
  return {
    [`shm async${at}`]: rc(spin, bound, '--rails', 'shm'),
    [`shm sync${at}`]: rc(spin, bound, '--rails', 'shm', '--sync'),
    [`tbsm async${at}`]: rc(spin, bound, '--threads'),
    [`tbsm sync${at}`]: rc(spin, bound, '--threads', '--sync'),
  };
};
const vader = (...extra) => ['mpirun', ['--allow-run-as-root', '-np', '2', ...extra, '--mca', 'pml', 'ob1', '--mca', 'btl', 'self,vader', mpiBin, 'latency', '--json', '--label', 'ompi-vader', '--sizes', sizes]];
const runners = {
  ...(spins.length === 0 ? railcommJobs(undefined) : Object.assign({}, ...spins.map((s) => railcommJobs(s)))),
  ...(bind ? (spins.length === 0 ? railcommJobs(undefined, true) : Object.assign({}, ...spins.map((s) => railcommJobs(s, true)))) : {}),
  ...(haveMpi ? { 'ompi-vader': vader() } : {}),
  ...(haveMpi && bind ? { 'ompi-vader, unbound': vader('--bind-to', 'none') } : {}),
};

/** data[who][size] = [{ avg, median, batchAvg } per round] */
const data = {};
for (let r = 0; r < rounds; r++) {
  for (const [who, [cmd, argv, env]] of Object.entries(runners)) {
    let out;
    try {
      out = execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000, env });
    } catch (e) {
      process.stderr.write(`round ${r + 1}: ${who} failed: ${e.message.split('\n')[0]}\n`);
      continue;
    }
    const line = out.split('\n').find((l) => l.startsWith('{'));
    if (!line) continue;
    for (const row of JSON.parse(line).results) {
      ((data[who] ??= {})[row.size] ??= [])[r] = { avg: row.usec, median: row.usec_median, batchAvg: row.usec_batch_avg, batch: row.usec_batch };
    }
    process.stderr.write(`round ${r + 1}/${rounds}: ${who} done\n`);
  }
}

const fmt = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const col = (who, size, key) => median((data[who]?.[size] ?? []).filter(Boolean).map((v) => v[key]));
const ratio = (a, b, size, ka, kb) => median((data[a]?.[size] ?? []).map((v, i) => { const w = data[b]?.[size]?.[i]; return v && w ? v[ka] / w[kb] : NaN; }));
const lines = [`8-byte half round trip, us: ${rounds} interleaved rounds (medians over rounds; ratios: median of per-round ratios)`, ''];
lines.push('| size | job | average (batch clock) | median batch | median (clock per round trip) | average / its median batch | average / vader average |', '|---|---|---|---|---|---|---|');
for (const size of sizes.split(',').map(Number)) {
  for (const who of Object.keys(runners)) {
    lines.push(`| ${size} | ${who} | ${fmt(col(who, size, 'batchAvg'))} | ${fmt(col(who, size, 'batch'))} | ${fmt(col(who, size, 'median'))} | ${fmt(ratio(who, who, size, 'batchAvg', 'batch'), 2)} | ${haveMpi && who !== 'ompi-vader' ? fmt(ratio(who, 'ompi-vader', size, 'batchAvg', 'batchAvg'), 2) : '-'} |`);
  }
}
process.stdout.write(lines.join('\n') + '\n');
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ date: new Date().toISOString(), rounds, data }, null, 1));
