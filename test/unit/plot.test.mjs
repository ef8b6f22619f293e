// The bench pictures (src/cli/plot.ts, bench-panels.ts) and the report's
// arithmetic (bench-report.ts) from fixed data: well-formed SVG, log axes,
// one series per rail and baseline, medians and per-round ratios.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plotSvg, plotHtml, logAxis, sizeLabel, escapeXml } from '../../dist/cli/plot.js';
import { panelsFor, sideBySide, uniqueNames } from '../../dist/cli/bench-panels.js';
import { computeRows, markdownTable, median, fmtNum } from '../../dist/cli/bench-report.js';
import { ROWS } from '../../dist/cli/report-rows.js';

/**
 * Well-formedness of an XML document, enough for what plot.ts writes: every
 * tag closed in order, attributes quoted and unique, only the five entities,
 * no stray '<' or '&' in text. Returns the element names in document order.
 */
function checkXml(doc) {
  const names = [];
  const stack = [];
  let i = 0;
  const body = doc.replace(/^<\?xml [^?]*\?>\n?/, '');
  const text = (t) => {
    assert.ok(!/&(?!(amp|lt|gt|quot|apos);)/.test(t), `bare & in text: ${t.slice(0, 60)}`);
    assert.ok(!t.includes('>'), `stray > in text: ${t.slice(0, 60)}`);
  };
  while (i < body.length) {
    const lt = body.indexOf('<', i);
    if (lt < 0) { text(body.slice(i)); break; }
    text(body.slice(i, lt));
    const gt = body.indexOf('>', lt);
    assert.ok(gt > 0, 'unterminated tag');
    const tag = body.slice(lt + 1, gt);
    if (tag.startsWith('/')) {
      const name = tag.slice(1).trim();
      assert.equal(stack.pop(), name, `</${name}> closes the wrong element`);
    } else {
      const selfClosing = tag.endsWith('/');
      const m = /^([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*\/?$/.exec(tag);
      assert.ok(m, `malformed tag <${tag.slice(0, 80)}>`);
      const attrs = [...m[2].matchAll(/([\w:.-]+)="([^"]*)"/g)];
      assert.equal(new Set(attrs.map((a) => a[1])).size, attrs.length, `repeated attribute in <${m[1]}>`);
      for (const a of attrs) text(a[2]);
      names.push(m[1]);
      if (!selfClosing) stack.push(m[1]);
    }
    i = gt + 1;
  }
  assert.deepEqual(stack, [], 'unclosed elements');
  assert.equal(names[0], 'svg');
  return names;
}

/** A fixed run: two rails and two baselines, latency and bandwidth. */
const lat = (rails, f) => ({ benchmark: 'latency', rails, ranks: 2, results: [8, 1024, 65536, 1048576].map((size) => ({ size, usec: f(size) * 1.2, usec_median: f(size) })) });
const bw = (rails, f) => ({ benchmark: 'bw', rails, ranks: 2, results: [1024, 65536, 1048576, 4194304].map((size) => ({ size, mbps: f(size) })) });
const RESULTS = [
  { name: 'railcomm shm', baseline: false, json: lat('shm', (s) => 0.2 + s / 20000) },
  { name: 'railcomm tcp', baseline: false, json: lat('tcp', (s) => 8 + s / 3000) },
  { name: 'ompi-vader', baseline: true, json: lat('ompi-vader', (s) => 0.13 + s / 13000) },
  { name: 'railcomm shm', baseline: false, json: bw('shm', (s) => Math.min(24000, s / 10)) },
  { name: 'railcomm tcp', baseline: false, json: bw('tcp', (s) => Math.min(3500, s / 50)) },
  { name: 'ompi-vader', baseline: true, json: bw('ompi-vader', (s) => Math.min(13000, s / 12)) },
  { name: 'raw-node-tcp', baseline: true, json: { benchmark: 'latency', rails: 'raw-node-tcp', ranks: 2, results: [{ size: 0, usec: 15, usec_median: 14 }, { size: 8, usec: 16, usec_median: 15 }] } },
];

/** The series groups of an SVG, per panel: [[name, path d], ...]. */
function seriesOf(svg) {
  return svg.split('<g class="panel">').slice(1).map((panel) => [...panel.matchAll(/<g class="series" data-name="([^"]*)">\n<path d="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}
const coords = (d) => d.split(' ').map((p) => p.slice(1).split(',').map(Number));

test('plotSvg: a well-formed SVG, a panel per measure, one series per rail and baseline', () => {
  const panels = panelsFor(RESULTS);
  assert.deepEqual(panels.map((p) => p.title), ['Latency (half round trip)', 'Bandwidth (windows of 64 messages)']);
  const svg = plotSvg(panels, { title: 'fixed <data> & co', subtitle: ['commit abc'] });
  const names = checkXml(svg);
  assert.ok(names.includes('title') && names.includes('path'));
  assert.match(svg, /<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="\d+" height="\d+" viewBox="0 0 \d+ \d+">/);
  assert.ok(svg.includes('fixed &lt;data&gt; &amp; co'), 'the title is escaped');
  const series = seriesOf(svg);
  assert.deepEqual(series.map((s) => s.map(([n]) => n)), [['railcomm shm', 'railcomm tcp', 'ompi-vader', 'raw-node-tcp'], ['railcomm shm', 'railcomm tcp', 'ompi-vader']]);
  // Baselines dashed, rails solid; a name keeps its colour in both panels.
  const style = (name) => [...svg.matchAll(new RegExp(`data-name="${name}">\\n<path d="[^"]*" fill="none" stroke="([^"]+)" stroke-width="2"( stroke-dasharray="6,4")?`, 'g'))].map((m) => [m[1], Boolean(m[2])]);
  assert.deepEqual(style('ompi-vader'), [[style('ompi-vader')[0][0], true], [style('ompi-vader')[0][0], true]]);
  assert.equal(style('railcomm shm')[0][1], false);
  assert.notEqual(style('railcomm shm')[0][0], style('railcomm tcp')[0][0]);
  // The legend names each series once.
  const legend = svg.slice(svg.indexOf('<g class="legend">'));
  for (const n of ['railcomm shm', 'railcomm tcp', 'ompi-vader', 'raw-node-tcp']) assert.equal(legend.split(`>${n}</text>`).length, 2, n);
});

test('plotSvg: log-log axes: sizes a constant factor apart sit equally apart, and y grows upward', () => {
  const svg = plotSvg(panelsFor(RESULTS));
  const [latency] = seriesOf(svg);
  const shm = coords(latency.find(([n]) => n === 'railcomm shm')[1]);
  assert.equal(shm.length, 4);
  // 8 -> 1024 -> 65536 -> 1048576: factors 2^7, 2^6, 2^4.
  const dx = shm.slice(1).map((p, i) => p[0] - shm[i][0]);
  assert.ok(Math.abs(dx[0] / 7 - dx[1] / 6) < 0.2 && Math.abs(dx[1] / 6 - dx[2] / 4) < 0.2, `x is not log2-linear: ${dx}`);
  assert.ok(shm.every((p, i) => i === 0 || p[1] < shm[i - 1][1]), 'larger latencies are higher up');
  // Size 0 cannot sit on a log axis: raw-node-tcp keeps only its 8-byte point.
  assert.equal(coords(latency.find(([n]) => n === 'raw-node-tcp')[1]).length, 1);
  // Tick labels: sizes on x, decades on y.
  const xt = [...svg.matchAll(/class="xtick"[^>]*>([^<]*)</g)].map((m) => m[1]);
  const yt = [...svg.matchAll(/class="ytick"[^>]*>([^<]*)</g)].map((m) => m[1]);
  assert.ok(xt.includes('8 B') || xt.includes('4 B'), xt.join(','));
  assert.ok(xt.some((t) => t.endsWith('MiB')), xt.join(','));
  assert.ok(yt.includes('1') && yt.includes('10') && yt.includes('1k'), yt.join(','));
  assert.match(svg, /class="xlabel"[^>]*>message size \(log scale\)</);
  assert.match(svg, /class="ylabel"[^>]*>microseconds, median \(log scale\)</);
});

test('logAxis and labels', () => {
  const a = logAxis(8, 4194304, 'bytes');
  assert.ok(a.lo <= 8 && a.hi >= 4194304);
  assert.ok(a.ticks.length >= 3 && a.ticks.length <= 9, String(a.ticks.length));
  const d = logAxis(0.15, 70, 'plain');
  assert.deepEqual([d.lo, d.hi], [0.1, 100]);
  assert.deepEqual(d.ticks.map((t) => t.label), ['0.1', '1', '10', '100']);
  // Over one or two decades 2x and 5x are labelled too.
  assert.deepEqual(logAxis(5, 5, 'plain').ticks.map((t) => t.label), ['1', '2', '5', '10'], 'one value still gets an axis');
  assert.deepEqual(logAxis(10, 10, 'plain').ticks.map((t) => t.label), ['1', '2', '5', '10', '20', '50', '100'], 'also one on a decade');
  assert.deepEqual(logAxis(1200, 9000, 'plain').ticks.map((t) => t.label), ['1k', '2k', '5k', '10k']);
  assert.deepEqual([0, 8, 1024, 65536, 1048576, 3000].map(sizeLabel), ['0 B', '8 B', '1 KiB', '64 KiB', '1 MiB', '3000 B']);
  assert.equal(escapeXml('a<b>&"c"'), 'a&lt;b&gt;&amp;&quot;c&quot;');
});

test('plotSvg: an empty panel says so and stays well-formed; plotHtml wraps the SVG and the numbers', () => {
  checkXml(plotSvg([{ title: 'nothing', xLabel: 'x', yLabel: 'y', series: [{ name: 'a', points: [[0, 1]] }] }]));
  assert.match(plotSvg([{ title: 'nothing', xLabel: 'x', yLabel: 'y', series: [] }]), />no data</);
  const html = plotHtml(panelsFor(RESULTS), { title: 'T' });
  assert.match(html, /^<!doctype html>/);
  assert.ok(html.includes('<svg ') && !html.includes('<?xml'));
  assert.match(html, /<th>message size<\/th><th>railcomm shm<\/th><th>railcomm tcp<\/th><th>ompi-vader<\/th>/);
  assert.match(html, /<td>64 KiB<\/td>/);
});

test('panelsFor: collectives and one-sided get panels of their own; atomic and wireup none; names made unique', () => {
  const panels = panelsFor([
    { name: 'railcomm shm', baseline: false, json: { benchmark: 'allreduce', rails: 'shm', ranks: 4, results: [{ size: 8, usec: 1 }, { size: 64, usec: 2 }] } },
    { name: 'railcomm shm', baseline: false, json: { benchmark: 'put', rails: 'shm', ranks: 2, results: [{ size: 8, usec: 0.1, usec_median: 0.05, mbps: 100 }] } },
    { name: 'railcomm shm', baseline: false, json: { benchmark: 'atomic', rails: 'shm', ranks: 2, results: [{ op: 'fetch-add', size: 8, usec: 0.1 }] } },
  ]);
  assert.deepEqual(panels.map((p) => p.title), ['allreduce, 4 ranks', 'put latency (completed at the target)', 'put bandwidth (windows of 64)']);
  const u = uniqueNames([RESULTS[1], RESULTS[1], RESULTS[4]]);
  assert.deepEqual(u.map((r) => r.name), ['railcomm tcp', 'railcomm tcp #2', 'railcomm tcp']);
  const table = sideBySide(RESULTS.slice(0, 3));
  assert.match(table, /^# latency: microseconds, median, side by side\n\s+size\s+railcomm shm\s+railcomm tcp\s+ompi-vader\n\s+8\s+0\.2004/);
});

test('report: medians over rounds, means, ranges and per-round ratios', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 2, 3]), 2.5);
  assert.ok(Number.isNaN(median([NaN])));
  assert.deepEqual([0.021, 0.5, 1.234, 12.34, 2600.4, NaN].map(fmtNum), ['0.021', '0.5', '1.23', '12.3', '2600', '-']);
  const line = (usec_median, usec) => [{ benchmark: 'latency', rails: 'tcp', results: [{ size: 8, usec_median, usec }] }];
  const data = {
    'rc-tcp-lat': [line(8, 9), line(10, 12), line(9, 30)],
    'ompi-tcp-lat': [line(4, 5), line(5, 5), line(6, 6)],
    'raw-tcp-lat': [line(16, 17), [], line(18, 19)],
  };
  const rows = computeRows(ROWS.filter((r) => r.group === 'tcp'), data, 3);
  // Only the rows whose railcomm measure ran; the bandwidth rows have none here.
  const first = rows.find((r) => r.row.label.startsWith('8 B half round trip, processes over tcp (us, median)'));
  assert.equal(first.railcomm.median, 9);
  assert.equal(first.railcomm.mean, 9);
  assert.deepEqual([first.railcomm.min, first.railcomm.max], [8, 10]);
  assert.equal(first.openmpi.median, 5);
  assert.equal(first.ratioOpenmpi, 2, 'ratios 2, 2, 1.5: median 2');
  assert.equal(first.raw.median, 17, 'a failed round is left out');
  const md = markdownTable(rows);
  assert.match(md, /^\| figure \| railcomm median \| mean \| range \| Open MPI median/);
  assert.match(md, /\| 8 B half round trip, processes over tcp \(us, median\) \| 9\.00 \| 9\.00 \| 8\.00-10\.0 \| 5\.00 \| 5\.00 \| 4\.00-6\.00 \| 17\.0 \| 17\.0 \| 16\.0-18\.0 \| 2\.00x \| 0\.50x \|/);
  assert.ok(!md.includes('| 1 MiB bandwidth, tcp'), 'rows of measures that were not run are left out');
});
