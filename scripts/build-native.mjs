// npm install hook: make railcomm's native parts loadable, and say so in ONE line.
// The addon (native/, Node-API: one binary for every Node, with the PMIx client
// that opens libpmix.so.2 at run time) comes from the package's prebuild
// (native/prebuilds/<platform>-<arch>/node.napi.node) when it loads here, else
// is built from source with node-gyp. Where this Node's Node-API cannot wrap
// shared memory as a SharedArrayBuffer, the V8 shim (native/sab/) too: its
// prebuild for this Node ABI, else a source build. A failed build only
// records why (native/build-log.txt, native/sab/build-log.txt): railcomm runs
// without it and `railcomm info` says what is missing. The libfabric binding
// (native/ofi/build.mjs, where present) builds after, its outcome on the same line.
//   RAILCOMM_SKIP_NATIVE=1        skip everything
//   RAILCOMM_BUILD_FROM_SOURCE=1  (or --from-source) ignore the prebuilds
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const nativeDir = path.join(root, 'native');
const sabDir = path.join(nativeDir, 'sab');
const require = createRequire(import.meta.url);
const tuple = `${process.platform}-${process.arch}`;

/** node-gyp as [node, script]: npm's (it tells scripts where), a local one, or a global npm's. */
export function gypCommand() {
  const candidates = [process.env.npm_config_node_gyp];
  try { candidates.push(require.resolve('node-gyp/bin/node-gyp.js')); } catch { /* not installed locally */ }
  const npmDir = process.env.npm_execpath ? path.dirname(path.dirname(process.env.npm_execpath)) : '';
  if (npmDir) candidates.push(path.join(npmDir, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  candidates.push('/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js', '/usr/local/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js');
  for (const c of candidates) if (c && existsSync(c)) return [process.execPath, c];
  return null;
}

/** The major version of the headers under dir (dir/include/node), or 0. */
function headersMajor(dir) {
  try {
    const h = readFileSync(path.join(dir, 'include', 'node', 'node_version.h'), 'utf8');
    return Number(/#define NODE_MAJOR_VERSION (\d+)/.exec(h)?.[1] ?? 0);
  } catch { return 0; }
}

/**
 * Headers for the Node running this script, for node-gyp's --nodedir: beside
 * the binary (an unpacked Node release, or /usr with the distribution's
 * headers), else npm's nodedir setting when it is the same major; else none
 * (node-gyp then uses its own cache or download). A global nodedir of another
 * version would build the V8 shim for the wrong ABI, so it is checked.
 */
export function runningNodeDir() {
  const major = Number(process.versions.node.split('.')[0]);
  for (const dir of [path.dirname(path.dirname(process.execPath)), process.env.npm_config_nodedir]) {
    if (dir && existsSync(path.join(dir, 'include', 'node', 'common.gypi')) && headersMajor(dir) === major) return dir;
  }
  return undefined;
}

/** node-gyp rebuild in dir (against nodedir); { ok, out }. */
export function gypRebuild(gyp, dir, nodedir) {
  // node-gyp lets npm_config_* variables override its command line: say nodedir there.
  const env = { ...process.env };
  if (nodedir) env.npm_config_nodedir = nodedir;
  else delete env.npm_config_nodedir;
  const r = spawnSync(gyp[0], [gyp[1], 'rebuild', '--jobs', 'max'], { cwd: dir, encoding: 'utf8', env });
  return { ok: r.status === 0, status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

function record(file, text) {
  try { mkdirSync(path.dirname(file), { recursive: true }); writeFileSync(file, text); } catch { /* best effort */ }
}

function tryLoad(file) {
  try { return { mod: require(file) }; } catch (e) { return { error: e.message.split('\n')[0] }; }
}

const rel = (f) => path.relative(root, f);

/** The addon: its prebuild if it loads, else a source build. { mod, from } or { error }. */
function addon(gyp, fromSource) {
  const log = path.join(nativeDir, 'build-log.txt');
  const pre = path.join(nativeDir, 'prebuilds', tuple, 'node.napi.node');
  let note = '';
  if (!fromSource && existsSync(pre)) {
    const l = tryLoad(pre);
    if (l.mod) {
      // A source build beside it would win at run time (node-gyp-build looks there first).
      rmSync(path.join(nativeDir, 'build'), { recursive: true, force: true });
      record(log, `prebuild loaded: ${rel(pre)}\n`);
      return { mod: l.mod, from: 'prebuild' };
    }
    note = `the prebuild did not load (${l.error}); `;
  } else if (!fromSource) {
    note = `no prebuild for ${tuple}; `;
  }
  if (gyp === null) {
    record(log, `not built: ${note}node-gyp was not found (npm normally bundles it)\n`);
    return { error: `${note}node-gyp was not found` };
  }
  const r = gypRebuild(gyp, nativeDir, runningNodeDir());
  const built = path.join(nativeDir, 'build', 'Release', 'railcomm_native.node');
  if (!r.ok) {
    record(log, `failed (exit ${r.status}): ${note}building from source needs node-gyp, a C++17 compiler, make and python3\n${r.out}`);
    return { error: `${note}the source build failed (${rel(log)})` };
  }
  const l = tryLoad(built);
  record(log, `${l.mod ? 'built from source' : `built from source but does not load (${l.error})`}${note ? ` (${note.slice(0, -2)})` : ''}\n${r.out}`);
  return l.mod ? { mod: l.mod, from: 'source build' } : { error: `built but does not load (${l.error})` };
}

/** The V8 shim for this Node ABI: not needed, its prebuild, or a source build. */
function shim(gyp, mod, fromSource) {
  const log = path.join(sabDir, 'build-log.txt');
  const abi = process.versions.modules;
  if (mod.externalSharedArrayBuffer()) {
    record(log, `not needed: node ${process.version} has node_api_create_external_sharedarraybuffer\n`);
    return { needed: false };
  }
  const pre = path.join(sabDir, 'prebuilds', tuple, `node.abi${abi}.node`);
  let note = '';
  if (!fromSource && existsSync(pre)) {
    const l = tryLoad(pre);
    if (l.mod) {
      rmSync(path.join(sabDir, 'build'), { recursive: true, force: true });
      record(log, `prebuild loaded: ${rel(pre)}\n`);
      return { needed: true, from: 'prebuild' };
    }
    note = `the prebuild did not load (${l.error}); `;
  } else if (!fromSource) {
    note = `no prebuild for ${tuple} node ABI ${abi}; `;
  }
  if (gyp === null) {
    record(log, `not built: ${note}node-gyp was not found\n`);
    return { needed: true, error: `${note}node-gyp was not found` };
  }
  const r = gypRebuild(gyp, sabDir, runningNodeDir());
  if (!r.ok) {
    record(log, `failed (exit ${r.status}): ${note}building it needs node-gyp, a C++ compiler, make, python3 and node ${process.version}'s headers\n${r.out}`);
    return { needed: true, error: `${note}the source build failed (${rel(log)})` };
  }
  const l = tryLoad(path.join(sabDir, 'build', 'Release', 'railcomm_sab.node'));
  record(log, `${l.mod ? `built from source for node ABI ${abi}` : `built but does not load (${l.error})`}\n${r.out}`);
  return l.mod ? { needed: true, from: 'source build' } : { needed: true, error: `built but does not load (${l.error})` };
}

/** What PMIx will find at run time (the addon opens libpmix.so.2 then). */
function pmixNote(mod) {
  const lib = process.env.RAILCOMM_PMIX_LIB || 'libpmix.so.2';
  try {
    const p = mod.pmix(lib);
    return `PMIx: ${lib} found (${p.version().split(' (')[0]}), opened at run time under mpirun and srun --mpi=pmix`;
  } catch {
    return `PMIx: ${lib} not found now; opened at run time when present (Open MPI's openmpi-bin brings it), else wire-up uses MASTER_ADDR:MASTER_PORT`;
  }
}

function main() {
  const noRails = 'no shm rail, CRC32C, udp batching or single copy (processes on one host use tcp), no PMIx wire-up';
  if (process.platform !== 'linux') {
    record(path.join(nativeDir, 'build-log.txt'), `not built: the addon needs Linux (this is ${process.platform})\n`);
    return `railcomm: native addon not built (needs Linux, this is ${process.platform}): ${noRails}`;
  }
  if (process.env.RAILCOMM_SKIP_NATIVE === '1') {
    record(path.join(nativeDir, 'build-log.txt'), 'not built: RAILCOMM_SKIP_NATIVE=1\n');
    record(path.join(sabDir, 'build-log.txt'), 'not built: RAILCOMM_SKIP_NATIVE=1\n');
    return `railcomm: native parts skipped (RAILCOMM_SKIP_NATIVE=1): ${noRails}`;
  }
  const fromSource = process.argv.includes('--from-source') || process.env.RAILCOMM_BUILD_FROM_SOURCE === '1';
  const gyp = gypCommand();
  const a = addon(gyp, fromSource);
  if (!a.mod) return `railcomm: native addon unavailable (${a.error}): ${noRails}`;
  const s = shim(gyp, a.mod, fromSource);
  const pmix = pmixNote(a.mod);
  const loaded = a.from === 'prebuild' ? 'loaded from prebuild' : 'built from source';
  if (s.error) {
    return `railcomm: native addon ${loaded}, but node ${process.version} also needs the V8 shim for shared memory and ${s.error}: no shm rail (CRC32C, udp batching and single copy available); ${pmix}`;
  }
  const shimNote = s.needed ? `, its V8 shim for node ${process.version} ${s.from === 'prebuild' ? 'from prebuild' : 'built from source'}` : '';
  return `railcomm: native addon ${loaded}${shimNote} (shm rail, CRC32C, udp batching, single copy available); ${pmix}`;
}

/** The libfabric binding's own build (native/ofi/build.mjs, where the package has it): its line without the prefix, or null. */
async function ofi() {
  const script = path.join(nativeDir, 'ofi', 'build.mjs');
  if (!existsSync(script)) return null;
  try {
    const { buildOfi } = await import(pathToFileURL(script).href);
    return String(buildOfi()).replace(/^railcomm: /, '');
  } catch (e) {
    return `ofi binding setup failed (${e.message.split('\n')[0]}): no ofi rail`;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // Exactly one line, whatever happened (the logs hold the details).
  let line;
  try { line = main(); } catch (e) { line = `railcomm: native setup failed (${e.message.split('\n')[0]}); railcomm still runs, with tcp between processes on one host`; }
  const o = await ofi();
  console.log(o === null ? line : `${line}; ${o}`);
}
