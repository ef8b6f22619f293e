// init(): find out who started this rank, wire up, open rails, and return the
// world communicator (a world of one rank when no launcher started us).

import { Context } from '../proto/context.js';
import { detectLaunch } from '../boot/launch-env.js';
import { KvClient } from '../boot/kv-client.js';
import { Rank0Store } from '../boot/rank0-service.js';
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
}

let world: Promise<Communicator> | null = null;

/** The world communicator. Calling it again returns the same one. */
export function init(options: InitOptions = {}): Promise<Communicator> {
  if (world === null) {
    world = start(options);
    // A failed start may be retried (a fixed environment, a later rank 0).
    world.catch(() => { world = null; });
  }
  return world;
}

async function start(options: InitOptions): Promise<Communicator> {
  const launch = detectLaunch();
  let kv: KeyValueStore | null = null;
  let w: World | null = null;
  if (launch.kv !== undefined) {
    let client: KvClient;
    try {
      client = await KvClient.connect(launch.kv, launch.jobKey, launch.rank);
    } catch (e) {
      throw new RailcommError(ErrorCode.BOOT, `rank ${launch.rank}: cannot reach the launcher's wire-up service at ${launch.kv.host}:${launch.kv.port}: ${(e as Error).message}`, { cause: e });
    }
    // The launcher is gone: this rank must not outlive it (no orphans).
    client.onLost(() => {
      if (w?.isFinalized) return;
      log.error(`rank ${launch.rank}: lost the connection to the launcher; exiting`);
      process.exit(1);
    });
    kv = client;
  } else if (launch.master !== undefined) {
    if (!launch.jobKeySecret && launch.rank === 0) {
      log.warn(`no RAILCOMM_JOB_KEY set: started by ${launch.launcher}, ranks share no secret, so any local process that finds the wire-up port (${launch.master.port}) could join; set RAILCOMM_JOB_KEY to the same hex secret on every rank`);
    }
    const timeout = resolveParams(options.params ?? {}).connectTimeout;
    kv = await Rank0Store.open(launch.master, launch.jobKey, launch.rank, launch.size, timeout);
  }
  const ctx = await Context.create({ params: options.params ?? {}, launch, kv });
  w = new World(ctx, kv);
  const group = Array.from({ length: launch.size }, (_, i) => i);
  return new Communicator(w, group, launch.rank, 0, 1);
}
