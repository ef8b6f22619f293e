// StrykerJS on railcomm's pure-logic modules (scores in test/MUTATION.md). It
// mutates the built JavaScript in dist/ (the tests import dist/, and a tsc run
// per mutant would cost seconds each), one module at a time:
//   npm run build && MUTATE=hotel npm run mutation     (MUTATE unset: every module, hours)
// Each module names the unit tests that may cover it; Stryker runs, per mutant,
// only the files whose run touched it (coverage per test file).

const unit = (...names) => names.map((n) => `test/unit/${n}.test.mjs`);

/** Module -> the dist files it mutates and the unit tests that cover it. */
export const MODULES = {
  matching: { mutate: ['dist/proto/matching.js'], tests: unit('matching', 'request') },
  reorder: { mutate: ['dist/proto/reorder.js'], tests: unit('reorder') },
  seq: { mutate: ['dist/core/seq.js'], tests: unit('seq', 'reorder', 'udp-session', 'udp-session-contract', 'udp-quiet-loss') },
  hotel: { mutate: ['dist/core/hotel.js'], tests: unit('hotel', 'udp-session', 'udp-session-contract', 'udp-quiet-loss') },
  'proto-wire': { mutate: ['dist/proto/wire.js'], tests: unit('proto-wire', 'ipc') },
  'udp-wire': { mutate: ['dist/rail/udp/wire.js', 'dist/rail/udp/checksum.js'], tests: unit('udp-wire', 'udp-reassembly', 'udp-session', 'udp-session-contract', 'udp-quiet-loss') },
  'tcp-wire': { mutate: ['dist/rail/tcp/wire.js'], tests: unit('tcp-wire', 'tcp-reader') },
  'kv-wire': { mutate: ['dist/boot/kv-wire.js'], tests: unit('kv-wire', 'kv') },
  kernels: { mutate: ['dist/native/kernels.js'], tests: unit('reduce-model', 'coll-kernels') },
  'udp-session': { mutate: ['dist/rail/udp/session.js'], tests: unit('udp-session', 'udp-session-contract', 'udp-session-recovery', 'udp-quiet-loss') },
  ipc: { mutate: ['dist/proto/ipc.js', 'dist/proto/ipc-wire.js'], tests: unit('ipc') },
};

const wanted = process.env.MUTATE ? process.env.MUTATE.split(',') : Object.keys(MODULES);
for (const m of wanted) if (!(m in MODULES)) throw new Error(`MUTATE=${m}: not one of ${Object.keys(MODULES).join(', ')}`);
const name = wanted.join('+');

export default {
  mutate: wanted.flatMap((m) => MODULES[m].mutate),
  testRunner: 'tap',
  tap: {
    testFiles: [...new Set(wanted.flatMap((m) => MODULES[m].tests))],
    // The globals shim lets code a module compiles with new Function (the reduction kernels) see Stryker's helpers.
    nodeArgs: ['--test-reporter=tap', '-r', '{{hookFile}}', '-r', './test/mutation/stryker-globals.cjs', '{{testFile}}'],
  },
  coverageAnalysis: 'perTest',
  // The machine's cores are shared: one test process at a time.
  concurrency: 1,
  timeoutMS: 10000,
  ignorePatterns: ['bench', 'examples', 'tmp', 'reports', 'native/build-log.txt', 'native/pmix/build-log.txt'],
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  clearTextReporter: { allowColor: false, logTests: false, maxTestsToLog: 0 },
  thresholds: { high: 90, low: 75, break: null },
  cleanTempDir: 'always',
};
