// Wire-up through the launcher's PMIx server (Open MPI's mpirun, srun
// --mpi=pmix): put is PMIx_Put + Commit, fence is PMIx_Fence with collected
// data, get asks for the key of the rank its name ends with ('rails/3' -> 3).

import { randomBytes } from 'node:crypto';
import type { KeyValueStore } from './kv.js';
import type { PmixIdentity, PmixModule } from './pmix.js';
import type { LaunchInfo } from './launch-env.js';
import { RailcommError, ErrorCode } from '../core/errors.js';

/** Where rank 0 publishes the job key; only members of the job can read the PMIx store. */
export const JOB_KEY_KEY = 'railcomm/job-key';

const seconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));
const codeOf = (e: unknown): string => String((e as { code?: unknown } | null)?.code ?? '');

/** The rank whose data holds `key`: the number after its last slash, else rank 0 (job-wide keys). */
export function ownerOf(key: string): number {
  const m = /\/(\d+)$/.exec(key);
  return m === null ? 0 : Number(m[1]);
}

export class PmixStore implements KeyValueStore {
  private readonly mod: PmixModule;
  private readonly timeoutMs: number;
  private finalized: Promise<void> | null = null;
  readonly identity: PmixIdentity;
  /** The job key every rank uses: RAILCOMM_JOB_KEY if the user set it, else rank 0's random secret. */
  readonly jobKey: string;

  private constructor(mod: PmixModule, identity: PmixIdentity, timeoutMs: number, jobKey: string) {
    this.mod = mod;
    this.identity = identity;
    this.timeoutMs = timeoutMs;
    this.jobKey = jobKey;
  }

  /**
   * PMIx_Init, check the server agrees with the launcher's variables, and
   * share the job key: rank 0 puts it, everyone fences once and reads it.
   */
  static async open(mod: PmixModule, launch: LaunchInfo, timeoutMs: number): Promise<PmixStore> {
    let id: PmixIdentity;
    try {
      id = mod.init();
    } catch (e) {
      throw new RailcommError(ErrorCode.BOOT, `rank ${launch.rank}: cannot connect to the launcher's PMIx server (${(e as Error).message}); set RAILCOMM_NO_PMIX=1 and MASTER_ADDR/MASTER_PORT to wire up without PMIx`, { cause: e });
    }
    if (id.rank !== launch.rank || (id.size >= 0 && id.size !== launch.size)) {
      throw new RailcommError(ErrorCode.BOOT, `the PMIx server says this is rank ${id.rank} of ${id.size} (namespace ${id.namespace}), the ${launch.launcher} variables say rank ${launch.rank} of ${launch.size}; was this process started by another launcher inside the job? Set RAILCOMM_NO_PMIX=1 to ignore PMIx`);
    }
    const wrap = (what: string, e: unknown): RailcommError => {
      if (e instanceof RailcommError) return e;
      const late = codeOf(e) === 'PMIX_ERR_TIMEOUT';
      return new RailcommError(late ? ErrorCode.TIMEOUT : ErrorCode.BOOT,
        `rank ${launch.rank}: ${what} through PMIx failed${late ? ` (not all ${launch.size} ranks arrived within ${timeoutMs} ms, RAILCOMM_CONNECT_TIMEOUT)` : ''}: ${(e as Error).message}; every rank the launcher started must call init()`, { cause: e });
    };
    const mine = launch.jobKeySecret && launch.jobKey !== '' ? launch.jobKey : '';
    try {
      if (id.rank === 0) {
        mod.put(JOB_KEY_KEY, mine || randomBytes(32).toString('hex'));
        mod.commit();
      }
      await mod.fence(seconds(timeoutMs));
    } catch (e) {
      throw wrap('the first fence', e);
    }
    const store = new PmixStore(mod, id, timeoutMs, mine);
    if (mine !== '') return store;
    let shared: string;
    try {
      shared = await store.get(JOB_KEY_KEY, timeoutMs);
    } catch (e) {
      throw wrap("reading rank 0's job key", e);
    }
    if (!/^[0-9a-f]{16,}$/i.test(shared)) throw new RailcommError(ErrorCode.BOOT, `rank 0 published a job key that is not hex (${shared.length} characters); set the same RAILCOMM_JOB_KEY on every rank`);
    return new PmixStore(mod, id, timeoutMs, shared);
  }

  put(key: string, value: string): Promise<void> {
    try {
      this.mod.put(key, value);
      this.mod.commit();
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(new RailcommError(ErrorCode.BOOT, `PMIx put of ${key} failed: ${(e as Error).message}`, { cause: e }));
    }
  }

  async fence(): Promise<void> {
    try {
      await this.mod.fence(seconds(this.timeoutMs));
    } catch (e) {
      throw new RailcommError(codeOf(e) === 'PMIX_ERR_TIMEOUT' ? ErrorCode.TIMEOUT : ErrorCode.BOOT, `PMIx fence failed: ${(e as Error).message}; every rank the launcher started must call init()`, { cause: e });
    }
  }

  /** PMIx_Get with PMIX_TIMEOUT; a key not found yet is asked for again until the deadline. */
  async get(key: string, timeoutMs: number): Promise<string> {
    const rank = ownerOf(key);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        return await this.mod.get(rank, key, seconds(deadline - Date.now()));
      } catch (e) {
        const code = codeOf(e);
        if (code !== 'PMIX_ERR_NOT_FOUND' && code !== 'PMIX_ERR_TIMEOUT') {
          throw new RailcommError(ErrorCode.BOOT, `PMIx get of ${key} from rank ${rank} failed: ${(e as Error).message}`, { cause: e });
        }
        if (Date.now() >= deadline) {
          throw new RailcommError(ErrorCode.TIMEOUT, `rank ${rank} did not publish ${key} through PMIx within ${timeoutMs} ms (RAILCOMM_CONNECT_TIMEOUT)`, { cause: e });
        }
      }
      await new Promise((r) => setTimeout(r, Math.min(100, Math.max(0, deadline - Date.now()))));
    }
  }

  /** PMIx_Finalize once, so the launcher knows this rank ended on purpose. */
  finalize(): Promise<void> {
    this.finalized ??= this.mod.finalize().catch((e: unknown) => {
      throw new RailcommError(ErrorCode.BOOT, `PMIx finalize failed: ${(e as Error).message}`, { cause: e });
    });
    return this.finalized;
  }

  /** Call `lost` if the launcher's PMIx server goes away (the launcher died) before finalize. */
  onLost(lost: () => void): void {
    this.mod.onLost(() => { if (this.finalized === null) lost(); });
  }

  /** PMIx servers are local daemons: their address says nothing about the job's network. */
  localAddress(): string | undefined { return undefined; }

  close(): void { /* PMIx_Finalize is asynchronous: finalize() does it */ }
}
