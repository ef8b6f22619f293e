// The shm rail's own behaviours, beside the conformance suite it passes
// (conformance*.test.mjs): its segments' lifetime in /dev/shm, a ring that
// is not railcomm's, and a peer whose process is gone.

import assert from 'node:assert/strict';
import { loadNative, shmJobPrefix } from '../../dist/native/addon.js';
import { existsSync, readdirSync } from 'node:fs';
import { resolveParams } from '../../dist/core/params.js';
import { endpointId } from '../../dist/core/ids.js';
import { PEER_GONE_MS, MARGIN_MS, within } from '../helpers/promises.mjs';
import { forRail, railNamed, JOB, KEY, AM_MSG, hdrOf, fill } from './harness.mjs';

const R = railNamed('shm');
const { test } = forRail(R);

test('shm: segments are unlinked once both sides mapped them, and nothing is left after close', async () => {
  const pair = await R.open(resolveParams());
  const ab = pair.epAB();
  const ba = pair.epBA();
  ab.sendCopy(AM_MSG, hdrOf(0), 8, null);
  ba.sendCopy(AM_MSG, hdrOf(0), 8, null);
  await pair.b.until(() => pair.b.got.length === 1, 'a -> b');
  await pair.a.until(() => pair.a.got.length === 1, 'b -> a');
  const mine = () => readdirSync('/dev/shm').filter((n) => n.startsWith(shmJobPrefix(JOB, KEY)));
  // Both rings mapped by both sides: only the inboxes may remain (no hostPeers given here).
  assert.deepEqual(mine().filter((n) => !n.endsWith('-in')), []);
  await pair.close();
  assert.deepEqual(mine(), []);
});

test('shm: a ring with a bad magic or version fails that peer, not the rail', async () => {
  const native = loadNative();
  const pair = await R.open(resolveParams());
  try {
    // A rank 5 that writes garbage: announce a ring whose header is not railcomm's.
    const bogus = native.shmCreate(`${shmJobPrefix(JOB, KEY)}5-1`, 128 + 65536);
    new Int32Array(bogus)[28] = 0x12345678;
    const inbox = new Int32Array(native.shmOpen(`${shmJobPrefix(JOB, KEY)}1-in`));
    const slot = Atomics.add(inbox, 19, 1);
    Atomics.store(inbox, 32 + slot, 5 + 1);
    await pair.b.until(() => pair.b.failed.length === 1, 'the bad peer fails');
    assert.equal(pair.b.failed[0].peer, endpointId(JOB, 5));
    assert.equal(pair.b.failed[0].graceful, false);
    assert.match(pair.b.messages[0], /magic 0x12345678/);
    assert.ok(!existsSync(`/dev/shm/${shmJobPrefix(JOB, KEY)}5-1`), 'the bad ring was unlinked');
    // The good peer still talks.
    pair.epAB().sendCopy(AM_MSG, hdrOf(7), 8, fill(100, 7));
    await pair.b.until(() => pair.b.got.length === 1, 'a -> b after the bad peer');
  } finally { await pair.close(); }
});

test('shm: a peer whose process is gone fails within a second', async () => {
  const params = resolveParams();
  const pair = await R.open(params);
  try {
    const { spawnSync } = await import('node:child_process');
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const pid = Number(dead.stdout);
    // b's inbox, reached under a dead process's pid.
    const addr = pair.b.rail.address().replace(`;${process.pid};`, `;${pid};`);
    const ep = pair.a.rail.endpoint(endpointId(JOB, 1), addr);
    ep.sendCopy(AM_MSG, hdrOf(0), 8, null);
    const t0 = Date.now();
    await pair.a.until(() => pair.a.failed.length === 1, 'the dead peer fails', 5000);
    // README: a rank whose process vanished fails the requests on it within a second.
    const ms = Date.now() - t0;
    assert.ok(ms < within(PEER_GONE_MS), `took ${ms} ms, README promises ${PEER_GONE_MS} (+${MARGIN_MS} margin)`);
    assert.match(pair.a.messages[0], new RegExp(`process ${pid} is gone`));
  } finally { await pair.close(); }
});

