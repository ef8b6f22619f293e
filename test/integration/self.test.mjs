// A world of one rank (plain node) sending itself messages larger than one
// active message on the self rail carries: they go by rendezvous in chunks,
// whatever the thresholds ask for, and arrive intact (test/jobs/self-large.mjs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { jobScript } from './jobs.mjs';

for (const [what, env] of [
  ['default thresholds', {}],
  ['eager limit, rendezvous threshold and chunk all above the self rail\'s limit', { RAILCOMM_EAGER_LIMIT: '64m', RAILCOMM_RNDV_THRESHOLD: '1g', RAILCOMM_RNDV_CHUNK: '64m' }],
]) {
  test(`messages to self of 3 MiB to 64 MiB arrive intact, in chunks of at most the self rail's limit (${what})`, () => {
    const r = spawnSync(process.execPath, [jobScript('self-large.mjs')], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /SELF-LARGE ok/);
  });
}
