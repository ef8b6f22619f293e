// Decides whether a communicator can use the shared-memory collective path
// (every member is a worker-thread rank of this process) and gives that path
// its segment: rank 0 makes a SharedArrayBuffer and hands it to the others.

import { RailcommError, ErrorCode } from '../../core/errors.js';
import { ThreadShare } from '../../proto/rma/thread-share.js';
import type { Communicator } from '../communicator.js';
import { barrierDissemination, type CollComm } from './engine.js';
import { SharedCollectives, peerFailedError, type SharedHost } from './shared.js';

export function sharedPathFor(comm: Communicator, group: readonly number[], collCtx: number): SharedCollectives | null {
  const ctx = comm.world.ctx;
  const { threads, threadBase } = ctx.launch;
  if (threads < 2 || group.length < 2 || ctx.params.collSharedMax <= 0) return null;
  if (!group.every((w) => w >= threadBase && w < threadBase + threads)) return null;
  const key = `coll/${collCtx}/${group[0]}`;
  const host: SharedHost = {
    spinMs: ctx.oversubscribed ? 0 : ctx.params.spinUs / 1000,
    slotBytes: ctx.params.collSharedSlot & ~63,
    async attach(c: CollComm, bytes: number): Promise<Uint8Array> {
      const share = (ctx.rma.threadShare ??= new ThreadShare(ctx.launch.jobId));
      // Every member's channel exists once all passed this barrier: the offer reaches them all.
      await barrierDissemination(c);
      if (c.rank === 0) {
        const seg = new Uint8Array(new SharedArrayBuffer(bytes));
        share.offer(key, seg);
        return seg;
      }
      const seg = await share.take(key, ctx.params.connectTimeout);
      if (seg === null || seg.byteLength !== bytes) {
        throw new RailcommError(ErrorCode.NO_RAIL, `shared-memory collectives: rank 0's segment did not arrive within ${ctx.params.connectTimeout} ms (RAILCOMM_CONNECT_TIMEOUT)`);
      }
      return seg;
    },
    keep(on: boolean): void {
      ctx.progress.keep(on);
    },
    checkAlive(): void {
      for (const w of group) {
        const f = ctx.existingEndpoint(w)?.failure;
        if (f) throw peerFailedError(w, f);
      }
    },
  };
  return new SharedCollectives(host, group.indexOf(ctx.worldRank), group.length);
}
