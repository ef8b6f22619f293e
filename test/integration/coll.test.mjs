// Collectives and communicators in real jobs of 1 to 7 ranks over tcp, the
// examples (the heat solver's field must not depend on the rank count), and
// a rank dying during collectives.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { railcomm, jobScript, caseResults, linesWith } from './jobs.mjs';

for (let p = 1; p <= 7; p++) {
  test(`collectives and communicators on ${p} rank${p > 1 ? 's' : ''}`, async () => {
    const job = await railcomm(['run', '-n', String(p), '--rails', 'tcp', '--timeout', '200', jobScript('coll-suite.mjs')], { limitMs: 230_000 });
    const res = caseResults(job.stdout);
    assert.ok(res.size >= 7, `cases reported: ${[...res.keys()].join(', ')}\n${job.stderr.slice(-2000)}`);
    for (const [name, byRank] of res) for (let r = 0; r < p; r++) assert.equal(byRank.get(r), 'ok', `${name}, rank ${r}: ${byRank.get(r)}`);
    assert.equal(job.code, 0, job.stderr.slice(-2000));
  });
}

test('examples/heat.js: the same field on 1 and 5 ranks, bit for bit', async () => {
  const hashes = [];
  for (const p of [1, 5]) {
    const job = await railcomm(['run', '-n', String(p), '--timeout', '120', 'examples/heat.js', '48', '1e-3'], { limitMs: 150_000 });
    assert.equal(job.code, 0, job.stderr);
    const m = /field sha256 ([0-9a-f]+)/.exec(job.stdout);
    assert.ok(m, job.stdout);
    hashes.push(m[1]);
  }
  assert.equal(hashes[0], hashes[1]);
});

test('examples/pi.js estimates pi', async () => {
  const job = await railcomm(['run', '-n', '3', '--timeout', '60', 'examples/pi.js', '100000'], { limitMs: 90_000 });
  assert.equal(job.code, 0, job.stderr);
  assert.match(job.stdout, /^\[0\] pi ~ 3\.14159265\d+ with 100000 intervals on 3 ranks/m);
});

test('a rank that dies during collectives fails them on every survivor, no hang', async () => {
  const job = await railcomm(['run', '-n', '4', '--timeout', '60', jobScript('coll-peer-exit.mjs')], { limitMs: 90_000 });
  assert.equal(job.code, 4);
  const results = linesWith(job.stdout, 'RESULT');
  for (const r of [0, 1, 3]) {
    const line = results.find((l) => l.rank === r && l.rest.startsWith('collective:'));
    assert.ok(line, `rank ${r} reported nothing:\n${job.stdout}\n${job.stderr}`);
    assert.match(line.rest, /^collective: ERR_PEER_FAILED after \d+ ms$/);
  }
  assert.ok(results.some((l) => l.rank === 1 && l.rest === 'survivors talk: ok'), job.stdout);
});
