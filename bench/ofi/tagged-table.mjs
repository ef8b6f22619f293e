// Reads what bench/ofi/tagged-ab.sh printed (stdin) and prints a markdown table
// per provider: for each size, the median over rounds of each round's median
// and average half round trip (us) for railcomm async, railcomm sync, raw
// fi_send/fi_recv and raw fi_tsend/fi_trecv, and the raw stream's MB/s both ways.
//   bash bench/ofi/tagged-ab.sh 3 > out.txt; node bench/ofi/tagged-table.mjs < out.txt
import { readFileSync } from 'node:fs';
import { median } from '../lib/compare.mjs';

const rows = new Map(); // provider -> size -> column -> [values per round]
let provider = null;
const put = (p, size, col, v) => {
  if (!rows.has(p)) rows.set(p, new Map());
  const bySize = rows.get(p);
  if (!bySize.has(size)) bySize.set(size, new Map());
  const cols = bySize.get(size);
  if (!cols.has(col)) cols.set(col, []);
  cols.get(col).push(v);
};
for (const line of readFileSync(0, 'utf8').split('\n')) {
  const h = /^## round \d+, ([^,]+),/.exec(line);
  if (h) { provider = h[1]; continue; }
  if (!line.startsWith('{') || provider === null) continue;
  const j = JSON.parse(line);
  const kind = j.rails === 'ofi' ? 'async' : j.rails === 'ofi sync' ? 'sync' : j.rails.endsWith('-tagged') ? 'tagged' : 'untagged';
  for (const r of j.results) {
    if (j.benchmark === 'latency') put(provider, r.size, `${kind} lat`, `${r.usec_median}/${r.usec}`);
    else put(provider, r.size, `${kind} bw`, r.mbps);
  }
}
const lat = (vs) => (vs === undefined ? '' : `${median(vs.map((v) => Number(v.split('/')[0]))).toFixed(2)} / ${median(vs.map((v) => Number(v.split('/')[1]))).toFixed(2)}`);
const bw = (vs) => (vs === undefined ? '' : median(vs).toFixed(0));
for (const [p, bySize] of rows) {
  console.log(`\n${p}: half round trip, us (median / average; median of ${bySize.values().next().value.get('untagged lat')?.length ?? 0} rounds), and raw stream MB/s\n`);
  console.log('| size | railcomm async | railcomm sync | raw fi_send | raw fi_tsend | tagged / untagged (median) | raw stream MB/s untagged / tagged |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [size, c] of [...bySize].sort((a, b) => a[0] - b[0])) {
    const u = c.get('untagged lat'), t = c.get('tagged lat');
    const ratio = u && t ? (median(t.map((v) => Number(v.split('/')[0]))) / median(u.map((v) => Number(v.split('/')[0])))).toFixed(2) : '';
    console.log(`| ${size} | ${lat(c.get('async lat'))} | ${lat(c.get('sync lat'))} | ${lat(u)} | ${lat(t)} | ${ratio} | ${bw(c.get('untagged bw'))} / ${bw(c.get('tagged bw'))} |`);
  }
}
