// What a test needs from this machine, and what CI must have. A test that
// needs a part (the native addon, mpirun, Slurm...) asks need(part, why), with
// `why` the reason the part is missing here (falsy when it is there): outside
// CI the test skips, printing its own reason; under CI=true, for a part CI
// requires, the test fails with that reason instead, so a CI that lost a part
// goes red rather than green with skips.

import { spawnSync } from 'node:child_process';
import { loadNative, nativeWhy } from '../../dist/native/addon.js';
import { loadPmix, pmixWhy } from '../../dist/boot/pmix.js';

/** Every part a test may need, and what it is (for the messages). */
export const PARTS = {
  addon: "railcomm's native addon",
  pmix: "railcomm's PMIx client (in the native addon; needs libpmix.so.2)",
  mpirun: "Open MPI's mpirun (Debian openmpi-bin)",
  slurm: 'a single-host Slurm (Debian slurm-wlm, munge)',
  netns: 'network namespaces (iproute2, root)',
  nftables: 'nftables in a network namespace (Debian nftables, root)',
  ofi: "libfabric's rail (Debian libfabric-dev)",
  taskset: 'taskset and 2 CPUs',
  cpus: 'at least 2 CPUs',
  shim: "the addon's V8 shim for this Node (npm run prebuilds)",
  mountns: 'a mount namespace with its own tmpfs (unshare -m)',
  userns: 'a user namespace for one rank (unshare --user --map-root-user)',
  sshd: 'a local sshd started by the test (Debian openssh-server)',
  cuda: 'an NVIDIA GPU with its driver (libcuda.so.1); test/gpu/run-on-gpu.sh runs these on the lent GPU machine',
};

/**
 * The parts CI must have (the one place CI declares them; .ci/run installs
 * them). RAILCOMM_CI_REQUIRE overrides it for a CI that lacks some on purpose
 * (comma-separated part names, or `none`).
 */
export const CI_REQUIRES = ['addon', 'pmix', 'mpirun', 'slurm', 'netns', 'nftables', 'userns', 'sshd', 'ofi'];

export const ON_CI = process.env.CI === 'true' || process.env.CI === '1';

function requiredOnCi() {
  const o = process.env.RAILCOMM_CI_REQUIRE;
  if (o === undefined || o.trim() === '') return new Set(CI_REQUIRES);
  if (o.trim() === 'none') return new Set();
  const names = o.split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) if (!(n in PARTS)) throw new Error(`RAILCOMM_CI_REQUIRE names '${n}', not one of ${Object.keys(PARTS).join(', ')}`);
  return new Set(names);
}
const REQUIRED = requiredOnCi();

/** Whether a missing `part` fails (CI requires it) rather than skips. */
export function mustHave(part) {
  if (!(part in PARTS)) throw new Error(`need(): unknown part '${part}'`);
  return ON_CI && REQUIRED.has(part);
}

/**
 * What a test does about `part`, missing here for `why` (a string; falsy:
 * present): node:test options to pass as they are, test(name, need(...), fn),
 * or spread ({ ...need(...), timeout }):
 *  - present: {} (the test runs);
 *  - missing, outside CI or not required there: { skip: 'needs <part>: <why>' };
 *  - missing and CI requires it: { signal } already aborted with the reason,
 *    which node:test reports as a failed test (not ok, the reason as its
 *    error) without running the body.
 * Also (not enumerable, so not spread): reason, failure, and skipped(t) for a
 * test that learns inside its body that the part is missing: false when
 * present; else t.skip(reason) and true (return at once), or, where CI
 * requires the part, it throws the failure.
 */
export function need(part, why) {
  if (!(part in PARTS)) throw new Error(`need(): unknown part '${part}'`);
  const missing = Boolean(why);
  const reason = missing ? `needs ${PARTS[part]}: ${why}` : null;
  const failure = missing && mustHave(part) ? `CI=true requires ${PARTS[part]}, and it is missing: ${why}` : null;
  const opts = !missing ? {} : failure !== null ? { signal: AbortSignal.abort(new Error(failure)) } : { skip: reason };
  return Object.defineProperties(opts, {
    part: { value: part },
    reason: { value: reason },
    failure: { value: failure },
    skipped: {
      value(t) {
        if (!missing) return false;
        if (failure !== null) throw new Error(failure);
        t.skip(reason);
        return true;
      },
    },
  });
}

/** The first of several needs that is missing (so that its reason is the one printed), else the last. */
export function needAll(...needs) {
  return needs.find((n) => n.reason !== null) ?? needs[needs.length - 1];
}

/** Once per file, a line saying which needs skip here (node --test prints skips, but not always why at a glance). */
export function report(what, n) {
  if (n.failure !== null) console.log(`# ${what} fail: ${n.failure}`);
  else if (n.reason !== null) console.log(`# ${what} skipped: ${n.reason}`);
}

// ---- probes for the parts every file asks about the same way

/** The native addon: need('addon', ...) with the loader's own reason. */
export const needAddon = () => need('addon', loadNative() === null ? nativeWhy() : null);

/**
 * A GPU: the CUDA driver loaded and sees a device. railcomm's stand-in driver
 * (test/gpu/fake, host memory) counts only with RAILCOMM_GPU_FAKE=1: it checks
 * the protocol's paths on a machine without a GPU, never a GPU result.
 */
export async function needCuda() {
  const { cuda } = await import('../../dist/index.js');
  const fake = /test\/gpu\/fake|fakecuda/.test(process.env.RAILCOMM_CUDA_LIBRARY ?? '');
  if (!cuda.available) return need('cuda', cuda.why);
  if (fake && process.env.RAILCOMM_GPU_FAKE !== '1') return need('cuda', `RAILCOMM_CUDA_LIBRARY names railcomm's fake driver (set RAILCOMM_GPU_FAKE=1 to run on it anyway): ${cuda.why}`);
  return need('cuda', null);
}

/** railcomm's PMIx module. */
export const needPmix = () => need('pmix', loadPmix() === null ? `railcomm's PMIx module is unavailable: ${pmixWhy()}` : null);

/** A command on PATH: its path, or '' (then `why` says so). */
export function which(cmd) {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : '';
}

/** Root, for the tests that start daemons or make namespaces: null, or why not. */
export const notRoot = () => (typeof process.getuid === 'function' && process.getuid() !== 0 ? 'it needs root' : null);
