// Probes, the point-to-point side (p2p.ts): a probe waits in its context's
// list until a message it matches arrives (checkProbes, called on arrival),
// then learns that message and, for a matched probe, takes it out of matching.

import type { Unexpected } from './unexpected.js';
import { ANY_SOURCE } from './matching.js';
import type { Request, Canceller } from './request.js';
import type { ContextState } from './context-state.js';
import type { ProtoEndpoint } from './endpoint.js';
import { finalizedBeforeSending } from './leaving.js';

/**
 * Settle the probe at once if a queued message matches; else fail it if its
 * only possible sender can never send again (as irecv does); else queue it.
 */
export function startProbe(st: ContextState, probe: Request, sender: ProtoEndpoint | undefined, canceller: Canceller): void {
  const u = st.queues.findArrived(probe.matchSrc, probe.matchTag);
  if (u !== null) { settleProbe(st, probe, u); return; }
  if (sender !== undefined && sender.failure !== null) { probe.fail(sender.failure); return; }
  if (sender !== undefined && sender.peerFinalized) { probe.fail(finalizedBeforeSending(sender.rank, probe)); return; }
  probe.canceller = canceller;
  st.probes.push(probe);
}

/** The world rank a probe depends on, or undefined (ANY_SOURCE, or a context without a group). */
export function probeSender(st: ContextState, probe: Request): number | undefined {
  return probe.matchSrc !== ANY_SOURCE && st.group !== null ? st.group[probe.matchSrc] : undefined;
}

/** A message arrived in st: the waiting probes it matches learn it (a matched probe takes it). */
export function checkProbes(st: ContextState, u: Unexpected): void {
  const probes = st.probes;
  for (let i = 0; i < probes.length; i++) {
    const p = probes[i]!;
    if ((p.matchSrc !== ANY_SOURCE && p.matchSrc !== u.src) || (p.matchTag >= 0 && p.matchTag !== u.tag)) continue;
    probes.splice(i--, 1);
    settleProbe(st, p, u);
    if (p.claim) return;
  }
}

/** Take a waiting probe out of its list; false when it no longer waits. */
export function cancelProbe(st: ContextState, probe: Request): boolean {
  const i = st.probes.indexOf(probe);
  if (i < 0) return false;
  st.probes.splice(i, 1);
  return true;
}

function settleProbe(st: ContextState, probe: Request, u: Unexpected): void {
  if (probe.claim) st.queues.removeArrived(u);
  probe.found = u;
  probe.complete(u.src, u.tag, u.size);
}
