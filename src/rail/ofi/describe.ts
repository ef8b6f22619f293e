// The ofi rail's part of the hang report (rail.ts describeState): what the
// provider has not completed, frames kept out of order and whose turn they
// wait for, senders waiting for room or for a connection.

import { formatId } from '../../core/ids.js';
import type { OfiEndpoint } from './endpoint.js';

/** What the rail holds, as of its last poll: events carries the binding's counts in words 2-3. */
export interface OfiRailState {
  readonly name: string;
  readonly events: Int32Array;
  readonly opsWaiting: number;
  readonly badFrames: number;
  readonly early: ReadonlyArray<ReadonlyMap<number, unknown> | undefined>;
  readonly rxNext: readonly number[];
  readonly heldSlots: number;
  readonly blocked: ReadonlySet<OfiEndpoint>;
  readonly retrying: ReadonlySet<OfiEndpoint>;
}

/** The rail's state in words; null when there is nothing to say. */
export function describeOfiRail(s: OfiRailState): string | null {
  const ev = s.events;
  let early = 0;
  for (const m of s.early) if (m !== undefined) early += m.size;
  const ranks = (eps: Iterable<OfiEndpoint>): string => [...eps].map((e) => formatId(e.peer)).join(' ');
  const parts: string[] = [];
  if (s.opsWaiting > 0) parts.push(`${s.opsWaiting} operations waiting for their completion`);
  if (ev[3]! > 0) parts.push(`${ev[3]} transmits in flight at the last poll`);
  if (ev[2]! > 0) parts.push(`${ev[2]} waiting in the binding for the provider to take them`);
  if (early > 0) parts.push(`${early} frames kept until the ones before them arrive (${s.heldSlots} receive slots held; ${describeEarly(s.early, s.rxNext)})`);
  if (s.badFrames > 0) parts.push(`${s.badFrames} malformed or stale frames dropped`);
  if (s.blocked.size > 0) parts.push(`senders waiting for room: ${ranks(s.blocked)}`);
  if (s.retrying.size > 0) parts.push(`senders waiting for a connection: ${ranks(s.retrying)}`);
  return parts.length === 0 ? null : `ofi rail ${s.name}: ${parts.join('; ')}`;
}

/** Per sender whose frames wait: the frame it waits for and the range it holds ("rank 2 waits for #331, holds 110 of #387-#496"). */
function describeEarly(early: OfiRailState['early'], rxNext: readonly number[]): string {
  const from: string[] = [];
  early.forEach((m, rank) => {
    if (m === undefined || m.size === 0) return;
    const next = rxNext[rank] ?? 0;
    let lo = 0xffffffff, hi = 0;
    for (const s of m.keys()) {
      const d = (s - next) >>> 0;
      if (d < lo) lo = d;
      if (d > hi) hi = d;
    }
    from.push(`rank ${rank} waits for #${next}, holds ${m.size} of #${(next + lo) >>> 0}-#${(next + hi) >>> 0}`);
  });
  return from.join(', ');
}
