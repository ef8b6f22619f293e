// Plain SVG line charts on log-log axes for `railcomm bench --plot` and the
// report: one panel per measure (latency, bandwidth, ...) against message size,
// one line per rail or baseline, with a shared legend. No dependencies.

export interface Series {
  /** Legend name; the same name keeps the same colour in every panel. */
  name: string;
  /** [x, y] pairs; points with x or y <= 0 (or not finite) cannot sit on a log axis and are left out. */
  points: Array<[number, number]>;
  /** Drawn dashed with square markers (baselines); solid with round markers otherwise. */
  baseline?: boolean;
}

export interface Panel {
  title: string;
  xLabel: string;
  yLabel: string;
  /** 'bytes': ticks at powers of two labelled 1 KiB, 1 MiB; 'plain' (default): powers of ten. */
  xKind?: 'bytes' | 'plain';
  series: Series[];
}

export interface PlotOptions {
  title?: string;
  /** Lines under the title (commit, machine, date). */
  subtitle?: string[];
}

/** Okabe-Ito palette (told apart with colour-vision deficiencies) less its yellow, too pale on white, then a few more. */
const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#8C6D31', '#7F3C8D', '#666666'];
const PANEL_W = 520;
const PANEL_H = 380;
const MARGIN = { left: 72, right: 18, top: 34, bottom: 52 };
const FONT = 'font-family="Helvetica, Arial, sans-serif"';

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** 1 B, 64 B, 1 KiB, 256 KiB, 4 MiB. */
export function sizeLabel(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let u = 0;
  let v = bytes;
  while (v >= 1024 && u < units.length - 1 && v % 1024 === 0) { v /= 1024; u++; }
  return `${v} ${units[u]}`;
}

/** 0.01, 0.1, 1, 10, 100, 1k, 10k, 100k, 1M. */
export function decadeLabel(v: number): string {
  if (v >= 1e6) return `${v / 1e6}M`;
  if (v >= 1e3) return `${v / 1e3}k`;
  return String(Number(v.toPrecision(1)));
}

const fmt = (n: number): string => String(Math.round(n * 10) / 10);

interface Axis { lo: number; hi: number; ticks: Array<{ v: number; label: string }>; minor: number[] }

/** A log axis covering [min, max]: decade or power-of-two ticks, at most about 8 labelled. */
export function logAxis(min: number, max: number, kind: 'bytes' | 'plain'): Axis {
  if (!(min > 0) || !(max > 0)) { min = 1; max = 10; }
  if (kind === 'bytes') {
    let a = Math.floor(Math.log2(min));
    let b = Math.ceil(Math.log2(max));
    if (a === b) { a -= 1; b += 1; }
    const step = Math.max(1, Math.ceil((b - a) / 8));
    a = Math.floor(a / step) * step;
    b = Math.ceil(b / step) * step;
    const ticks: Axis['ticks'] = [];
    const minor: number[] = [];
    for (let k = a; k <= b; k++) {
      if ((k - a) % step === 0) ticks.push({ v: 2 ** k, label: sizeLabel(2 ** k) });
      else minor.push(2 ** k);
    }
    return { lo: 2 ** a, hi: 2 ** b, ticks, minor };
  }
  let a = Math.floor(Math.log10(min));
  let b = Math.ceil(Math.log10(max));
  if (a === b) { a -= 1; b += 1; }
  const step = Math.max(1, Math.ceil((b - a) / 8));
  const ticks: Axis['ticks'] = [];
  const minor: number[] = [];
  // Over one or two decades, 2x and 5x are labelled too (else the axis has two or three numbers).
  const short = b - a <= 2;
  for (let k = a; k <= b; k++) {
    const v = 10 ** k;
    if ((k - a) % step === 0) ticks.push({ v, label: decadeLabel(v) });
    else minor.push(v);
    if (step === 1 && k < b) {
      for (const m of [2, 5]) {
        const mv = Number((m * v).toPrecision(1));
        if (short) ticks.push({ v: mv, label: decadeLabel(mv) });
        else minor.push(mv);
      }
    }
  }
  ticks.sort((x, y) => x.v - y.v);
  return { lo: 10 ** a, hi: 10 ** b, ticks, minor };
}

const usable = (p: [number, number]): boolean => Number.isFinite(p[0]) && Number.isFinite(p[1]) && p[0] > 0 && p[1] > 0;

function marker(x: number, y: number, colour: string, square: boolean): string {
  return square
    ? `<rect x="${fmt(x - 3.5)}" y="${fmt(y - 3.5)}" width="7" height="7" fill="white" stroke="${colour}" stroke-width="1.5"/>`
    : `<circle cx="${fmt(x)}" cy="${fmt(y)}" r="3.5" fill="${colour}"/>`;
}

function panelSvg(p: Panel, ox: number, oy: number, colours: Map<string, string>): string {
  const out: string[] = [];
  const pts = p.series.flatMap((s) => s.points.filter(usable));
  const xs = pts.map((q) => q[0]);
  const ys = pts.map((q) => q[1]);
  const xa = logAxis(Math.min(...xs), Math.max(...xs), p.xKind ?? 'plain');
  const ya = logAxis(Math.min(...ys), Math.max(...ys), 'plain');
  const x0 = ox + MARGIN.left;
  const y0 = oy + MARGIN.top;
  const w = PANEL_W - MARGIN.left - MARGIN.right;
  const h = PANEL_H - MARGIN.top - MARGIN.bottom;
  const X = (v: number): number => x0 + ((Math.log(v) - Math.log(xa.lo)) / (Math.log(xa.hi) - Math.log(xa.lo))) * w;
  const Y = (v: number): number => y0 + h - ((Math.log(v) - Math.log(ya.lo)) / (Math.log(ya.hi) - Math.log(ya.lo))) * h;
  out.push(`<g class="panel">`);
  out.push(`<text x="${fmt(x0 + w / 2)}" y="${fmt(oy + 20)}" text-anchor="middle" font-size="15" font-weight="bold" ${FONT}>${escapeXml(p.title)}</text>`);
  out.push(`<rect x="${fmt(x0)}" y="${fmt(y0)}" width="${fmt(w)}" height="${fmt(h)}" fill="white" stroke="#333" stroke-width="1"/>`);
  // Grid: minor lines faint, labelled ticks darker.
  for (const v of xa.minor) out.push(`<line class="grid" x1="${fmt(X(v))}" y1="${fmt(y0)}" x2="${fmt(X(v))}" y2="${fmt(y0 + h)}" stroke="#eee"/>`);
  for (const v of ya.minor) out.push(`<line class="grid" x1="${fmt(x0)}" y1="${fmt(Y(v))}" x2="${fmt(x0 + w)}" y2="${fmt(Y(v))}" stroke="#eee"/>`);
  for (const t of xa.ticks) {
    out.push(`<line class="grid" x1="${fmt(X(t.v))}" y1="${fmt(y0)}" x2="${fmt(X(t.v))}" y2="${fmt(y0 + h)}" stroke="#ccc"/>`);
    out.push(`<text class="xtick" x="${fmt(X(t.v))}" y="${fmt(y0 + h + 16)}" text-anchor="middle" font-size="11" ${FONT}>${escapeXml(t.label)}</text>`);
  }
  for (const t of ya.ticks) {
    out.push(`<line class="grid" x1="${fmt(x0)}" y1="${fmt(Y(t.v))}" x2="${fmt(x0 + w)}" y2="${fmt(Y(t.v))}" stroke="#ccc"/>`);
    out.push(`<text class="ytick" x="${fmt(x0 - 6)}" y="${fmt(Y(t.v) + 4)}" text-anchor="end" font-size="11" ${FONT}>${escapeXml(t.label)}</text>`);
  }
  out.push(`<text class="xlabel" x="${fmt(x0 + w / 2)}" y="${fmt(y0 + h + 38)}" text-anchor="middle" font-size="12" ${FONT}>${escapeXml(p.xLabel)} (log scale)</text>`);
  out.push(`<text class="ylabel" transform="translate(${fmt(ox + 18)},${fmt(y0 + h / 2)}) rotate(-90)" text-anchor="middle" font-size="12" ${FONT}>${escapeXml(p.yLabel)} (log scale)</text>`);
  if (pts.length === 0) {
    out.push(`<text x="${fmt(x0 + w / 2)}" y="${fmt(y0 + h / 2)}" text-anchor="middle" font-size="13" fill="#888" ${FONT}>no data</text>`);
  }
  for (const s of p.series) {
    const q = s.points.filter(usable).sort((a, b) => a[0] - b[0]);
    if (q.length === 0) continue;
    const colour = colours.get(s.name) ?? '#000';
    const d = q.map(([x, y], i) => `${i === 0 ? 'M' : 'L'}${fmt(X(x))},${fmt(Y(y))}`).join(' ');
    out.push(`<g class="series" data-name="${escapeXml(s.name)}">`);
    out.push(`<path d="${d}" fill="none" stroke="${colour}" stroke-width="2"${s.baseline ? ' stroke-dasharray="6,4"' : ''}/>`);
    for (const [x, y] of q) out.push(marker(X(x), Y(y), colour, s.baseline === true));
    out.push(`</g>`);
  }
  out.push(`</g>`);
  return out.join('\n');
}

/** Colours by series name, in first-seen order over the panels. */
function colourMap(panels: Panel[]): Map<string, { colour: string; baseline: boolean }> {
  const m = new Map<string, { colour: string; baseline: boolean }>();
  for (const p of panels) for (const s of p.series) if (!m.has(s.name)) m.set(s.name, { colour: PALETTE[m.size % PALETTE.length]!, baseline: s.baseline === true });
  return m;
}

/** An SVG document: panels two to a row, the title above, one legend below. */
export function plotSvg(panels: Panel[], opts: PlotOptions = {}): string {
  const cols = Math.min(2, Math.max(1, panels.length));
  const rows = Math.max(1, Math.ceil(panels.length / cols));
  const subtitle = opts.subtitle ?? [];
  const head = (opts.title ? 30 : 8) + subtitle.length * 16;
  const legend = colourMap(panels);
  const perLine = Math.max(1, Math.floor((cols * PANEL_W - 40) / 190));
  const legendH = 16 + Math.ceil(legend.size / perLine) * 20;
  const W = cols * PANEL_W;
  const H = head + rows * PANEL_H + legendH;
  const colours = new Map([...legend].map(([k, v]) => [k, v.colour]));
  const out: string[] = [];
  out.push('<?xml version="1.0" encoding="UTF-8"?>');
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`);
  out.push(`<title>${escapeXml(opts.title ?? panels.map((p) => p.title).join(', '))}</title>`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  if (opts.title) out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="17" font-weight="bold" ${FONT}>${escapeXml(opts.title)}</text>`);
  subtitle.forEach((l, i) => out.push(`<text x="${W / 2}" y="${(opts.title ? 40 : 14) + i * 16}" text-anchor="middle" font-size="12" fill="#444" ${FONT}>${escapeXml(l)}</text>`));
  panels.forEach((p, i) => out.push(panelSvg(p, (i % cols) * PANEL_W, head + Math.floor(i / cols) * PANEL_H, colours)));
  const ly = head + rows * PANEL_H + 8;
  out.push(`<g class="legend">`);
  [...legend].forEach(([name, { colour, baseline }], i) => {
    const x = 30 + (i % perLine) * 190;
    const y = ly + Math.floor(i / perLine) * 20 + 8;
    out.push(`<line x1="${x}" y1="${y}" x2="${x + 28}" y2="${y}" stroke="${colour}" stroke-width="2"${baseline ? ' stroke-dasharray="6,4"' : ''}/>`);
    out.push(marker(x + 14, y, colour, baseline));
    out.push(`<text x="${x + 36}" y="${y + 4}" font-size="12" ${FONT}>${escapeXml(name)}</text>`);
  });
  out.push(`</g>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** An HTML page: the SVG inline, then a table per panel of the plotted values. */
export function plotHtml(panels: Panel[], opts: PlotOptions = {}, extraHtml = ''): string {
  const svg = plotSvg(panels, opts).replace(/^<\?xml[^>]*>\n/, '');
  const tables = panels.map((p) => {
    const xs = [...new Set(p.series.flatMap((s) => s.points.map((q) => q[0])))].sort((a, b) => a - b);
    const head = `<tr><th>${escapeXml(p.xLabel)}</th>${p.series.map((s) => `<th>${escapeXml(s.name)}</th>`).join('')}</tr>`;
    const body = xs.map((x) => `<tr><td>${escapeXml(p.xKind === 'bytes' ? sizeLabel(x) : String(x))}</td>${p.series.map((s) => {
      const y = s.points.find((q) => q[0] === x)?.[1];
      return `<td>${y === undefined || !Number.isFinite(y) ? '-' : escapeXml(String(y))}</td>`;
    }).join('')}</tr>`).join('\n');
    return `<h2>${escapeXml(p.title)}: ${escapeXml(p.yLabel)}</h2>\n<table>\n${head}\n${body}\n</table>`;
  }).join('\n');
  const title = escapeXml(opts.title ?? 'railcomm bench');
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>${title}</title>
<style>body{font-family:Helvetica,Arial,sans-serif;margin:24px}table{border-collapse:collapse;margin-bottom:18px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}</style>
</head>
<body>
<h1>${title}</h1>
${(opts.subtitle ?? []).map((l) => `<p>${escapeXml(l)}</p>`).join('\n')}
${svg}
${extraHtml}
${tables}
</body>
</html>
`;
}
