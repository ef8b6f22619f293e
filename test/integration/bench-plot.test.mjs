// railcomm bench as a user meets it: progress on stderr while it runs (never in
// --json's stdout), a job per --rails, a raw Node baseline with --compare, the
// picture --plot writes; a one-row --report; and railcomm run --stats's table.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { railcomm } from './jobs.mjs';
import { needAddon } from '../helpers/requires.mjs';

test('railcomm bench: a job per --rails, --compare, progress on stderr, --plot writes an SVG with a line each', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'railcomm-plot-'));
  try {
    const svgPath = join(dir, 'lat.svg');
    const r = await railcomm(['bench', 'latency', '--rails', 'tcp', '--rails', 'udp', '--sizes', '8,1024', '--iters', '5',
      '--compare=raw-node-tcp', '--plot', svgPath, '--json'], { limitMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    // stdout: only the JSON lines, one per job and one for the baseline, in order.
    const lines = r.stdout.trim().split('\n');
    const json = lines.map((l) => JSON.parse(l));
    assert.deepEqual(json.map((j) => j.rails), ['tcp', 'udp', 'raw-node-tcp']);
    for (const j of json) assert.deepEqual(j.results.map((x) => x.size), [8, 1024]);
    // stderr: a line per size as it finishes, and per job.
    assert.match(r.stderr, /^railcomm bench: latency --rails tcp, 2 ranks: 8 B: [\d.]+ us \(1\/2, [\d.]+ s\)$/m);
    assert.match(r.stderr, /^railcomm bench: latency --rails udp, 2 ranks: 1 KiB: [\d.]+ us \(2\/2, [\d.]+ s\)$/m);
    assert.match(r.stderr, /^railcomm bench: latency, baseline raw-node-tcp: done in [\d.]+ s$/m);
    assert.ok(!r.stdout.includes('railcomm bench:'), 'no progress on stdout');
    const svg = readFileSync(svgPath, 'utf8');
    assert.match(svg, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.ok(svg.trimEnd().endsWith('</svg>'));
    assert.deepEqual([...svg.matchAll(/<g class="series" data-name="([^"]+)">/g)].map((m) => m[1]), ['railcomm tcp', 'railcomm udp', 'raw-node-tcp']);
    assert.match(svg, /data-name="raw-node-tcp">\n<path d="M[\d.]+,[\d.]+ L[\d.]+,[\d.]+" fill="none" stroke="#[0-9A-F]{6}" stroke-width="2" stroke-dasharray/);
    assert.match(svg, />Latency \(half round trip\)</);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('railcomm run --stats prints a table per rank at finalize', async () => {
  const r = await railcomm(['run', '-n', '2', '--rails', 'tcp', '--stats', '--timeout', '60', 'examples/ring.js'], { limitMs: 90_000 });
  assert.equal(r.code, 0, r.stderr);
  for (const rank of [0, 1]) {
    const mine = r.stderr.split('\n').filter((l) => l.startsWith(`[${rank}] `)).map((l) => l.slice(`[${rank}] `.length));
    const at = mine.indexOf(`railcomm stats, rank ${rank}`);
    assert.ok(at >= 0, r.stderr);
    assert.match(mine[at + 1], /^rails\s+tcp:lo$/);
    assert.ok(Number(/^ {2}msgsSent\s+(\d+)$/.exec(mine[at + 2])?.[1]) >= 1, mine.join('\n'));
    assert.ok(mine.some((l) => /^peers\s+\d$/.test(l)), r.stderr);
    assert.ok(!r.stderr.includes('railcomm stats {'), 'the JSON line only with --stats=json');
  }
});

// The idle row: a 1 s wait (--quick) over shm, the cheapest row with nothing spinning.
test('railcomm bench --report writes the table, its JSON and an SVG, stating commit and machine', needAddon(), async () => {
  const dir = mkdtempSync(join(tmpdir(), 'railcomm-report-'));
  try {
    const out = join(dir, 'r');
    const r = await railcomm(['bench', '--report', '--rounds', '1', '--quick', '--only', 'idle', '--no-mpi', '--quiet', '--out', out], { limitMs: 90_000 });
    assert.equal(r.code, 0, r.stderr);
    const md = readFileSync(`${out}.md`, 'utf8');
    const json = JSON.parse(readFileSync(`${out}.json`, 'utf8'));
    const head = spawnSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
    assert.equal(json.commit, head || json.commit);
    assert.match(md, new RegExp(`^Commit ${json.commit.slice(0, 12)} `, 'm'));
    assert.match(md, /^Machine: nproc \d+, .+; Node v\d+/m);
    assert.match(md, /^\| CPU of a rank waiting in recv, shm \(% of a core\) \| [\d.]+ \|/m);
    assert.equal(json.rounds, 1);
    assert.equal(json.runs['rc-idle'].length, 1);
    assert.equal(json.runs['rc-idle'][0][0].results[0].benchmark, 'idle-cpu');
    assert.ok(r.stdout.startsWith('# railcomm performance report'));
    assert.match(readFileSync(`${out}.svg`, 'utf8'), /^<\?xml/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
