// npm install hook: build the optional native addon (native/) and then the
// optional PMIx module (native/pmix/, needs libpmix-dev) with node-gyp. A failed
// build only warns: railcomm runs without it and `railcomm info` says why.
// RAILCOMM_SKIP_NATIVE=1 skips both; RAILCOMM_SKIP_PMIX=1 skips PMIx.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.dirname(path.dirname(new URL(import.meta.url).pathname));
const native = path.join(root, 'native');
const logFile = path.join(native, 'build-log.txt');
const pmixDir = path.join(native, 'pmix');
const pmixLog = path.join(pmixDir, 'build-log.txt');

function gypCommand() {
  // npm tells scripts where its bundled node-gyp is; else a local or global one.
  const candidates = [process.env.npm_config_node_gyp];
  try { candidates.push(createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js')); } catch { /* not installed locally */ }
  const npmDir = process.env.npm_execpath ? path.dirname(path.dirname(process.env.npm_execpath)) : '';
  if (npmDir) candidates.push(path.join(npmDir, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  candidates.push('/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js', '/usr/local/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js');
  for (const c of candidates) if (c && existsSync(c)) return [process.execPath, c];
  return null;
}

function record(text, file = logFile) {
  try { mkdirSync(path.dirname(file), { recursive: true }); writeFileSync(file, text); } catch { /* best effort */ }
}

/** The PMIx module: only where pkg-config finds libpmix; its failure never touches the main addon. */
function buildPmix(gyp) {
  if (process.env.RAILCOMM_SKIP_PMIX === '1') { record('not built: RAILCOMM_SKIP_PMIX=1\n', pmixLog); return; }
  const pc = spawnSync('pkg-config', ['--modversion', 'pmix'], { encoding: 'utf8' });
  if (pc.status !== 0) {
    record(`not built: pkg-config does not find pmix (install libpmix-dev and pkg-config)\n${pc.stderr ?? ''}${pc.error ? String(pc.error) : ''}`, pmixLog);
    return;
  }
  const r = spawnSync(gyp[0], [gyp[1], 'rebuild'], { cwd: pmixDir, encoding: 'utf8', env: process.env });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`;
  if (r.status === 0) {
    record(`built against libpmix ${pc.stdout.trim()}\n${out}`, pmixLog);
  } else {
    record(`failed (exit ${r.status})\n${out}`, pmixLog);
    const tail = out.trim().split('\n').slice(-8).join('\n');
    console.warn(`railcomm: the PMIx module did not build (see native/pmix/build-log.txt); under mpirun and srun --mpi=pmix railcomm wires up through MASTER_ADDR:MASTER_PORT instead.\n${tail}`);
  }
}

if (process.platform !== 'linux') {
  record(`not built: the addon needs Linux (this is ${process.platform})\n`);
  record(`not built: needs Linux (this is ${process.platform})\n`, pmixLog);
  console.warn(`railcomm: native addon not built (needs Linux); the shm rail is unavailable, processes on one host use tcp`);
} else if (process.env.RAILCOMM_SKIP_NATIVE === '1') {
  record('not built: RAILCOMM_SKIP_NATIVE=1\n');
  record('not built: RAILCOMM_SKIP_NATIVE=1\n', pmixLog);
} else {
  const gyp = gypCommand();
  if (gyp === null) {
    record('not built: node-gyp was not found (npm normally bundles it)\n');
    record('not built: node-gyp was not found (npm normally bundles it)\n', pmixLog);
    console.warn('railcomm: node-gyp not found; native addon not built, the shm rail is unavailable (processes on one host use tcp)');
  } else {
    const r = spawnSync(gyp[0], [gyp[1], 'rebuild'], { cwd: native, encoding: 'utf8', env: process.env });
    const out = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`;
    if (r.status === 0) {
      record(`built\n${out}`);
    } else {
      record(`failed (exit ${r.status})\n${out}`);
      const tail = out.trim().split('\n').slice(-8).join('\n');
      console.warn(`railcomm: the native addon did not build (see native/build-log.txt); the shm rail is unavailable and processes on one host use tcp.\n${tail}`);
    }
    buildPmix(gyp);
  }
}
