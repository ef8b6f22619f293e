// A peer is gone, the point-to-point side (p2p.ts peerFailed): its queued
// sends and transfers fail, and so do the receives and probes that only it
// could match; a collective context it belonged to breaks (leaving.ts).

import type { RailcommError } from '../core/errors.js';
import { ANY_SOURCE } from './matching.js';
import type { ProtoEndpoint } from './endpoint.js';
import type { ContextState } from './context-state.js';
import type { Leaving } from './leaving.js';
import type { PointToPoint } from './p2p.js';

/**
 * Everything that waits on ep fails with err; when it failed (not a
 * graceful finalize), pending ANY_SOURCE receives of communicators that
 * contain it fail too.
 */
export function failPeer(p: PointToPoint, contexts: ReadonlyMap<number, ContextState>, leaving: Leaving, ep: ProtoEndpoint, err: RailcommError, graceful: boolean): void {
  for (const op of ep.takePending()) { (op.start ?? op.req)?.fail(err); op.done?.railComplete(err); }
  p.rndv.peerFailed(ep, err);
  p.device.peerFailed(ep);
  p.rdma.peerFailed(ep);
  for (const [ctx, st] of contexts) {
    if (st.group === null) continue;
    const commRank = st.group.indexOf(ep.rank);
    if (commRank < 0) continue;
    if (st.collective && !graceful) {
      // A collective cannot finish without every member: fail it here, and
      // tell the other members, who may never have talked to the dead rank.
      if (leaving.breakContext(st, err)) leaving.revoke(ctx, st, ep.rank);
      continue;
    }
    for (const r of st.queues.postedFor(commRank, !graceful)) { st.queues.removePosted(r); r.fail(err); }
    st.probes = st.probes.filter((pr) => {
      if (pr.matchSrc === commRank || (!graceful && pr.matchSrc === ANY_SOURCE)) { pr.fail(err); return false; }
      return true;
    });
  }
}
