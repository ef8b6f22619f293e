// What a thread rank's worker thread starts on when its TypeScript script runs
// through tsx (program.ts, threadScriptLoader): it registers tsx's ESM hooks in
// this thread (the host's `--import tsx` registers them in its main thread
// only, on the Node versions that need tsx, and hooks do not cross threads),
// then imports the script. The thread host passes the script and the file of
// tsx/esm/api ahead of the script's arguments; process.argv becomes
// [execPath, script, ...args] again, as in any rank.

import { pathToFileURL } from 'node:url';

const script = process.argv[2] ?? '';
const tsxApi = process.argv[3] ?? '';
process.argv.splice(1, 3, script);
const { register } = (await import(pathToFileURL(tsxApi).href)) as { register?: () => unknown };
if (typeof register !== 'function') throw new Error(`railcomm: ${tsxApi} (tsx/esm/api) has no register(); the thread rank cannot load TypeScript script ${script}`);
register();
await import(pathToFileURL(script).href);
