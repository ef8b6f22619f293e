// init(): find out who started this rank, wire up, open rails, and return the
// world communicator (a world of one rank when no launcher started us).

import { Context } from '../proto/context.js';
import { detectLaunch, ENV } from '../boot/launch-env.js';
import { KvClient } from '../boot/kv-client.js';
import { endWithParent, launcherGone } from '../boot/launcher-tie.js';
import { blockingStdio } from '../boot/rank-stdio.js';
import { Rank0Store } from '../boot/rank0-service.js';
import { PmixStore } from '../boot/pmix-store.js';
import { loadPmix, pmixWhy } from '../boot/pmix.js';
import { removeJobSegments } from '../native/addon.js';
import type { KeyValueStore } from '../boot/kv.js';
import { resolveParams } from '../core/params.js';
import type { ParamOptions } from '../core/params.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import { log } from '../core/log.js';
import { Communicator } from './communicator.js';
import { World } from './world.js';

export interface InitOptions {
  /** Parameters by name (eagerLimit or RAILCOMM_EAGER_LIMIT); they win over the environment. */
  params?: ParamOptions;
  /**
   * Check every collective against the other ranks' call before running it
   * (RAILCOMM_CHECK): mismatches fail with ERR_COLLECTIVE_MISMATCH instead of
   * wrong results or hangs. Every rank must choose alike.
   */
  check?: boolean;
}

// Loading railcomm in a rank of railcomm run makes its output pipes blocking (rank-stdio.ts):
// a line printed before process.exit() must reach the launcher, even one printed before init().
blockingStdio();
// And it ends with its launcher from now on, not only once init() has reached it: a
// launcher that dies first (SIGKILL, a closed terminal) must not leave ranks behind.
if (process.env[ENV.kv] !== undefined) endWithParent();

let world: Promise<Communicator> | null = null;
/** The world once started: init() after its finalize() is an error, not a second world. */
let started: Communicator | null = null;

/** The world communicator. Calling it again returns the same one; after finalize() it rejects with ERR_FINALIZED. */
export function init(options: InitOptions = {}): Promise<Communicator> {
  if (started !== null && started.world.isFinalized) {
    return Promise.reject(new RailcommError(ErrorCode.FINALIZED, 'init() after finalize(): this rank already ended its world and railcomm cannot start another in the same process (nor can MPI); call init() once at the start and finalize() once at the end'));
  }
  if (options === null || typeof options !== 'object') {
    return Promise.reject(new RailcommError(ErrorCode.INVALID_ARG, `init(options): options must be an object such as { params: { eagerLimit: 65536 }, check: true }, got ${options === null ? 'null' : typeof options}`));
  }
  if (options.check !== undefined && typeof options.check !== 'boolean') {
    return Promise.reject(new RailcommError(ErrorCode.INVALID_ARG, `init({ check }): check must be true or false, got ${typeof options.check}`));
  }
  if (options.params !== undefined && (options.params === null || typeof options.params !== 'object')) {
    return Promise.reject(new RailcommError(ErrorCode.INVALID_ARG, `init({ params }): params must be an object of parameters by name, such as { eagerLimit: 65536 }, got ${options.params === null ? 'null' : typeof options.params}`));
  }
  const asked = JSON.stringify(options);
  if (world === null) {
    firstOptions = asked;
    world = start(options.check === undefined ? options : { params: { ...options.params, check: options.check } });
    world.then((c) => { started = c; }, () => { world = null; });
  } else if (asked !== '{}' && asked !== firstOptions && !warnedOptions) {
    // The same world again: options apply from the first call only. Said once, not thrown (libraries call init() too).
    warnedOptions = true;
    log.warn(`init(${asked}): the world was already started with init(${firstOptions}); these options are ignored (every init() returns the first call's world)`);
  }
  return world;
}

/** The first init()'s options (JSON), and whether a later call with others was warned about. */
let firstOptions = '{}';
let warnedOptions = false;

async function start(options: InitOptions): Promise<Communicator> {
  const launch = detectLaunch();
  // Bad parameters say so (ERR_INVALID_ARG) before any wire-up, not as a failure to reach the launcher.
  const params = resolveParams(options.params ?? {});
  let kv: KeyValueStore | null = null;
  let w: World | null = null;
  const pmix = launch.kv === undefined && launch.pmix !== undefined ? loadPmix() : null;
  if (launch.kv !== undefined) {
    const gone = launcherGone();
    if (gone !== null) throw new RailcommError(ErrorCode.BOOT, `rank ${launch.rank}: ${gone}`);
    let client: KvClient;
    try {
      client = await KvClient.connectRetrying(launch.kv, launch.jobKey, launch.rank, params.connectTimeout);
    } catch (e) {
      throw new RailcommError(ErrorCode.BOOT, `rank ${launch.rank}: cannot reach the launcher's wire-up service at ${launch.kv.host}:${launch.kv.port}: ${(e as Error).message}`, { cause: e });
    }
    // The launcher is gone: this rank must not outlive it (no orphans), also
    // when it is too busy to see the connection close (launcher-tie.ts).
    endWithParent();
    client.onLost(() => {
      if (w?.isFinalized) return;
      log.error(`rank ${launch.rank}: lost the connection to the launcher; exiting`);
      process.exit(1);
    });
    kv = client;
    launch.wireup = `railcomm run's service at ${launch.kv.host}:${launch.kv.port}`;
  } else if (pmix !== null) {
    // The launcher's PMIx server: no port to agree on, and the job key travels
    // where only members of the job can read it.
    const store = await PmixStore.open(pmix, launch, params.connectTimeout);
    launch.jobKey = store.jobKey;
    launch.jobKeySecret = true;
    if (store.identity.localSize > 0 && store.identity.localRank >= 0) {
      launch.localSize = store.identity.localSize;
      launch.localRank = store.identity.localRank;
    }
    launch.wireup = `PMIx (namespace ${store.identity.namespace}, ${store.identity.version.split(' (')[0]})`;
    log.debug(`rank ${launch.rank}: wire-up through ${launch.wireup}`);
    // As under railcomm run: a rank must not outlive its launcher (no orphans).
    store.onLost(() => {
      if (w?.isFinalized) return;
      log.error(`rank ${launch.rank}: lost the connection to the launcher's PMIx server; exiting`);
      // No launcher of ours will remove the job's shared-memory segments now; the job is dead.
      removeJobSegments(launch.jobId, launch.jobKey);
      process.exit(1);
    });
    kv = store;
  } else if (launch.master !== undefined) {
    if (launch.pmix !== undefined) log.debug(`rank ${launch.rank}: PMIx not used (${pmixWhy()}); wire-up through MASTER_ADDR:MASTER_PORT`);
    launch.wireup = `rank 0's service at ${launch.master.host}:${launch.master.port}${launch.pmix !== undefined ? ` (PMIx unavailable: ${pmixWhy()})` : ''}`;
    if (!launch.jobKeySecret && launch.rank === 0) {
      log.warn(`no RAILCOMM_JOB_KEY set: started by ${launch.launcher}, ranks share no secret, so any local process that finds the wire-up port (${launch.master.port}) could join; set RAILCOMM_JOB_KEY to the same hex secret on every rank`);
    }
    kv = await Rank0Store.open(launch.master, launch.jobKey, launch.rank, launch.size, params.connectTimeout);
  } else if (launch.pmix !== undefined) {
    throw new RailcommError(ErrorCode.BOOT, `started by ${launch.launcher} with PMIx, but railcomm's PMIx module is unavailable (${pmixWhy()}) and MASTER_ADDR and MASTER_PORT are not set: install Open MPI's PMIx library (Debian libpmix2, which openmpi-bin brings) or set RAILCOMM_PMIX_LIB to its file, or give every rank MASTER_ADDR=<host of rank 0> and MASTER_PORT=<free port> (for mpirun: -x MASTER_ADDR=... -x MASTER_PORT=...)`);
  } else {
    launch.wireup = 'none (a world of one)';
  }
  const ctx = await Context.create({ params: options.params ?? {}, launch, kv });
  w = new World(ctx, kv);
  const group = Array.from({ length: launch.size }, (_, i) => i);
  const comm = new Communicator(w, group, launch.rank, 0, 1);
  // Started by comm.spawn (railcomm run told us the parent's port): connect to it before the program runs.
  const parentPort = process.env[ENV.parentPort];
  if (parentPort !== undefined && parentPort !== '') {
    const { connectParent } = await import('./spawn.js');
    w.parent = await connectParent(comm, parentPort);
  }
  return comm;
}
