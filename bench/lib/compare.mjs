// What the bench/compare-*.mjs scripts share: paths inside bench/, their
// command-line options, and the median they report.

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
