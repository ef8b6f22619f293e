// The packed package installs on a machine with no compiler: prebuilds for the
// running Node (npm run prebuilds -- --current), `npm pack`, then `npm install`
// of the tarball into a fresh project on a PATH that holds only node, npm and
// npx (no g++, cc, make or python3, so npm cannot compile anything), and
// `railcomm info` there shows the shm rail available from the prebuild.
// Skipped, saying why, only when npm pack itself cannot run.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PREBUILDS = [path.join(root, 'native', 'prebuilds'), path.join(root, 'native', 'sab', 'prebuilds')];

/** Every file under the prebuild folders now (to remove afterwards only those this test made). */
function prebuildFiles() {
  const out = [];
  const walk = (d) => { for (const e of existsSync(d) ? readdirSync(d, { withFileTypes: true }) : []) { const p = path.join(d, e.name); if (e.isDirectory()) walk(p); else out.push(p); } };
  for (const d of PREBUILDS) walk(d);
  return new Set(out);
}

/** An executable's path on the PATH this test was started with. */
function which(name) {
  const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** The environment of a user's shell: no npm_* variables from the npm test that runs us, PATH as given. */
function userEnv(pathDirs, home) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) && !k.startsWith('RAILCOMM_')) env[k] = v;
  return { ...env, PATH: pathDirs, npm_config_cache: path.join(home, '.npm'), npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' };
}

test('npm pack, then npm install without g++, cc, make or python3: the prebuilds load and railcomm info shows shm available', { timeout: 240_000 }, (t) => {
  const npm = which('npm');
  const npx = which('npx');
  if (npm === null || npx === null) { t.skip('npm pack cannot run here: no npm or npx on PATH'); return; }
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) { t.skip(`no prebuilds for ${process.platform}-${process.arch}`); return; }
  const work = mkdtempSync(path.join(tmpdir(), 'railcomm-install-'));
  const had = prebuildFiles();
  try {
    // 1. Prebuilds for this Node (reused when the sources did not change).
    const t0 = Date.now();
    const pre = spawnSync(process.execPath, [path.join(root, 'scripts', 'prebuild.mjs'), '--current'], { cwd: root, encoding: 'utf8' });
    assert.equal(pre.status, 0, `npm run prebuilds -- --current failed:\n${pre.stdout}${pre.stderr}`);
    t.diagnostic(`prebuilds: ${((Date.now() - t0) / 1000).toFixed(1)} s (${pre.stdout.trim().split('\n').join('; ')})`);

    // 2. The tarball, as npm publish would make it (dist/ is built by npm test before this runs).
    const pack = spawnSync(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: root, encoding: 'utf8', env: userEnv(process.env.PATH ?? '', work) });
    if (pack.status !== 0) { t.skip(`npm pack cannot run here: ${pack.stderr.trim().split('\n').slice(-3).join(' ')}`); return; }
    const info = JSON.parse(pack.stdout)[0];
    const tgz = path.join(work, info.filename);
    const names = info.files.map((f) => f.path);
    const abi = `node.abi${process.versions.modules}.node`;
    assert.ok(names.includes(`native/prebuilds/linux-${process.arch}/node.napi.node`), 'the Node-API prebuild is packed');
    assert.ok(names.includes(`native/sab/prebuilds/linux-${process.arch}/${abi}`), `the V8 shim for this Node (${abi}) is packed`);
    assert.ok(!names.some((n) => n.includes('/build/') || n.endsWith('build-log.txt')), 'no build folders or logs are packed');
    t.diagnostic(`tarball ${info.filename}: ${(statSync(tgz).size / 1024).toFixed(0)} KiB packed, ${(info.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${info.entryCount} files`);

    // 3. A PATH with node, npm, npx and sh only.
    const bin = path.join(work, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, 'node'));
    symlinkSync(npm, path.join(bin, 'npm'));
    symlinkSync(npx, path.join(bin, 'npx'));
    symlinkSync(which('sh') ?? '/bin/sh', path.join(bin, 'sh')); // npm runs scripts with sh
    const env = userEnv(bin, work);
    for (const tool of ['g++', 'gcc', 'cc', 'c++', 'make', 'python3', 'python']) {
      assert.notEqual(spawnSync('sh', ['-c', `command -v ${tool}`], { env }).status, 0, `${tool} must not be on the install PATH`);
    }

    // 4. Install into a fresh project.
    const app = path.join(work, 'app');
    mkdirSync(app);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'railcomm-install-check', version: '1.0.0', private: true }));
    const t1 = Date.now();
    const inst = spawnSync(npm, ['install', '--foreground-scripts', '--no-audit', '--no-fund', tgz], { cwd: app, encoding: 'utf8', env });
    const installS = (Date.now() - t1) / 1000;
    assert.equal(inst.status, 0, `npm install failed:\n${inst.stdout}${inst.stderr}`);
    const lines = `${inst.stdout}\n${inst.stderr}`.split('\n').filter((l) => l.startsWith('railcomm:'));
    assert.equal(lines.length, 1, `the install prints one line about the native parts:\n${inst.stdout}${inst.stderr}`);
    assert.match(lines[0], /^railcomm: native addon loaded from prebuild.*\(shm rail, CRC32C, udp batching, single copy available\); PMIx: /);
    t.diagnostic(`npm install of the tarball: ${installS.toFixed(1)} s; it said: ${lines[0]}`);
    const pkg = path.join(app, 'node_modules', 'railcomm');
    assert.ok(!existsSync(path.join(pkg, 'native', 'build')), 'nothing was compiled');

    // 5. What the user sees.
    const shown = spawnSync(npx, ['--no-install', 'railcomm', 'info'], { cwd: app, encoding: 'utf8', env, timeout: 60_000 });
    assert.equal(shown.status, 0, shown.stderr);
    assert.match(shown.stdout, /^native: available \(native addon loaded from prebuild \(native\/prebuilds\/linux-\w+\/node\.napi\.node;/m);
    assert.match(shown.stdout, /^ {3}shm: available \(native addon loaded from prebuild/m);

    // 5b. RAILCOMM_SKIP_NATIVE=1 at install: no native part loads at run time, prebuild or not.
    const skip = spawnSync(npm, ['rebuild', 'railcomm', '--foreground-scripts'], { cwd: app, encoding: 'utf8', env: { ...env, RAILCOMM_SKIP_NATIVE: '1' } });
    assert.equal(skip.status, 0, `${skip.stdout}${skip.stderr}`);
    const skipped = spawnSync(npx, ['--no-install', 'railcomm', 'info'], { cwd: app, encoding: 'utf8', env, timeout: 60_000 });
    assert.equal(skipped.status, 0, skipped.stderr);
    assert.match(skipped.stdout, /^native: unavailable \(skipped at install \(RAILCOMM_SKIP_NATIVE=1\)/m);
    assert.match(skipped.stdout, /^pmix: unavailable .*skipped at install/m);

    // 6. No prebuild for this machine and no compiler: still one line, npm rebuild succeeds, and info says why.
    rmSync(path.join(pkg, 'native', 'prebuilds'), { recursive: true, force: true });
    const re = spawnSync(npm, ['rebuild', 'railcomm', '--foreground-scripts'], { cwd: app, encoding: 'utf8', env });
    assert.equal(re.status, 0, `a failed source build must not fail the install:\n${re.stdout}${re.stderr}`);
    const relines = `${re.stdout}\n${re.stderr}`.split('\n').filter((l) => l.startsWith('railcomm:'));
    assert.equal(relines.length, 1, `${re.stdout}${re.stderr}`);
    assert.match(relines[0], /^railcomm: native addon unavailable \(no prebuild for linux-\w+; the source build failed \(native\/build-log\.txt\)\): no shm rail/);
    const off = spawnSync(npx, ['--no-install', 'railcomm', 'info'], { cwd: app, encoding: 'utf8', env, timeout: 60_000 });
    assert.equal(off.status, 0, off.stderr);
    assert.match(off.stdout, /^native: unavailable \(native addon not built \(failed \(exit \d+\): no prebuild for linux-\w+; building from source needs node-gyp, a C\+\+17 compiler, make and python3/m);
  } finally {
    rmSync(work, { recursive: true, force: true });
    // Leave the prebuild folders as they were (the built copies stay cached in .cache/prebuild).
    for (const f of prebuildFiles()) if (!had.has(f)) rmSync(f, { force: true });
    for (const d of PREBUILDS) {
      const sub = path.join(d, `linux-${process.arch}`);
      if (existsSync(sub) && readdirSync(sub).length === 0) rmSync(sub, { recursive: true, force: true });
      if (existsSync(d) && readdirSync(d).length === 0) rmSync(d, { recursive: true, force: true });
    }
  }
});
