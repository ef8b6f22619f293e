// What a thread rank's worker thread starts on when its TypeScript script runs
// through tsx (program.ts, threadScriptLoader): it registers tsx's ESM hooks in
// this thread (the host's `--import tsx` registers them in its main thread
// only, on the Node versions that need tsx, and hooks do not cross threads),
// then imports the script. The thread host passes the script and the file of
// tsx/esm/api ahead of the script's arguments; process.argv becomes
// [execPath, script, ...args] again, as in any rank. An empty tsx API: a .cts
// script, which the host runs with tsx's CommonJS hooks (--require tsx/cjs, a
// preload every worker thread runs too): it is require()d.

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const script = process.argv[2] ?? '';
const tsxApi = process.argv[3] ?? '';
process.argv.splice(1, 3, script);
if (tsxApi === '') {
  createRequire(script)(script);
} else {
  await importThroughTsx();
}

async function importThroughTsx(): Promise<void> {
  const { register } = (await import(pathToFileURL(tsxApi).href)) as { register?: () => unknown };
  if (typeof register !== 'function') throw new Error(`railcomm: ${tsxApi} (tsx/esm/api) has no register(); the thread rank cannot load TypeScript script ${script}`);
  register();
  await import(pathToFileURL(script).href);
}
