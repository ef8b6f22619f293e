// The program a rank runs: a script started with this node (its V8 flags, a
// TypeScript script's type stripping or loader) or any other program; a
// script's problems found before any rank starts.

import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join as joinPath, resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { invalidArg } from '../core/errors.js';
import { BUSY_HOST_NODE_FLAGS, DEFAULT_NODE_FLAGS } from '../core/params.js';

/** What a rank process of a .cts script run with tsx's CommonJS hooks starts on (it require()s the script). */
const CTS_MAIN = fileURLToPath(new URL('./cts-main.js', import.meta.url));

/** Scripts this node runs (TypeScript through type stripping or a loader, typeScriptFlags). */
export const SCRIPT_RE = /\.(m|c)?[jt]s$/i;
const TS_RE = /\.(m|c)?ts$/i;
/** CommonJS TypeScript, which tsx compiles in the loader it is started through (typeScriptFlags). */
const CTS_RE = /\.cts$/i;

/** The program to start and its arguments; scriptAt: where the script is among them (-1: not a script). */
export function resolveProgram(command: string[], env: NodeJS.ProcessEnv, cwd: string): { file: string; args: string[]; scriptAt: number } {
  const first = command[0] ?? '';
  if (SCRIPT_RE.test(first)) {
    const ts = scriptFlags(first, cwd);
    // tsx's CommonJS hooks: the script is require()d from cts-main.js (typeScriptFlags says why).
    const flags = [...nodeFlags(env), ...ts, ...(ts[0] === '--require' ? [CTS_MAIN] : [])];
    return { file: process.execPath, args: [...flags, ...command], scriptAt: flags.length };
  }
  return { file: first, args: command.slice(1), scriptAt: -1 };
}

/**
 * Why a script cannot run, in one line, or undefined when it can: it must
 * exist (checked before any rank starts, instead of one stack per rank), and
 * a TypeScript one needs a way to run (typeScriptFlags; as thread ranks,
 * threadScriptLoader's too). Programs are left to
 * spawn (127 when missing). Ranks only on remote hosts find their script there.
 */
export function scriptProblem(command: readonly string[], cwd: string, anyLocal = true, threads = false): string | undefined {
  const first = command[0] ?? '';
  if (!SCRIPT_RE.test(first) || !anyLocal) return undefined;
  const full = resolvePath(cwd, first);
  let isFile = false;
  try { isFile = statSync(full).isFile(); } catch { return `script '${first}' not found (there is no ${full}); check the path and the working directory`; }
  if (!isFile) return `script '${first}' is not a file (${full})`;
  const ts = typeScriptFlags(full, cwd);
  if (typeof ts === 'string') return ts;
  const loader = threads ? threadScriptLoader(full, cwd) : undefined;
  return typeof loader === 'string' ? loader : undefined;
}

/** Node flags a script needs beyond nodeFlags(): a TypeScript script's type stripping or loader. */
export function scriptFlags(script: string, cwd: string): string[] {
  const ts = TS_RE.test(script) ? typeScriptFlags(resolvePath(cwd, script), cwd) : [];
  if (typeof ts === 'string') throw invalidArg(ts);
  return ts;
}

/**
 * How this node runs a TypeScript script: nothing where it strips types by
 * default (Node 23.6+, 22.18+), --experimental-strip-types from 22.6, else
 * tsx as a loader when the script's project (or the working directory) has
 * it installed; else a message saying what to install. JavaScript: [].
 *
 * A .cts script gets tsx's CommonJS hooks (--require tsx/cjs), not
 * `--import tsx`: with --import, Node 20 runs the entry through its ES module
 * loader, where tsx hands it a .cts as compiled CommonJS source, and that
 * source's require() cannot load an ES module with imports of its own (Node 20
 * only): `require('railcomm')` fails with ERR_VM_MODULE_LINK_FAILURE ("request
 * for './comm/init.js' is not in cache"), under `tsx x.cts` too. Through the
 * CommonJS loader require() loads railcomm as it does from a .cjs file; such a
 * script require()s TypeScript but cannot import() it (no ES module hooks).
 * A rank process starts on cts-main.js, which require()s the script: Node
 * would run a .cts of a "type": "module" package as an ES module (threads:
 * ts-worker.js require()s it).
 */
export function typeScriptFlags(script: string, cwd = process.cwd()): string[] | string {
  if (!TS_RE.test(script)) return [];
  const features = process.features as { typescript?: string | false };
  if (features.typescript) return [];
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  if (major > 22 || (major === 22 && minor >= 6)) return ['--experimental-strip-types'];
  const tsx = findTsx(script, cwd);
  if (tsx !== undefined) {
    const cjs = CTS_RE.test(script) ? tsxCjs(tsx.from) : undefined;
    return cjs !== undefined ? ['--require', cjs] : ['--import', pathToFileURL(tsx.entry).href];
  }
  return `script '${script}' is TypeScript and Node ${process.version} cannot run it by itself (Node 22.6 and later strip types): install tsx in its project (npm install --save-dev tsx), run a newer Node, or compile it to JavaScript`;
}

/** The tsx a TypeScript script runs with: its project's, else the working directory's; undefined when neither has it. */
function findTsx(script: string, cwd: string): { from: string; entry: string } | undefined {
  for (const from of [dirname(script), cwd]) {
    try {
      return { from, entry: createRequire(joinPath(from, 'noop.js')).resolve('tsx') };
    } catch {
      // not installed there
    }
  }
  return undefined;
}

/** The file `require('tsx/cjs')` loads for a module in folder `from` (tsx's CommonJS hooks), or undefined when that tsx has none. */
function tsxCjs(from: string): string | undefined {
  try {
    return createRequire(joinPath(from, 'noop.js')).resolve('tsx/cjs');
  } catch {
    return undefined;
  }
}

/**
 * How a thread rank (a worker thread of a thread host) loads its script, beyond
 * the node flags the host runs with, which its worker threads inherit: nothing
 * (undefined) for JavaScript and for type stripping; where this node runs
 * TypeScript through tsx (typeScriptFlags), the file of tsx's ESM API
 * (tsx/esm/api), whose register() the worker calls before it imports the
 * script (ts-worker.ts). The host's `--import tsx` runs in every worker thread
 * too, but tsx registers its hooks there only in the main thread on Node 20
 * (and 22 before 22.22.3), and hooks that module.register() adds in one thread
 * do not reach another: without this a worker fails on the script with
 * ERR_UNKNOWN_FILE_EXTENSION. A string: why it cannot (a tsx without that API).
 * A .cts script run with tsx's CommonJS hooks (`--require`, typeScriptFlags):
 * tsxApi '', as the preload registers them in every worker thread too, and the
 * worker require()s the script.
 */
export function threadScriptLoader(script: string, cwd = process.cwd()): { tsxApi: string } | string | undefined {
  const flags = typeScriptFlags(script, cwd);
  if (typeof flags !== 'string' && flags[0] === '--require') return { tsxApi: '' };
  if (typeof flags === 'string' || flags[0] !== '--import') return undefined;
  const tsx = findTsx(script, cwd);
  if (tsx === undefined) return undefined;
  const tsxApi = tsxEsmApi(tsx.from);
  if (tsxApi !== undefined) return { tsxApi };
  return `script '${script}' is TypeScript, which Node ${process.version} runs through tsx, and thread ranks need tsx's ESM API (tsx/esm/api) to load it in their worker threads, which the tsx found from ${tsx.from} lacks: update tsx (npm install --save-dev tsx@latest), run the ranks as processes (no --threads or --threads-per-process), or run Node 22.6 or later`;
}

/**
 * The file `import('tsx/esm/api')` loads for a module in folder `from`, or
 * undefined when that tsx has none. Read from tsx's exports under the
 * conditions of import (node, import, default): require()'s resolution picks
 * its CommonJS build, whose register() looks for its hooks in the wrong folder.
 */
function tsxEsmApi(from: string): string | undefined {
  try {
    const pkgFile = createRequire(joinPath(from, 'noop.js')).resolve('tsx/package.json');
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { exports?: Record<string, unknown> };
    let target = pkg.exports?.['./esm/api'];
    while (typeof target === 'object' && target !== null && !Array.isArray(target)) {
      const key = Object.keys(target).find((k) => k === 'node' || k === 'import' || k === 'default');
      target = key === undefined ? undefined : (target as Record<string, unknown>)[key];
    }
    return typeof target === 'string' && target.startsWith('./') ? resolvePath(dirname(pkgFile), target) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * V8 flags for the node that runs JavaScript ranks (and thread hosts): a
 * larger inlining budget. A message's hot path (the send or receive call,
 * the protocol, the ring) is deeper than V8's default budget of 920 bytes of
 * bytecode inlined into one optimized function, so parts of it stayed calls;
 * with these it is compiled whole: 25-30% less CPU per 8-byte round trip
 * over shared memory (bench/hop-cpu.mjs, bench RESULTS "shm runs 15 and 16", item 5). The
 * budget applies to the program's own code too. A thread host whose ranks take
 * every CPU of the host (busyHost) also gets BUSY_HOST_NODE_FLAGS (params.ts
 * says why, and why rank processes do not). RAILCOMM_NODE_FLAGS replaces them
 * all (empty: none).
 */
export { DEFAULT_NODE_FLAGS };

export function nodeFlags(env: NodeJS.ProcessEnv, busyHost = false): string[] {
  const v = env['RAILCOMM_NODE_FLAGS'];
  if (v !== undefined) return v.split(/\s+/).filter((f) => f !== '');
  return busyHost ? [...DEFAULT_NODE_FLAGS, ...BUSY_HOST_NODE_FLAGS] : [...DEFAULT_NODE_FLAGS];
}
