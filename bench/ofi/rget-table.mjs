// Reads what bench/ofi/rget-ab.sh printed (stdin) and prints a markdown table
// per provider: each round's bandwidth (MB/s) at 1 MiB and 4 MiB with
// rendezvous by remote read, with CTS and DATA frames, and raw libfabric's
// stream, then the 1 MiB half round trip (us, median), and the median over
// rounds of the per-round ratio remote read / raw (for the half round trip
// that is time over raw's time: above 1 is slower).
//   bash bench/ofi/rget-ab.sh 5 > out.txt; node bench/ofi/rget-table.mjs < out.txt
import { readFileSync } from 'node:fs';
import { median } from '../lib/compare.mjs';

const data = new Map(); // provider -> column -> size -> [value per round]
let provider = null, column = null, kind = null, round = 0;
const put = (size, v) => {
  if (!data.has(provider)) data.set(provider, new Map());
  const cols = data.get(provider);
  const key = `${column} ${kind}`;
  if (!cols.has(key)) cols.set(key, new Map());
  const bySize = cols.get(key);
  if (!bySize.has(size)) bySize.set(size, []);
  bySize.get(size)[round - 1] = v;
};
for (const line of readFileSync(0, 'utf8').split('\n')) {
  const h = /^## round (\d+), ([^,]+), (.*)$/.exec(line);
  if (h) {
    round = Number(h[1]); provider = h[2];
    column = h[3].includes('Open MPI') ? 'ompi' : h[3].includes('raw') ? 'raw' : h[3].includes('RGET_MIN=0') ? 'cts' : 'read';
    continue;
  }
  if (provider === null) continue;
  if (/ bw| bandwidth/.test(line) && line.startsWith('#')) { kind = 'bw'; continue; }
  if (/ latency/.test(line) && line.startsWith('#')) { kind = 'lat'; continue; }
  let m;
  if (column === 'raw' && (m = /^\s+(\d+) bytes\s+([\d.]+) MB\/s/.exec(line))) put(Number(m[1]), Number(m[2]));
  else if (column === 'raw' && (m = /^\s+(\d+) bytes\s+[\d.]+ us \(median ([\d.]+)/.exec(line))) put(Number(m[1]), Number(m[2]));
  else if (kind === 'bw' && (m = /^\s+(\d+)\s+([\d.]+)(\s+\d+)?\s*$/.exec(line))) put(Number(m[1]), Number(m[2]));
  else if (kind === 'lat' && (m = /^\s+(\d+)\s+[\d.]+\s+([\d.]+)\s/.exec(line))) put(Number(m[1]), Number(m[2]));
}
const f0 = (v) => (v === undefined ? '-' : v.toFixed(0));
for (const [p, cols] of data) {
  console.log(`\n${p}: MB/s per round (1 MiB half round trip: us, median), and remote read / raw (bandwidth: its share of raw; half round trip: its time over raw's)\n`);
  const ompi = cols.has('ompi bw');
  console.log(`| size | remote read | CTS + DATA | raw libfabric | remote read / raw (per round) | median of the ratios |${ompi ? ' Open MPI mtl ofi (tcp) | remote read / Open MPI (median of the ratios) |' : ''}`);
  console.log(`|---|---|---|---|---|---|${ompi ? '---|---|' : ''}`);
  for (const [k, label] of [['bw', ''], ['lat', ', half round trip']]) {
    const sizes = [...(cols.get(`read ${k}`)?.keys() ?? [])].sort((a, b) => a - b);
    for (const size of sizes) {
      const read = cols.get(`read ${k}`)?.get(size) ?? [], cts = cols.get(`cts ${k}`)?.get(size) ?? [], raw = cols.get(`raw ${k}`)?.get(size) ?? [];
      const ratios = read.map((v, i) => (raw[i] ? v / raw[i] : NaN)).filter(Number.isFinite);
      const mpi = cols.get(`ompi ${k}`)?.get(size) ?? [];
      const vsMpi = read.map((v, i) => (mpi[i] ? v / mpi[i] : NaN)).filter(Number.isFinite);
      const extra = ompi ? ` ${mpi.map(f0).join(' / ')} | ${vsMpi.length ? median(vsMpi).toFixed(2) : '-'} |` : '';
      console.log(`| ${size >= 1 << 20 ? `${size >> 20} MiB` : size}${label} | ${read.map(f0).join(' / ')} | ${cts.map(f0).join(' / ')} | ${raw.map(f0).join(' / ')} | ${ratios.map((r) => r.toFixed(2)).join(' / ')} | ${ratios.length ? median(ratios).toFixed(2) : '-'} |${extra}`);
    }
  }
}
