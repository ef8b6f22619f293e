// Marks the CLI entry executable after tsc wrote it (tsc does not keep modes),
// and copies the CommonJS entry (src/cjs/index.cjs, which tsc does not compile) to dist/.
import { chmodSync, copyFileSync, existsSync } from 'node:fs';
const cli = new URL('../dist/cli/main.js', import.meta.url);
if (existsSync(cli)) chmodSync(cli, 0o755);
copyFileSync(new URL('../src/cjs/index.cjs', import.meta.url), new URL('../dist/index.cjs', import.meta.url));
