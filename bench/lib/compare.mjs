// What the bench/compare-*.mjs scripts share: paths inside bench/, their
// command-line options, the median they report, and the interleaved rounds
// with their ratio tables.

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A path relative to bench/. */
export const benchPath = (p) => fileURLToPath(new URL(`../${p}`, import.meta.url));

const args = process.argv.slice(2);
/** The value after `--name` on the command line, or def. */
export const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
/** Whether `--name` is on the command line. */
export const flag = (name) => args.includes(name);

/** Median of the finite values (NaN when none). */
export const median = (xs) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[n >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

/**
 * Runs every runner of every benchmark kind, all of them once per round, so
 * that machine noise hits all alike. runners[kind][who]() gives
 * [command, argv, env?]; the command prints one JSON line with `results`.
 * Returns data[kind][who][size] = [value per round] (latency: the median half
 * round trip, else MB/s).
 */
export function runRounds(runners, rounds) {
  const data = Object.fromEntries(Object.keys(runners).map((k) => [k, {}]));
  for (let r = 0; r < rounds; r++) {
    for (const [kind, whos] of Object.entries(runners)) {
      for (const [who, make] of Object.entries(whos)) {
        const [cmd, argv, env = {}] = make();
        let out;
        try {
          out = execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000, env: { ...process.env, ...env } });
        } catch (e) {
          process.stderr.write(`round ${r + 1}: ${kind} ${who} failed: ${e.message.split('\n')[0]}\n`);
          continue;
        }
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (!line) continue;
        for (const row of JSON.parse(line).results) {
          const v = kind === 'latency' ? (row.usec_median ?? row.usec) : row.mbps;
          ((data[kind][who] ??= {})[row.size] ??= []).push(v);
          // Small sizes also timed in batches, without a clock read per round trip.
          if (kind === 'latency' && row.usec_batch > 0) (((data[BATCH_KIND] ??= {})[who] ??= {})[row.size] ??= []).push(row.usec_batch);
        }
        process.stderr.write(`round ${r + 1}/${rounds}: ${kind} ${who} done\n`);
      }
    }
  }
  return data;
}

/** The kind under which runRounds keeps batch-timed latencies (bench latency's and bench/mpi/pingpong's usec_batch). */
export const BATCH_KIND = 'latency (batch)';
const BATCH_UNITS = 'half round trip, us (median of batch averages of 100 round trips, no clock read per round trip)';

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');

/**
 * Markdown tables of runRounds' data: per kind and size, each runner's median
 * over the rounds, then ratio columns, each the median of the per-round
 * ratios. ratios(whos) gives [label, numerator, denominator] per column.
 */
export function roundTables(data, rounds, units, ratios) {
  const lines = [];
  for (const [kind, byWho] of Object.entries(data)) {
    const whos = Object.keys(byWho);
    const sizes = [...new Set(whos.flatMap((w) => Object.keys(byWho[w]).map(Number)))].sort((a, b) => a - b);
    const cols = ratios(whos);
    lines.push('', `### ${kind}: ${units[kind] ?? (kind === BATCH_KIND ? BATCH_UNITS : kind)}, ${rounds} interleaved rounds`, '');
    lines.push(`| size | ${whos.join(' | ')} | ${cols.map(([label]) => label).join(' | ')} |`);
    lines.push(`|${'---|'.repeat(1 + whos.length + cols.length)}`);
    for (const size of sizes) {
      const cells = whos.map((w) => fmt(median(byWho[w]?.[size] ?? []), kind === 'latency' ? 2 : kind === BATCH_KIND ? 3 : 0));
      const ratioCells = cols.map(([, num, den]) => {
        const a = byWho[num]?.[size] ?? [], b = byWho[den]?.[size] ?? [];
        return fmt(median(a.map((v, i) => (b[i] === undefined ? NaN : v / b[i]))));
      });
      lines.push(`| ${size} | ${cells.join(' | ')} | ${ratioCells.join(' | ')} |`);
    }
  }
  return lines.join('\n') + '\n';
}
