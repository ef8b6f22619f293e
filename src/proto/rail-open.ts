// Init steps 6 and 7 of the protocol context: open a rail on each device that
// step 5 picked (progress polls those that are polled), report what each can
// do, then publish this rank's rail addresses and wait for the rest of the job.

import type { Component, Device, Rail, RailEnv } from '../rail/api.js';
import type { Params } from '../core/params.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import type { LaunchInfo } from '../boot/launch-env.js';
import type { KeyValueStore } from '../boot/kv.js';
import { thresholdsFor } from './endpoint.js';
import type { Progress } from './progress.js';
import type { Say } from './rail-select.js';

/** Where the opened rails go. */
export interface OpenHost {
  readonly rails: Rail[];
  readonly progress: Progress;
}

/**
 * Steps 6 and 7, then the wire-up: a failure (a rail that cannot open, a
 * wire-up that times out) leaves the rails opened so far in ctx.rails, for
 * the caller to close.
 */
export async function openRails(ctx: OpenHost, picked: ReadonlyArray<[Component, Device]>, env: RailEnv, launch: LaunchInfo, kv: KeyValueStore | null, params: Params, say: Say): Promise<void> {
  const l6: string[] = [];
  for (const [c, d] of picked) {
    const rail = await c.open(d, env);
    ctx.rails.push(rail);
    if (rail.poll !== undefined && rail.sleep !== undefined) {
      const r = rail as Required<Pick<Rail, 'poll' | 'sleep'>> & Pick<Rail, 'settle'>;
      ctx.progress.addPoller({ poll: () => r.poll(), sleep: (w) => r.sleep(w), settle: () => r.settle?.() });
    }
    l6.push(`${rail.name}: open at ${rail.address()}`);
  }
  say(6, 'open rails', l6);

  // Step 7: capabilities -> protocol tables.
  const l7: string[] = [];
  for (const r of ctx.rails) {
    const t = thresholdsFor(r.caps, params);
    const c = r.caps;
    l7.push(`${r.name}: ${c.reliable ? 'reliable' : 'unreliable'}, ${c.ordered ? 'ordered' : 'unordered'}, put ${c.put ? 'yes' : 'no'}, get ${c.get ? 'yes' : 'no'}, atomics ${c.atomics ? 'yes' : 'no'}, ~${c.latencyUs} us, ~${c.bandwidthMBps} MB/s; ` +
      `short <= ${t.short} B, eager <= ${t.eager} B, zero-copy eager <= ${t.zcopy} B (a blocking send complete at the call <= ${t.now} B), rendezvous above in ${t.chunk} B chunks`);
  }
  say(7, 'rail capabilities and protocol tables', l7);

  if (kv !== null) {
    // Every rail's address, by component (one rank may have several tcp rails: one per device).
    const addrs: Record<string, string[]> = {};
    for (const r of ctx.rails) if (r.component !== 'self') (addrs[r.component] ??= []).push(r.address());
    await kv.put(`rails/${launch.rank}`, JSON.stringify(addrs));
    if (launch.launcher === 'railcomm') {
      await kv.fence(); // railcomm run stops a job whose rank died before this
    } else {
      // No launcher of ours watches the job: a rank that never arrives must not hang the others.
      const ms = params.connectTimeout;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new RailcommError(ErrorCode.BOOT,
          `rank ${launch.rank}: not all ${launch.size} ranks reached the wire-up within ${ms} ms (RAILCOMM_CONNECT_TIMEOUT); ${launch.wireup?.startsWith('PMIx') === true
            ? 'every rank the launcher started must call init()'
            : 'start every rank with the same MASTER_ADDR:MASTER_PORT, the same RAILCOMM_JOB_KEY, and distinct ranks'}`)), ms);
      });
      try { await Promise.race([kv.fence(), late]); } finally { clearTimeout(timer); }
    }
  }
}
