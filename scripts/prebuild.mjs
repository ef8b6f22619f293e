// `npm run prebuilds`: the binaries shipped inside the npm package, loaded by
// node-gyp-build. The Node-API addon once (native/prebuilds/<platform>-<arch>/
// node.napi.node, against the oldest supported Node's headers, so it uses
// nothing newer), and the V8 shim (native/sab/) once per Node version
// (native/sab/prebuilds/<platform>-<arch>/node.abi<N>.node). Headers come only
// from the npm registry's node-linux-<arch>@<major> packages (scripts/node-dist.mjs,
// cached in .cache/node/). Builds happen in .cache/prebuild/, and one whose
// sources and headers did not change since is reused. (Not `npm run prebuild`:
// npm runs a script of that name before every `npm run build`.)
//   npm run prebuilds                  every supported Node (20, 22, 24, 26)
//   npm run prebuilds -- --node 24,26  those majors (the addon still against 20's headers)
//   npm run prebuilds -- --current     the running Node's major only
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gypCommand, gypRebuild } from './build-native.mjs';
import { nodeDist } from './node-dist.mjs';

/** Changes when how a prebuild is made changes (a build made the old way is then redone). */
const RECIPE = 2;

/** The Node majors railcomm supports and tests (package.json engines says the same). */
export const SUPPORTED = [20, 22, 24, 26];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const stage = path.join(root, '.cache', 'prebuild');
const tuple = `linux-${process.arch}`;

/** Every file under dir. */
function filesUnder(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out.sort();
}

/** A build's inputs: its binding.gyp and the sources beside it (not builds, prebuilds, logs or other modules' folders). */
const INPUTS = {
  napi: () => [path.join(root, 'native', 'binding.gyp'), ...filesUnder(path.join(root, 'native', 'src'))],
  sab: () => [path.join(root, 'native', 'sab', 'binding.gyp'), path.join(root, 'native', 'sab', 'sab.cc')],
};

/** What a build depends on: its sources, node-addon-api's version and the headers' version. */
function stamp(sources, extra) {
  const h = createHash('sha256');
  for (const f of sources) h.update(path.relative(root, f)).update('\0').update(readFileSync(f)).update('\0');
  h.update(extra);
  return h.digest('hex');
}

/**
 * Build the binding in srcDir against the
 * headers in nodedir, in .cache/prebuild/<name>, and copy its .node to `out`.
 */
function build(gyp, name, srcDir, sources, dist, out) {
  const { dir: nodedir, version } = dist;
  const addonApi = JSON.parse(readFileSync(path.join(root, 'node_modules', 'node-addon-api', 'package.json'), 'utf8')).version;
  const want = stamp(sources, `recipe ${RECIPE}; node ${version}; node-addon-api ${addonApi}`);
  const dir = path.join(stage, name);
  const stampFile = path.join(dir, 'stamp');
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === want) {
    if (existsSync(out)) return 'up to date';
    const staged = readdirSync(path.join(dir, 'build', 'Release')).find((f) => f.endsWith('.node'));
    if (staged !== undefined) {
      mkdirSync(path.dirname(out), { recursive: true });
      copyFileSync(path.join(dir, 'build', 'Release', staged), out);
      return 'copied from the cached build';
    }
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of sources) {
    const to = path.join(dir, path.relative(srcDir, f));
    mkdirSync(path.dirname(to), { recursive: true });
    copyFileSync(f, to);
  }
  const r = gypRebuild(gyp, dir, nodedir);
  writeFileSync(path.join(dir, 'build-log.txt'), r.out);
  if (!r.ok) throw new Error(`prebuild: ${name} against node ${version} failed (exit ${r.status}); see ${path.relative(root, path.join(dir, 'build-log.txt'))}\n${r.out.trim().split('\n').slice(-15).join('\n')}`);
  const built = readdirSync(path.join(dir, 'build', 'Release')).find((f) => f.endsWith('.node'));
  // Loaded by the Node it is for, or it is not a prebuild for that Node.
  const check = spawnSync(dist.node, ['-e', 'require(process.argv[1])', path.join(dir, 'build', 'Release', built)], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`prebuild: ${name} does not load in node ${version}: ${check.stderr.trim().split('\n').slice(0, 6).join('\n')}`);
  mkdirSync(path.dirname(out), { recursive: true });
  copyFileSync(path.join(dir, 'build', 'Release', built), out);
  writeFileSync(stampFile, want);
  return 'built';
}

/** The NODE_MODULE_VERSION (ABI) of the headers in dir. */
function abiOf(dir) {
  const h = readFileSync(path.join(dir, 'include', 'node', 'node_version.h'), 'utf8');
  const abi = /#define NODE_MODULE_VERSION (\d+)/.exec(h)?.[1];
  if (abi === undefined) throw new Error(`prebuild: no NODE_MODULE_VERSION in ${dir}`);
  return abi;
}

export function prebuild(majors, { log = console.log } = {}) {
  if (process.platform !== 'linux') throw new Error('prebuild: the prebuilds are for Linux');
  const gyp = gypCommand();
  if (gyp === null) throw new Error('prebuild: node-gyp was not found');
  const results = [];
  // The addon against the oldest supported headers: NAPI_VERSION pins the API, the headers only need to declare it.
  const base = nodeDist(Math.min(...SUPPORTED));
  const napiOut = path.join(root, 'native', 'prebuilds', tuple, 'node.napi.node');
  const t0 = Date.now();
  const napi = build(gyp, 'napi', path.join(root, 'native'), INPUTS.napi(), base, napiOut);
  results.push({ file: napiOut, what: `addon (Node-API, headers of node ${base.version})`, status: napi });
  log(`prebuild: ${path.relative(root, napiOut)}: ${napi} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  for (const major of majors) {
    const d = nodeDist(major);
    const abi = abiOf(d.dir);
    const out = path.join(root, 'native', 'sab', 'prebuilds', tuple, `node.abi${abi}.node`);
    const t1 = Date.now();
    const st = build(gyp, `sab-${major}`, path.join(root, 'native', 'sab'), INPUTS.sab(), d, out);
    results.push({ file: out, what: `V8 shim for node ${d.version} (ABI ${abi})`, status: st });
    log(`prebuild: ${path.relative(root, out)}: ${st} for node ${d.version} (${((Date.now() - t1) / 1000).toFixed(1)} s)`);
  }
  return results;
}

function majorsFromArgs(argv) {
  if (argv.includes('--current')) return [Number(process.versions.node.split('.')[0])];
  const i = argv.indexOf('--node');
  if (i >= 0 && argv[i + 1]) return argv[i + 1].split(',').map((x) => Number(x.trim()));
  return SUPPORTED;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    prebuild(majorsFromArgs(process.argv.slice(2)));
  } catch (e) {
    console.error(e.message);
    process.exitCode = 1;
  }
}
