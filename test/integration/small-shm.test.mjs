// A send that resolved is delivered or its peer failed loudly (issue
// "Hardening"): 4 ranks in a mount namespace whose /dev/shm is a small tmpfs.
// Too small for the rings up front: the shm rail is not used (with a warning)
// and the job completes over tcp. Big enough up front, full later: every rank
// ends with a clear error or completes; nothing hangs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { railcomm, jobScript, linesWith } from './jobs.mjs';
import { need, needAll, needAddon, notRoot } from '../helpers/requires.mjs';

const probe = spawnSync('unshare', ['--mount', 'sh', '-c', 'mount -t tmpfs -o size=1m tmpfs /dev/shm'], { encoding: 'utf8' });
const mountns = needAll(needAddon(), need('mountns', notRoot() ?? (probe.status !== 0 ? `unshare --mount with a tmpfs failed: ${probe.stderr.trim()}` : null)));

/** railcomm run inside a mount namespace whose /dev/shm is a tmpfs of `size`. */
function inSmallShm(size, args, env = {}) {
  return railcomm(args, { env, limitMs: 60_000, wrap: ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs -o size=${size} tmpfs /dev/shm && exec "$@"`, 'sh'] });
}

test('a /dev/shm too small for the rings: shm is not used, with a warning, and the job completes over tcp', mountns, async () => {
  const job = await inSmallShm('1m', ['run', '-n', '4', '--timeout', '40', jobScript('small-shm.mjs')]);
  assert.equal(job.code, 0, job.stdout + job.stderr);
  assert.deepEqual(linesWith(job.stdout, 'RESULT').map((l) => l.rest), ['done', 'done', 'done', 'done']);
  assert.match(job.stderr, /shm rail not used: \/dev\/shm has 1\.0 MiB free, and rings to 3 peers need/);
});

test('a /dev/shm that fills up after the start: every rank completes or fails saying why, none hangs', mountns, async () => {
  const job = await inSmallShm('1200k', ['run', '-n', '4', '--timeout', '40', jobScript('small-shm.mjs')], { RAILCOMM_SHM_RING: '256k' });
  assert.notEqual(job.code, 124, 'the job hung until --timeout');
  const results = linesWith(job.stdout, 'RESULT');
  assert.equal(results.length, 4, job.stdout + job.stderr);
  // (A rank whose peers left after failing may also find them gone: any clear error will do.)
  for (const { rest } of results) assert.match(rest, /^(done|ERR_PEER_FAILED|ERR_NO_RAIL)/);
  assert.ok(results.some((r) => r.rest !== 'done'), 'the rings did not fit: someone must have failed');
});
