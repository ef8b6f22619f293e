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

// The sender's live memory is RAILCOMM_SEND_BUFFER's copies, but its RSS is
// what V8 lets garbage grow to around them: each held copy is promoted (it
// lives ~0.5 s) and dies in old space, and V8 12 and later (Node 22+) wait
// longer before a major GC the more is live. With the old default of 32 MiB
// (~72,000 copies of 64 B) Node 24 peaked at 451-493 MB; at 8 MiB, 262-293 MB,
// Node 20 158-161, 22 166-174, 26 219-230, and the flood drains 1.4-1.7x
// sooner (bench/RESULTS.md, "The flood sender's memory").
test('1,000,000 small messages to a rank that waits 3 s: the sender stays under 400 MB', async () => {
  const r = await flood(1_000_000, 3000);
  assert.ok(r.rss < 400, `sender peak RSS ${r.rss} MB`);
});

test('draining is linear: twice the messages take about twice the time (not 4x)', async () => {
  const a = await flood(100_000, 1000);
  const b = await flood(200_000, 1000);
  // Generous for a shared machine; quadratic draining measured 10x (25 s -> 220 s for 50k -> 200k).
  assert.ok(b.ms < 3.5 * Math.max(a.ms, 200), `100k drained in ${a.ms} ms, 200k in ${b.ms} ms`);
});
