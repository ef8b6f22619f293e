// What `npm test` runs after the build: the whole suite, or with
// RAILCOMM_TEST_SUBSET=fast the part that differs between Node versions (the
// native addon and its loading, shared memory, worker-thread ranks, PMIx,
// the launcher's V8 flags, the packed install) plus every unit test. CI runs
// the whole suite on two Node versions and the fast part on the others
// (.ci/run). Extra arguments go to node --test.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

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
/**
 * The test files under each entry (a file, or a folder searched for *.test.mjs):
 * Node 20 takes folders after --test, but from Node 22 the arguments are glob
 * patterns and a folder is run as if it were a file (MODULE_NOT_FOUND).
 */
function testFiles(entries) {
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.test\.[cm]?js$/.test(e.name)) out.push(p);
    }
  };
  for (const entry of entries) {
    if (statSync(entry).isDirectory()) walk(entry);
    else out.push(entry);
  }
  return out;
}

const files = testFiles(subset === 'fast' ? FAST : FULL);
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...process.argv.slice(2), ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
