// Builds railcomm's libfabric binding (native/ofi, the ofi rail) where
// libfabric's headers are (pkg-config libfabric, else /usr/include/rdma/fabric.h),
// records what happened in native/ofi/build-log.txt and prints ONE line.
// Without the headers nothing is built and the ofi rail reports itself
// unavailable, with this reason. Usable alone (`node native/ofi/build.mjs`)
// or from scripts/build-native.mjs (buildOfi()).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const log = path.join(dir, 'build-log.txt');
const require = createRequire(import.meta.url);

function record(text) {
  try { mkdirSync(dir, { recursive: true }); writeFileSync(log, text); } catch { /* best effort */ }
}

/** Where libfabric's headers are, or null. */
export function libfabricHeaders() {
  const pc = spawnSync('pkg-config', ['--exists', 'libfabric'], { encoding: 'utf8' });
  if (pc.status === 0) {
    const v = spawnSync('pkg-config', ['--modversion', 'libfabric'], { encoding: 'utf8' }).stdout?.trim();
    return `pkg-config libfabric ${v}`;
  }
  if (existsSync('/usr/include/rdma/fabric.h')) return '/usr/include/rdma/fabric.h';
  return null;
}

function gyp() {
  const candidates = [process.env.npm_config_node_gyp];
  try { candidates.push(require.resolve('node-gyp/bin/node-gyp.js')); } catch { /* not installed locally */ }
  const npmDir = process.env.npm_execpath ? path.dirname(path.dirname(process.env.npm_execpath)) : '';
  if (npmDir) candidates.push(path.join(npmDir, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  candidates.push('/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js', '/usr/local/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js');
  for (const c of candidates) if (c && existsSync(c)) return [process.execPath, c];
  return null;
}

/** Build the binding; returns the one line saying what happened. */
export function buildOfi() {
  if (process.platform !== 'linux') { record(`not built: needs Linux (this is ${process.platform})\n`); return 'railcomm: ofi binding not built (needs Linux): no ofi rail'; }
  if (process.env.RAILCOMM_SKIP_NATIVE === '1') { record('not built: RAILCOMM_SKIP_NATIVE=1\n'); return 'railcomm: ofi binding skipped (RAILCOMM_SKIP_NATIVE=1): no ofi rail'; }
  const headers = libfabricHeaders();
  if (headers === null) {
    record('not built: libfabric headers not found (pkg-config libfabric, /usr/include/rdma/fabric.h); install libfabric-dev\n');
    return 'railcomm: ofi binding not built (no libfabric headers; apt-get install libfabric-dev): no ofi rail';
  }
  const g = gyp();
  if (g === null) { record('not built: node-gyp was not found\n'); return 'railcomm: ofi binding not built (node-gyp not found): no ofi rail'; }
  const env = { ...process.env };
  // The running Node's own headers where they are beside it (as the main addon's build does).
  const nodedir = path.dirname(path.dirname(process.execPath));
  if (existsSync(path.join(nodedir, 'include', 'node', 'common.gypi'))) env.npm_config_nodedir = nodedir;
  const r = spawnSync(g[0], [g[1], 'rebuild', '--jobs', 'max'], { cwd: dir, encoding: 'utf8', env });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`;
  if (r.status !== 0) {
    record(`failed (exit ${r.status}) with ${headers}\n${out}`);
    return `railcomm: ofi binding failed to build (native/ofi/build-log.txt): no ofi rail`;
  }
  try {
    require(path.join(dir, 'build', 'Release', 'railcomm_ofi.node'));
  } catch (e) {
    record(`built with ${headers} but does not load: ${e.message}\n${out}`);
    return `railcomm: ofi binding built but does not load (${e.message.split('\n')[0]}): no ofi rail`;
  }
  record(`built from source with ${headers}\n${out}`);
  return `railcomm: ofi binding built (${headers}): ofi rail available`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let line;
  try { line = buildOfi(); } catch (e) { line = `railcomm: ofi binding setup failed (${e.message.split('\n')[0]}): no ofi rail`; }
  console.log(line);
}
