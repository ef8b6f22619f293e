// Benchmark results as pictures and side-by-side tables: which figure of a
// result line goes on which panel (latency, bandwidth, collectives, one-sided),
// shared by `railcomm bench --plot/--html` and the report.

import type { BenchJson } from './bench-runs.js';
import type { Panel, Series } from './plot.js';

/** One measured line and the name it goes by in the legend. */
export interface NamedResult {
  name: string;
  baseline: boolean;
  json: BenchJson;
}

interface Figure { panel: string; yLabel: string; key: string; fallback?: string }

/** What each benchmark kind contributes to a picture (atomic and wireup have no size axis). */
function figuresOf(kind: string, ranks: number | undefined): Figure[] {
  switch (kind) {
    case 'latency': return [{ panel: 'Latency (half round trip)', yLabel: 'microseconds, median', key: 'usec_median', fallback: 'usec' }];
    case 'bw': return [{ panel: 'Bandwidth (windows of 64 messages)', yLabel: 'MB/s (10^6 bytes/s)', key: 'mbps' }];
    case 'allreduce': case 'bcast': case 'allgather': case 'alltoall':
      return [{ panel: `${kind}, ${ranks ?? '?'} ranks`, yLabel: 'microseconds per call, average', key: 'usec' }];
    case 'put': case 'get':
      return [
        { panel: `${kind} latency (completed at the target)`, yLabel: 'microseconds, median', key: 'usec_median', fallback: 'usec' },
        { panel: `${kind} bandwidth (windows of 64)`, yLabel: 'MB/s (10^6 bytes/s)', key: 'mbps' },
      ];
    default: return [];
  }
}

/** Panels in the order their kinds first appear; a series per result line. */
export function panelsFor(results: NamedResult[]): Panel[] {
  const panels = new Map<string, Panel>();
  for (const r of results) {
    for (const f of figuresOf(r.json.benchmark, r.json.ranks)) {
      const points: Array<[number, number]> = [];
      for (const row of r.json.results) {
        const y = row[f.key] ?? (f.fallback ? row[f.fallback] : undefined);
        if (typeof row['size'] === 'number' && typeof y === 'number') points.push([row['size'], y]);
      }
      if (points.length === 0) continue;
      let p = panels.get(f.panel);
      if (!p) panels.set(f.panel, (p = { title: f.panel, xLabel: 'message size', xKind: 'bytes', yLabel: f.yLabel, series: [] }));
      const series: Series = { name: r.name, points, baseline: r.baseline };
      p.series.push(series);
    }
  }
  return [...panels.values()];
}

/** Names made unique in order (a second `railcomm tcp` becomes `railcomm tcp #2`). */
export function uniqueNames(results: NamedResult[]): NamedResult[] {
  const seen = new Map<string, number>();
  return results.map((r) => {
    const key = `${r.json.benchmark}\u0000${r.name}`;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    return n === 1 ? r : { ...r, name: `${r.name} #${n}` };
  });
}

const cell = (v: unknown): string => (typeof v === 'number' && Number.isFinite(v) ? String(v) : '-');

/** Text tables side by side, one per kind: size, then each result's headline figure. */
export function sideBySide(results: NamedResult[]): string {
  const out: string[] = [];
  const kinds = [...new Set(results.map((r) => r.json.benchmark))];
  for (const kind of kinds) {
    const rs = results.filter((r) => r.json.benchmark === kind);
    const f = figuresOf(kind, rs[0]?.json.ranks)[0];
    if (!f) continue;
    const sizes = [...new Set(rs.flatMap((r) => r.json.results.map((x) => x['size']).filter((s): s is number => typeof s === 'number')))].sort((a, b) => a - b);
    const w = Math.max(12, ...rs.map((r) => r.name.length));
    out.push(`# ${kind}: ${f.yLabel}, side by side`);
    out.push(['size'.padStart(10), ...rs.map((r) => r.name.padStart(w))].join(' '));
    for (const s of sizes) {
      out.push([String(s).padStart(10), ...rs.map((r) => {
        const row = r.json.results.find((x) => x['size'] === s);
        return cell(row?.[f.key] ?? (f.fallback ? row?.[f.fallback] : undefined)).padStart(w);
      })].join(' '));
    }
  }
  return out.length > 0 ? out.join('\n') + '\n' : '';
}
