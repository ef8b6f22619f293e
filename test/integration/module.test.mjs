// Module conventions (issue 20, point 5), from a user's project in a temp dir
// that reaches railcomm through its package.json exports (node_modules/railcomm
// is a link to this repository, as an installed package would be a copy):
// require('railcomm') from CommonJS works where Node loads ES modules from
// require() (the "module-sync" condition), and fails with one clear message
// where it cannot; the type declarations compile in a TypeScript project with
// no @types/node (and without the DOM library), ESM and CommonJS.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TSC = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
let dir;

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'railcomm-module-'));
  mkdirSync(path.join(dir, 'node_modules'));
  symlinkSync(root, path.join(dir, 'node_modules', 'railcomm'), 'dir');
  // A CommonJS project: no "type" field.
  writeFileSync(path.join(dir, 'package.json'), '{ "name": "user-app", "version": "1.0.0", "private": true }\n');
});
after(() => rmSync(dir, { recursive: true, force: true }));

const node = (args) => {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('RAILCOMM_')) delete env[k];
  return spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8', timeout: 60_000, env });
};

/** Lines of stderr other than Node's own note that require(esm) is experimental (some versions print it). */
const unexpected = (stderr) => stderr.split('\n').filter((l) => l.trim() !== '' && !/ExperimentalWarning|--trace-warnings/.test(l));

const requireRm = (process.features.require_module === true);

test('require("railcomm") from CommonJS works (Node loads ES modules from require here) and runs a world of one', { skip: requireRm ? false : `Node ${process.version} cannot load ES modules from require()` }, () => {
  writeFileSync(path.join(dir, 'app.cjs'), `
const railcomm = require('railcomm');
const { init, ANY_SOURCE, RailcommError } = railcomm;
(async () => {
  const comm = await init();
  const out = new Int32Array(1);
  await comm.send(new Int32Array([42]), 0, 1);
  await comm.recv(out, ANY_SOURCE, 1);
  await comm.finalize();
  console.log('OK ' + out[0] + ' ' + (typeof RailcommError) + ' ' + require.resolve('railcomm'));
})();
`);
  const r = node(['app.cjs']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^OK 42 function .*dist[/\\]index\.js$/m, 'resolved through the "module-sync" export to the ES module');
  assert.deepEqual(unexpected(r.stderr), []);
});

test('where require() cannot load ES modules, require("railcomm") fails with one clear message naming what to do', { skip: requireRm ? false : 'needs a Node that can turn require(esm) off' }, () => {
  writeFileSync(path.join(dir, 'old.cjs'), `
try { require('railcomm'); console.log('LOADED'); }
catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message })); }
`);
  // Node with require(esm) off behaves as Node before 20.19 / 22.12: no "module-sync", the "require" entry.
  const r = node(['--no-experimental-require-module', 'old.cjs']);
  assert.equal(r.status, 0, r.stderr);
  const e = JSON.parse(r.stdout);
  assert.equal(e.name, 'RailcommError');
  assert.equal(e.code, 'ERR_REQUIRE_ESM');
  assert.match(e.message, /railcomm is an ES module, and require\(\) cannot load it on this Node .*import \{ init \} from 'railcomm'.*await import\('railcomm'\)/);
});

test('the collectives that move elements take typed arrays (or device arrays) in their types, as at run time: a DataView does not compile', () => {
  // allgatherSync was typed ArrayBufferView, and gather ... alltoallv took any view, while all refuse a DataView at the
  // call (ERR_INVALID_ARG, checkArray); bcast moves bytes and takes one.
  writeFileSync(path.join(dir, 'views.mts'), `
import { init, cuda } from 'railcomm';
const comm = await init();
const p = comm.size;
const dv = new DataView(new ArrayBuffer(8)), dvAll = new DataView(new ArrayBuffer(8 * p));
comm.allgatherSync(new Int32Array(2), new Int32Array(2 * p));
await comm.allgather(new Float64Array(1), new Float64Array(p));
await comm.gather(new Uint8Array(1), null, 0);
await comm.alltoall(new Float32Array(p), cuda.alloc(p, Float32Array));
comm.bcastSync(dv, 0); await comm.bcast(dv, 0);
// @ts-expect-error a DataView has no element type
comm.allgatherSync(dv, dvAll);
// @ts-expect-error one element type
comm.allgatherSync(new Int32Array(2), new Float64Array(2 * p));
// @ts-expect-error a DataView has no element type
await comm.allgather(dv, dvAll);
// @ts-expect-error a DataView has no element type
comm.iallgatherv(dv, dvAll, [8, 8]);
// @ts-expect-error a DataView has no element type
await comm.gather(dv, null, 0);
// @ts-expect-error a DataView has no element type
await comm.scatter(null, dv, 0);
// @ts-expect-error a DataView has no element type
await comm.alltoall(dv, dvAll);
await comm.finalize();
`);
  writeFileSync(path.join(dir, 'tsconfig.views.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: [], skipLibCheck: false, lib: ['ES2022'] },
    files: ['views.mts'],
  }));
  const r = node([TSC, '-p', 'tsconfig.views.json']);
  assert.equal(r.status, 0, `tsc -p tsconfig.views.json:\n${r.stdout}${r.stderr}`);
});

test('the type declarations compile in a user project without @types/node and without the DOM library (ESM and CommonJS files)', () => {
  writeFileSync(path.join(dir, 'app.mts'), `
import { init, ANY_SOURCE, ANY_TAG, RailcommError, ErrorCode, waitAll, waitAny, op, dimsCreate, type Status, type ReduceOpName } from 'railcomm';
const comm = await init({ params: { eagerLimit: 65536 }, check: false });
const buf = new Float64Array(4);
const st: Status = await comm.recv(buf, ANY_SOURCE, ANY_TAG);
const r = comm.isend(buf, 0, 1);
const q = comm.irecv(new Uint8Array(8), 0, 2);
const all: Status[] = await waitAll([r, q]);
const first: { index: number; status: Status } = await waitAny([r, q]);
const t: Status | undefined = q.test();
q.cancel();
const out = new Float64Array(4);
const name: ReduceOpName = 'sum';
await comm.allreduce(buf, out, name);
await comm.allreduce(buf, out, op((inout: Float64Array, input: Float64Array) => { inout[0] = (inout[0] ?? 0) + (input[0] ?? 0); }, { commutative: true }));
const dims: number[] = dimsCreate(comm.size, 2);
const sub = await comm.split(comm.rank % 2, 0);
const win = await comm.allocWindow(64);
await win.fence();
const old: bigint = await win.fetchAndOp(1n, 0, 0, 'sum', 'i64');  // bigint for the 64-bit types, so old + 1n compiles
const small: number = await win.compareAndSwap(0, 1, 0, 8, 'i32');
void (old + 1n); void (small + 1);
await win.free();
const { value } = await comm.recvObject(0, 3);
try { await comm.send(buf, 1); } catch (e) { if (e instanceof RailcommError && e.code === ErrorCode.PEER_FAILED) void e.message; }
void [st, all, first, t, dims, sub, old, value];
await comm.finalize();
`);
  writeFileSync(path.join(dir, 'app.cts'), `
import railcomm = require('railcomm');
async function main(): Promise<void> {
  const comm = await railcomm.init();
  const r = comm.irecv(new Uint8Array(4), railcomm.ANY_SOURCE);
  r.cancel();
  await r.wait().catch((e: unknown) => e instanceof railcomm.RailcommError ? e.code : undefined);
  await comm.finalize();
}
void main();
`);
  const config = (name, extra) => writeFileSync(path.join(dir, name), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: [], skipLibCheck: false, ...extra },
    files: ['app.mts', 'app.cts'],
  }));
  config('tsconfig.json', { lib: ['ES2022'] });
  // With the DOM library, its AbortSignal must fit RequestOptions.signal.
  writeFileSync(path.join(dir, 'signal.mts'), `
import { init } from 'railcomm';
const comm = await init();
const ac = new AbortController();
const r = comm.irecv(new Uint8Array(4), 0, 0, { signal: ac.signal });
ac.abort('no longer needed');
await r.wait().catch(() => undefined);
await comm.finalize();
`);
  writeFileSync(path.join(dir, 'tsconfig.dom.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: [], skipLibCheck: false, lib: ['ES2022', 'DOM'] },
    files: ['signal.mts'],
  }));
  for (const p of ['tsconfig.json', 'tsconfig.dom.json']) {
    const r = node([TSC, '-p', p]);
    assert.equal(r.status, 0, `tsc -p ${p} in a project without @types/node:\n${r.stdout}${r.stderr}`);
  }
});
