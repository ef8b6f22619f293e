// What `npm test` runs after the build: the whole suite, or with
// RAILCOMM_TEST_SUBSET=fast the part that differs between Node versions (the
// native addon and its loading, shared memory, worker-thread ranks, PMIx,
// the launcher's V8 flags, the packed install) plus every unit test. CI runs
// the whole suite on two Node versions and the fast part on the others
// (.ci/run). Extra arguments go to node --test.
import { spawnSync } from 'node:child_process';

// test/gpu/ needs a GPU: elsewhere each test is skipped, saying why (helpers/requires.mjs, part 'cuda').
const FULL = ['test/unit/', 'test/rails/', 'test/integration/', 'test/gpu/'];
const FAST = [
  'test/unit/',
  'test/integration/install.test.mjs',
  'test/integration/shm.test.mjs',
  'test/integration/coll-shared.test.mjs',
  'test/integration/rma.test.mjs',
  'test/integration/threads.test.mjs',
  'test/integration/launcher.test.mjs',
  'test/integration/launchers.test.mjs',
  'test/integration/p2p.test.mjs',
];

const subset = process.env.RAILCOMM_TEST_SUBSET ?? '';
if (subset !== '' && subset !== 'fast' && subset !== 'full') {
  console.error(`RAILCOMM_TEST_SUBSET=${subset}: use fast, or full (the default)`);
  process.exit(2);
}
const files = subset === 'fast' ? FAST : FULL;
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...process.argv.slice(2), ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
