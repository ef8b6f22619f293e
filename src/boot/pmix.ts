// Loader of railcomm's optional PMIx module (native/pmix/, built by npm install
// where libpmix-dev is installed): a client of the launcher's PMIx server.
// Returns null, with the reason, when it is absent; then wire-up falls back.

import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** Who this process is, as the PMIx server knows it; -1 where the server does not say. */
export interface PmixIdentity {
  rank: number;
  namespace: string;
  size: number;
  localRank: number;
  localSize: number;
  /** libpmix's version string. */
  version: string;
}

/** The raw module; failures are Errors whose `code` is PMIX_ERR_NOT_FOUND, PMIX_ERR_TIMEOUT, PMIX_ERR_INIT, ... */
export interface PmixModule {
  /** PMIx_Init (once per process; later calls return the same identity). */
  init(): PmixIdentity;
  /** PMIx_Put with PMIX_GLOBAL scope; visible to others after commit() and a fence. */
  put(key: string, value: string): void;
  commit(): void;
  /** PMIx_Fence across the namespace with PMIX_COLLECT_DATA, on a worker thread; 0 = no PMIX_TIMEOUT. */
  fence(timeoutSec: number): Promise<void>;
  /** PMIx_Get of the string `rank` put under `key`, on a worker thread, with PMIX_TIMEOUT when > 0. */
  get(rank: number, key: string, timeoutSec: number): Promise<string>;
  /** PMIx_Finalize: the server then knows this process ends on purpose. */
  finalize(): Promise<void>;
  /** Call `lost` on the event loop if the connection to the server is lost (the launcher died); never keeps Node alive. */
  onLost(lost: () => void): void;
  version(): string;
}

export interface PmixLoad {
  mod: PmixModule | null;
  why: string;
}

function root(): string {
  // dist/boot/pmix.js or src/boot/pmix.ts -> the package root
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
}

export function pmixModuleFile(): string {
  return path.join(root(), 'native', 'pmix', 'build', 'Release', 'railcomm_pmix.node');
}

/** Load the module from `file`; `logFile` is the build log that says why it is missing. */
export function loadPmixFrom(file: string, logFile = path.join(path.dirname(file), '..', '..', 'build-log.txt')): PmixLoad {
  if (!existsSync(file)) {
    let first = '';
    try { first = readFileSync(logFile, 'utf8').split('\n')[0] ?? ''; } catch { /* never built */ }
    return { mod: null, why: `PMIx module not built (${first || 'run npm install, or npm run build:native'}; needs libpmix-dev, pkg-config, node-gyp and a C++17 compiler)` };
  }
  try {
    const mod = createRequire(import.meta.url)(file) as PmixModule;
    return { mod, why: `PMIx module loaded (${mod.version().split(' (')[0]})` };
  } catch (e) {
    return { mod: null, why: `PMIx module failed to load: ${(e as Error).message}` };
  }
}

let cached: PmixLoad | undefined;

export function loadPmix(): PmixModule | null {
  if (cached === undefined) {
    if (process.env['RAILCOMM_NO_PMIX'] === '1') cached = { mod: null, why: 'disabled by RAILCOMM_NO_PMIX=1' };
    else if (process.platform !== 'linux') cached = { mod: null, why: `needs Linux (this is ${process.platform})` };
    else cached = loadPmixFrom(pmixModuleFile());
  }
  return cached.mod;
}

/** Why PMIx is or is not available (for railcomm info and error messages). */
export function pmixWhy(): string {
  loadPmix();
  return cached?.why ?? '';
}
