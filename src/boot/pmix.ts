// Loader of railcomm's PMIx client: part of the native addon (native/src/pmix.cc),
// which opens the launcher's libpmix.so.2 at run time (no libpmix-dev needed).
// Returns null, with the reason, when the addon or the library is absent; then
// wire-up falls back to MASTER_ADDR:MASTER_PORT.

import { loadBinary, nativeDir } from '../native/addon.js';

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

/** The library to open: RAILCOMM_PMIX_LIB (a path or name) or libpmix.so.2 from the loader's search path. */
export function pmixLibrary(): string {
  const lib = process.env['RAILCOMM_PMIX_LIB'];
  return lib !== undefined && lib !== '' ? lib : 'libpmix.so.2';
}

interface PmixBinary { pmix?(lib: string): PmixModule & { library(): string } }

/** The PMIx client of the addon in `dir` (the package's native/ by default), over library `lib`. */
export function loadPmixFrom(dir = nativeDir(), lib = pmixLibrary()): PmixLoad {
  const bin = loadBinary(dir);
  if (!bin.ok) return { mod: null, why: `PMIx module unavailable: ${bin.why}` };
  const open = (bin.raw as PmixBinary).pmix;
  if (typeof open !== 'function') return { mod: null, why: `PMIx module unavailable: the native addon (${bin.file}) predates it; rerun npm install` };
  try {
    const mod = open(lib);
    return { mod, why: `PMIx module loaded (${mod.version().split(' (')[0]} from ${mod.library()}; in the native addon, ${bin.from})` };
  } catch (e) {
    return { mod: null, why: `PMIx module unavailable: ${(e as Error).message}; mpirun and srun --mpi=pmix provide it (Open MPI's openmpi-bin installs libpmix.so.2), or set RAILCOMM_PMIX_LIB to its path` };
  }
}

let cached: PmixLoad | undefined;

export function loadPmix(): PmixModule | null {
  if (cached === undefined) {
    if (process.env['RAILCOMM_NO_PMIX'] === '1') cached = { mod: null, why: 'disabled by RAILCOMM_NO_PMIX=1' };
    else if (process.platform !== 'linux') cached = { mod: null, why: `needs Linux (this is ${process.platform})` };
    else cached = loadPmixFrom();
  }
  return cached.mod;
}

/** Why PMIx is or is not available (for railcomm info and error messages). */
export function pmixWhy(): string {
  loadPmix();
  return cached?.why ?? '';
}
