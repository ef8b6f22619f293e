// Reads what bench/ofi/small-ab.sh printed (stdin) and prints a markdown table
// per provider: the 8 B half round trip (us, median / average) of each column
// in each round, the median over rounds of both, and the ratios to the raw
// libfabric ping-pong (spinning, its queue without a wait object) and to Open
// MPI's mtl ofi, taken between the medians over rounds.
//   bash bench/ofi/small-ab.sh 3 > out.txt; node bench/ofi/small-table.mjs < out.txt
import { readFileSync } from 'node:fs';
import { median } from '../lib/compare.mjs';

const COLUMNS = [
  ['async', 'railcomm async'], ['sync', 'railcomm sync'],
  ['async nowait', 'railcomm async, RAILCOMM_OFI_WAIT_FD=0'], ['sync nowait', 'railcomm sync, RAILCOMM_OFI_WAIT_FD=0'],
  ['raw', 'raw libfabric'], ['raw waitfd', 'raw libfabric, FI_WAIT_FD'], ['ompi', 'Open MPI mtl ofi (tcp)'],
];
const rows = new Map(); // provider -> column -> [{ med, avg } per round]
let provider = null, block = '';
const put = (col, med, avg) => {
  if (!rows.has(provider)) rows.set(provider, new Map());
  const cols = rows.get(provider);
  if (!cols.has(col)) cols.set(col, []);
  cols.get(col).push({ med, avg });
};
for (const line of readFileSync(0, 'utf8').split('\n')) {
  const h = /^## round \d+, ([^,]+), (.*)$/.exec(line);
  if (h) {
    provider = h[1];
    block = h[2].includes('Open MPI') ? 'ompi' : h[2].includes('raw') ? (h[2].includes('FI_WAIT_FD') ? 'raw waitfd' : 'raw') : h[2].includes('WAIT_FD=0') ? 'nowait' : '';
    continue;
  }
  if (provider === null) continue;
  if (line.startsWith('{')) {
    const j = JSON.parse(line);
    const r = j.results.find((x) => x.size === 8);
    if (r === undefined) continue;
    const kind = block.startsWith('raw') ? block : `${j.rails === 'ofi sync' ? 'sync' : 'async'}${block === 'nowait' ? ' nowait' : ''}`;
    put(kind, r.usec_median, r.usec);
  } else if (block === 'ompi') {
    // pingpong's row: size, average us, median us, iterations.
    const m = /^\s+8\s+([\d.]+)\s+([\d.]+)\s+\d+/.exec(line);
    if (m) put('ompi', Number(m[2]), Number(m[1]));
  }
}
const fmt = (v) => v.toFixed(2);
for (const [p, cols] of rows) {
  const mid = (c, k) => (cols.has(c) ? median(cols.get(c).map((x) => x[k])) : NaN);
  console.log(`\n${p}: 8 B half round trip, us (median / average per round; then the median over rounds of each)\n`);
  console.log('| column | rounds | median over rounds | / raw (medians) | / raw (averages) | / Open MPI (averages) |');
  console.log('|---|---|---|---|---|---|');
  for (const [c, label] of COLUMNS) {
    if (!cols.has(c)) continue;
    const rounds = cols.get(c).map((x) => `${fmt(x.med)}/${fmt(x.avg)}`).join(', ');
    const ratio = (k, base) => (Number.isNaN(mid(base, k)) ? '' : (mid(c, k) / mid(base, k)).toFixed(2));
    console.log(`| ${label} | ${rounds} | ${fmt(mid(c, 'med'))} / ${fmt(mid(c, 'avg'))} | ${ratio('med', 'raw')} | ${ratio('avg', 'raw')} | ${ratio('avg', 'ompi')} |`);
  }
}
