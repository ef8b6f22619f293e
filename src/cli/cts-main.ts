// What a rank process starts on when its script is CommonJS TypeScript (.cts)
// that this node runs with tsx's CommonJS hooks (program.ts, typeScriptFlags):
// the script is require()d from here, so that Node's CommonJS loader runs it
// even where Node would take the script itself for an ES module (a .cts in a
// package of "type": "module", which tsx's CommonJS hooks alone do not
// change). The launcher passes the script first; process.argv becomes
// [execPath, script (absolute), ...args], as in any rank.

import { createRequire } from 'node:module';
import { resolve as resolvePath } from 'node:path';

const script = resolvePath(process.argv[2] ?? '');
process.argv.splice(1, 2, script);
createRequire(script)(script);
