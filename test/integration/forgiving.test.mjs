// A forgiving launcher and a job that ends as the user asked (issue 19, points 5
// and 6): a missing script in one line before any rank starts, -np, TypeScript
// scripts (Node's type stripping, or a loader found in the project, or a
// message saying what to install), comm.abort(code) in every mode, init()
// after finalize(), and /dev/shm names removed when a rank not started by
// railcomm run is stopped by a signal.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launchKit, waitFor } from '../helpers/launch-kit.mjs';
import { jobScript } from './jobs.mjs';

const { dir, seenPids, script, launch } = launchKit('railcomm-forgiving-');
const dist = (p) => pathToFileURL(fileURLToPath(new URL(`../../dist/${p}`, import.meta.url))).href;
const typescriptUrl = pathToFileURL(fileURLToPath(new URL('../../node_modules/typescript/lib/typescript.js', import.meta.url))).href;
const [major, minor] = process.versions.node.split('.').map(Number);
const nodeStripsTypes = Boolean(process.features.typescript) || major > 22 || (major === 22 && minor >= 6);

const okScript = () => script('ok.mjs', `
import { init } from ${JSON.stringify(dist('index.js'))};
const comm = await init();
const out = new Float64Array(1);
await comm.allreduce(new Float64Array([comm.rank + 1]), out, 'sum');
console.log('SUM ' + out[0]);
await comm.finalize();
`);

test('a missing script fails in one line, before any rank starts, with exit code 2', async () => {
  const res = await launch(['-n', '3', join(dir, 'no-such-app.js')]);
  assert.equal(res.code, 2);
  assert.equal(res.stdout, '');
  const lines = res.stderr.trim().split('\n');
  assert.equal(lines.length, 1, res.stderr);
  assert.match(lines[0], /^railcomm run: script '.*no-such-app\.js' not found \(there is no .*no-such-app\.js\)/);
  // A directory is no script either.
  mkdirSync(join(dir, 'sub.js'), { recursive: true });
  const d = await launch(['-n', '2', join(dir, 'sub.js')]);
  assert.equal(d.code, 2);
  assert.match(d.stderr, /is not a file/);
});

test('-np is an alias of -n', async () => {
  const s = okScript();
  const res = await launch(['-np', '3', s]);
  assert.equal(res.code, 0, res.stderr);
  for (let r = 0; r < 3; r++) assert.match(res.stdout, new RegExp(`^\\[${r}\\] SUM 6$`, 'm'));
});

const tsBody = `
import { init, type Communicator } from ${JSON.stringify(dist('index.js'))};
const comm: Communicator = await init();
const out = new Float64Array(1);
await comm.allreduce(new Float64Array([comm.rank + 1]), out, 'sum');
const line: string = \`TS \${comm.rank} \${out[0]}\`;
console.log(line);
await comm.finalize();
`;

test('a TypeScript script without a way to run it: one line saying what to install', { skip: nodeStripsTypes && 'this Node strips types itself' }, async () => {
  const bare = join(dir, 'bare');
  mkdirSync(bare, { recursive: true });
  writeFileSync(join(bare, 'package.json'), '{"type":"module"}');
  writeFileSync(join(bare, 'app.ts'), tsBody);
  const res = await launch(['-n', '2', join(bare, 'app.ts')]);
  assert.equal(res.code, 2);
  assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
  assert.match(res.stderr, /is TypeScript and Node v[\d.]+ cannot run it by itself .*npm install --save-dev tsx/);
});

test('a TypeScript script runs, as processes and as threads (type stripping, or the project\'s tsx)', async () => {
  // A stand-in for tsx in the script's project: a loader that transpiles with TypeScript.
  const proj = join(dir, 'proj');
  standInTsx(proj);
  writeFileSync(join(proj, 'app.ts'), tsBody);
  writeFileSync(join(proj, 'app.mts'), tsBody);
  for (const [file, args] of [['app.ts', []], ['app.mts', []], ['app.ts', ['--threads']], ['app.mts', ['--threads-per-process', '3']]]) {
    const res = await launch(['-n', '3', ...args, join(proj, file)], { limitMs: 40_000 });
    assert.equal(res.code, 0, `${file} ${args}: ${res.stderr}`);
    for (let r = 0; r < 3; r++) assert.match(res.stdout, new RegExp(`^\\[${r}\\] TS ${r} 6$`, 'm'), `${file} ${args}`);
  }
});

test('thread ranks of a TypeScript script need tsx\'s ESM API (tsx/esm/api) where tsx is the loader: one line saying so', { skip: nodeStripsTypes && 'this Node strips types itself' }, async () => {
  const old = join(dir, 'old-tsx');
  standInTsx(old, { api: false });
  writeFileSync(join(old, 'app.ts'), tsBody);
  const res = await launch(['-n', '2', '--threads', join(old, 'app.ts')]);
  assert.equal(res.code, 2, res.stderr);
  assert.equal(res.stdout, '');
  assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
  assert.match(res.stderr, /^railcomm run: script '.*app\.ts' is TypeScript, .* thread ranks need tsx's ESM API \(tsx\/esm\/api\)/);
});

test('a CommonJS TypeScript script (.cts) that require()s railcomm runs, as processes and as threads', { skip: process.features.require_module === false && 'this Node cannot require() ES modules' }, async () => {
  // tsx compiles a .cts in the loader it was started through. With --import (its ES module hooks) Node 20
  // runs the entry in its ES module loader, whose require() of CommonJS source from a hook cannot load an
  // ES module with imports (ERR_VM_MODULE_LINK_FAILURE: "request for './comm/init.js' is not in cache");
  // railcomm run starts a .cts with tsx's CommonJS hooks (--require tsx/cjs) there instead.
  const proj = join(dir, 'cts');
  standInTsx(proj);
  writeFileSync(join(proj, 'app.cts'), `
const { init } = require(${JSON.stringify(fileURLToPath(dist('index.js')))}) as typeof import('railcomm');
async function main(): Promise<void> {
  const comm = await init();
  const all = new Int32Array(comm.size);
  await comm.allgather(new Int32Array([comm.rank + 1]), all);
  console.log('CTS ' + comm.rank + ' ' + all.join(','));
  await comm.finalize();
}
void main();
`);
  for (const args of [[], ['--threads']]) {
    const res = await launch(['-n', '2', ...args, join(proj, 'app.cts')], { limitMs: 40_000 });
    assert.equal(res.code, 0, `${args}: ${res.stderr}`);
    for (let r = 0; r < 2; r++) assert.match(res.stdout, new RegExp(`^\\[${r}\\] CTS ${r} 1,2$`, 'm'), `${args}: ${res.stdout}`);
  }
});

/**
 * Writes a project with a stand-in for tsx that behaves as tsx does on Node 20: its loader
 * (node --import tsx) registers its hooks in the main thread only, and hooks registered in one
 * thread do not reach the others; tsx/esm/api's register() registers them in the calling
 * thread. api: false leaves tsx/esm/api out. As tsx does, its ES module hooks hand a .cts to Node
 * as compiled CommonJS source, and tsx/cjs (node --require) compiles .cts files in require()
 * (CommonJS hooks, which reach every thread).
 */
function standInTsx(proj, { api = true } = {}) {
  const tsx = join(proj, 'node_modules', 'tsx');
  mkdirSync(tsx, { recursive: true });
  writeFileSync(join(proj, 'package.json'), '{"type":"module"}');
  const exports = { '.': './loader.mjs', './package.json': './package.json', './cjs': './cjs.cjs', ...(api ? { './esm/api': { import: { types: './api.d.mts', default: './api.mjs' } } } : {}) };
  writeFileSync(join(tsx, 'package.json'), JSON.stringify({ name: 'tsx', version: '0.0.0', type: 'module', exports }));
  writeFileSync(join(tsx, 'loader.mjs'), "import { register } from 'node:module';\nimport { isMainThread } from 'node:worker_threads';\nif (isMainThread) register('./hooks.mjs', import.meta.url);\n");
  writeFileSync(join(tsx, 'api.mjs'), "import * as m from 'node:module';\nexport function register() { m.register('./hooks.mjs', import.meta.url); }\n");
  writeFileSync(join(tsx, 'cjs.cjs'), `
const { readFileSync } = require('node:fs');
const ts = require(${JSON.stringify(fileURLToPath(typescriptUrl))});
require.extensions['.cts'] = (module, file) => {
  const out = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
  module._compile(out.outputText, file);
};
`);
  writeFileSync(join(tsx, 'hooks.mjs'), `
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from ${JSON.stringify(typescriptUrl)};
export async function load(url, context, next) {
  if (!/\\.[cm]?ts$/.test(url)) return next(url, context);
  if (url.endsWith('.cts')) {
    const cjs = ts.transpileModule(readFileSync(fileURLToPath(url), 'utf8'), { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
    return { format: 'commonjs', source: cjs.outputText, shortCircuit: true };
  }
  const out = ts.transpileModule(readFileSync(fileURLToPath(url), 'utf8'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
  return { format: 'module', source: out.outputText, shortCircuit: true };
}
`);
}

for (const [what, args] of [['processes', ['-n', '3']], ['threads', ['-n', '4', '--threads']], ['two processes of two threads', ['-n', '4', '--threads-per-process', '2']]]) {
  test(`comm.abort(code) ends every rank with that exit code: ${what}`, async () => {
    const res = await launch([...args, '--grace', '10', jobScript('abort.mjs'), '7'], { limitMs: 30_000 });
    assert.equal(res.code, 7, res.stderr);
    assert.match(res.stderr, /rank \d( \(a thread rank\))? called abort\(7\); ending every rank of the job/);
    assert.match(res.stderr, /railcomm run: rank \d called abort: comm\.abort\(7\); stopping the job/);
    assert.doesNotMatch(res.stdout, /NOT REACHED|RESULT received/);
    // Far under the grace time: the launcher stopped the ranks at once.
    assert.ok(res.ms < 9000, `took ${res.ms} ms`);
  });
}

/** Starts `node args` with env; resolves with { code, signal, stdout, stderr }. */
function run(args, env, limitMs = 20_000, onLine) {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  seenPids.add(child.pid);
  let stdout = '', stderr = '';
  child.stdout.on('data', (d) => { stdout += d; onLine?.(stdout); });
  child.stderr.on('data', (d) => { stderr += d; });
  const done = new Promise((resolve, reject) => {
    const t = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`still running after ${limitMs} ms: ${stdout} ${stderr}`)); }, limitMs);
    child.on('close', (code, signal) => { clearTimeout(t); resolve({ code, signal, stdout, stderr }); });
  });
  return { child, done, out: () => stdout };
}

/** Environment of one rank of a job wired through rank 0's service (no railcomm run). */
const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(RAILCOMM_|OMPI_|PMI|SLURM_|RANK$|WORLD_SIZE$|LOCAL_|MASTER_)/.test(k)));
async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}
const envRank = (r, n, port) => ({ ...clean, RANK: String(r), WORLD_SIZE: String(n), LOCAL_RANK: String(r), LOCAL_WORLD_SIZE: String(n), MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), RAILCOMM_JOB_KEY: 'ab'.repeat(16), RAILCOMM_LOG: 'error' });

test('comm.abort(code) without a launcher of ours: alone the rank exits with the code; wired up by env:// (rank 0\'s service) every rank does', async () => {
  const one = await run([jobScript('abort.mjs'), '9'], clean).done;
  assert.equal(one.code, 9, one.stderr);
  assert.match(one.stderr, /rank 0 called abort\(9\)/);
  // The aborting rank is the service's host (0), or another (2); every other rank waits in a receive
  // meanwhile (which may fail first as the aborting rank leaves: MPI_Abort does not say which comes first).
  for (const aborter of [2, 0]) {
    const port = await freePort();
    const t0 = Date.now();
    const ranks = await Promise.all([0, 1, 2].map((r) => run([jobScript('abort.mjs'), '6', String(aborter)], envRank(r, 3, port)).done));
    for (const [r, res] of ranks.entries()) {
      assert.equal(res.code, 6, `aborter ${aborter}, rank ${r} exited with ${res.code} ${res.signal}: ${res.stdout}${res.stderr}`);
      assert.doesNotMatch(res.stdout, /NOT REACHED/);
      if (r !== aborter) assert.match(res.stderr, new RegExp(`rank ${aborter} called abort\\(6\\); exiting with code 6`), res.stderr);
    }
    assert.ok(Date.now() - t0 < 15_000, `aborter ${aborter}: the job took ${Date.now() - t0} ms`);
  }
});

test('init() after finalize() rejects with ERR_FINALIZED', async () => {
  const s = script('reinit.mjs', `
import { init } from ${JSON.stringify(dist('index.js'))};
const comm = await init();
await comm.finalize();
try { await init(); console.log('NEW WORLD'); } catch (e) { console.log('REJECTED ' + e.code + ' ' + e.message); }
`);
  const res = await run([s], clean).done;
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /^REJECTED ERR_FINALIZED init\(\) after finalize\(\)/m);
});

const namesWith = (prefix) => readdirSync('/dev/shm').filter((n) => n.startsWith(prefix));

test('ranks started without railcomm run remove their /dev/shm names when a signal stops them', async () => {
  for (const [sig, mode] of [['SIGINT', ''], ['SIGTERM', ''], ['SIGTERM', 'own-handler']]) {
    const port = await freePort();
    const ranks = [0, 1].map((r) => run([jobScript('shm-signal.mjs'), mode].filter(Boolean), envRank(r, 2, port)));
    await waitFor(() => ranks.every((k) => /^READY /m.test(k.out())), 20_000, 'both ranks ready');
    const [, prefix, rails] = /^READY (\S+) (\S+)$/m.exec(ranks[0].out());
    assert.match(rails, /shm/, 'the shm rail runs');
    // The ranks never talked: each one's inbox name is still there.
    assert.ok(namesWith(prefix).length >= 2, `names before the signal: ${namesWith(prefix)}`);
    for (const k of ranks) k.child.kill(sig);
    const ends = await Promise.all(ranks.map((k) => k.done));
    for (const e of ends) {
      if (mode === 'own-handler') {
        // The program's handler decided: it printed and exited 0; the names went with its exit.
        assert.equal(e.code, 0, e.stderr);
        assert.match(e.stdout, /^OWN$/m);
      } else {
        // The exit status still says which signal it was.
        assert.equal(e.signal, sig, `${sig}: ${JSON.stringify(e)}`);
      }
    }
    assert.deepEqual(namesWith(prefix), [], `${sig} ${mode}: names left`);
  }
});
