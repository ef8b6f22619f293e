// Bounded sender memory (issue "Hardening"): a rank that floods a rank which
// does not receive for seconds keeps a bounded memory (RAILCOMM_SEND_BUFFER
// copies, then its sends wait), and the flood drains in time linear in the
// number of messages (small announcements are fetched ahead, not one round
// trip each). Over tcp, whose socket buffers are the smallest bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, linesWith } from './jobs.mjs';

async function flood(n, sleepMs) {
  const job = await railcomm(['run', '-n', '2', '--rails', 'tcp', '--timeout', '120', jobScript('flood.mjs'), String(n), String(sleepMs)], { limitMs: 150_000 });
  assert.equal(job.code, 0, job.stdout + job.stderr);
  const out = linesWith(job.stdout, 'RESULT').map((l) => l.rest).join('\n');
  const drained = /drained \d+ in (\d+) ms, (\d+) out of order/.exec(out);
  const rss = /sender peak rss (\d+) MB/.exec(out);
  assert.ok(drained && rss, out);
  assert.equal(Number(drained[2]), 0, 'every message in order');
  return { ms: Number(drained[1]), rss: Number(rss[1]) };
}

// A known gap, reported on every run until it is fixed (not a pass): the sender's live memory is
// bounded (30-60 MB after a full GC: RAILCOMM_SEND_BUFFER's copies), but V8 12 and later let
// old-space garbage grow further before a major GC. Node 24, `--trace-gc`: no mark-compact from
// 0.85 s to 5.5 s while old space grows from 60 to 250 MB, then 254 -> 30 MB; each held copy is
// promoted (it lives ~0.5 s) and dies there. Since the copies count their heap cost (400 bytes,
// not 256) and Request lost 7 fields (e3085f4), A/B on one machine, old / new: Node 20 393, 328 /
// 271, 272 MB; 22 451 / 328, 392; 24 554, 509 / 467, 472; 26 565 / 371, 436 (bench/RESULTS.md).
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
const rssGap = NODE_MAJOR >= 22 ? 'Node 22+: the sender peaks above 400 MB RSS by default (garbage, not live data; see the test comment)' : false;

test('1,000,000 small messages to a rank that waits 3 s: the sender stays under 400 MB', { todo: rssGap }, async () => {
  const r = await flood(1_000_000, 3000);
  assert.ok(r.rss < 400, `sender peak RSS ${r.rss} MB`);
});

test('draining is linear: twice the messages take about twice the time (not 4x)', async () => {
  const a = await flood(100_000, 1000);
  const b = await flood(200_000, 1000);
  // Generous for a shared machine; quadratic draining measured 10x (25 s -> 220 s for 50k -> 200k).
  assert.ok(b.ms < 3.5 * Math.max(a.ms, 200), `100k drained in ${a.ms} ms, 200k in ${b.ms} ms`);
});
