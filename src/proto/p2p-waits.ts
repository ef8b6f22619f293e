// What the point-to-point protocol waits for, for the hang report and the
// rails' keepalive checks: posted receives and probes, unexpected messages,
// rendezvous in flight and sends queued, per context. Cold paths, split from
// p2p.ts; they read its state through P2pWaitsView.

import type { HangWait } from './hang.js';
import { ANY_SOURCE } from './matching.js';
import type { ProtoEndpoint } from './endpoint.js';
import { largeSendText, type Rendezvous } from './rndv/rendezvous.js';
import type { ContextState } from './context-state.js';
import type { P2pHost } from './p2p.js';

export interface P2pWaitsView {
  readonly host: P2pHost;
  readonly contexts: ReadonlyMap<number, ContextState>;
  readonly rndv: Rendezvous;
}

const srcText = (src: number): string => (src === ANY_SOURCE ? 'ANY_SOURCE' : `rank ${src}`);
const tagText = (t: number): string => (t < 0 ? 'ANY_TAG' : String(t));
const queuedText = (ep: ProtoEndpoint): string => `sends to world rank ${ep.rank} queued (${ep.lane === null ? 'peer address not resolved yet' : 'rail has no resources'})`;

/** Unexpected messages from one source shown one by one; more are summed up in one line. */
const UNEXPECTED_SHOWN = 3;

/**
 * A context's unexpected messages, per source: a few one line each, more as
 * one line that counts them (a rank with hundreds of them must not push what
 * it waits for out of a report that is cut).
 */
function unexpectedLines(on: string, st: ContextState): string[] {
  const bySrc = new Map<number, Array<{ tag: number; size: number }>>();
  for (const u of st.queues.allArrived()) {
    let l = bySrc.get(u.src);
    if (l === undefined) bySrc.set(u.src, (l = []));
    l.push({ tag: u.tag, size: u.size });
  }
  const out: string[] = [];
  for (const [src, l] of bySrc) {
    if (l.length <= UNEXPECTED_SHOWN) {
      for (const u of l) out.push(`unexpected message on ${on} from rank ${src} tag ${u.tag}, ${u.size} B, not received yet`);
      continue;
    }
    const tags = [...new Set(l.map((u) => u.tag))].sort((a, b) => a - b);
    const bytes = l.reduce((n, u) => n + u.size, 0);
    out.push(`${l.length} unexpected messages on ${on} from rank ${src} (tags ${tags.length > 8 ? `${tags.slice(0, 8).join(', ')}, ...` : tags.join(', ')}; ${bytes} B in all; the first tag ${l[0]!.tag}, ${l[0]!.size} B), not received yet`);
  }
  return out;
}

/** What this rank waits for, each with the world rank it depends on (hang report; rare). */
export function collectWaits(v: P2pWaitsView, out: HangWait[]): void {
  for (const [ctx, st] of v.contexts) {
    const world = (r: number): number => (st.group === null ? r : st.group[r] ?? -1);
    const on = `context ${ctx}${st.collective ? ' (collectives)' : ''}`;
    for (const r of st.queues.allPosted()) {
      const any = r.matchSrc === ANY_SOURCE;
      out.push({ peer: any ? 'any' : world(r.matchSrc), what: `receive on ${on} from ${srcText(r.matchSrc)} tag ${tagText(r.matchTag)} (${r.buf.byteLength} B buffer), no matching message yet` });
    }
    for (const p of st.probes) {
      const any = p.matchSrc === ANY_SOURCE;
      out.push({ peer: any ? 'any' : world(p.matchSrc), what: `probe on ${on} from ${srcText(p.matchSrc)} tag ${tagText(p.matchTag)}` });
    }
  }
  // Rendezvous in flight before the sends the peer has not matched: the former are this rank's own waits.
  for (const r of v.rndv.recvs.values()) out.push({ peer: r.peerWorld, what: `large receive from world rank ${r.peerWorld}: ${r.progressBytes} of ${r.bytes} B arrived` });
  for (const r of v.rndv.sends.values()) out.push({ peer: r.peerWorld, what: largeSendText(r) });
  for (const ep of v.host.allEndpoints()) if (ep.hasPending) out.push({ peer: ep.rank, what: queuedText(ep) });
}

/** What waits for this rank: messages no receive took yet (they name no peer it depends on; listed after every wait). */
export function collectUnexpected(v: P2pWaitsView, out: HangWait[]): void {
  for (const [ctx, st] of v.contexts) {
    for (const what of unexpectedLines(`context ${ctx}${st.collective ? ' (collectives)' : ''}`, st)) out.push({ peer: null, what });
  }
}

/**
 * Whether this rank waits on the peer: a posted receive or probe it could
 * satisfy (ANY_SOURCE included), a rendezvous with it, or sends queued to it.
 * For rails' keepalive checks (rare); scans the posted queues.
 */
export function waitsOn(v: P2pWaitsView, ep: ProtoEndpoint): boolean {
  if (ep.hasPending || ep.sendsActive.size > 0 || ep.recvsActive.size > 0) return true;
  for (const st of v.contexts.values()) {
    const src = st.group === null ? ep.rank : st.group.indexOf(ep.rank);
    if (src < 0) continue;
    if (st.queues.postedFor(src, true).length > 0) return true;
    for (const p of st.probes) if (p.matchSrc === ANY_SOURCE || p.matchSrc === src) return true;
  }
  return v.rndv.sendsTo(ep);
}
