// How a collective runs under RAILCOMM_CHECK: the ranks exchange its
// signature (coll/check.ts) and compare, then run it. Both tags (agreement and
// collective) are taken at the call, in call order, so overlapping calls keep
// their order on every rank.

import { allgatherBruck } from './allgather.js';
import { SIG_WORDS, verifySignatures } from './check.js';
import type { CollPlan } from '../collectives.js';
import type { CollComm } from './engine.js';
import type { CollectivePlanner } from '../collectives.js';
import type { SharedCollectives } from './shared.js';

/** What the check needs from its communicator. */
export interface CheckHost {
  readonly size: number;
  readonly planner: CollectivePlanner;
  /** The next collective tag: a CollComm on it, or (needed false) a stand-in that must not be used. */
  takeTag(needed: boolean): CollComm;
  /** size x SIG_WORDS doubles for the agreements through the shared segment. */
  readonly agreeBuffer: Float64Array;
}

/**
 * Agree on p, then run it. Where the communicator has a shared segment the
 * agreement goes through it, and a shared-memory collective runs in the same
 * turn of the segment's queue: every rank's queue then holds the calls in
 * call order, whichever path each call takes (a mismatched pair may take
 * different paths; both sides still meet in the agreement first).
 */
export function checkedRun(h: CheckHost, p: CollPlan, call: number): Promise<void> {
  const sig = p.sig!;
  const sh = h.planner.shared;
  if (sh === null) {
    const agree = h.takeTag(true), run = h.takeTag(true);
    return agreeP2p(agree, h.size, sig, call).then(() => p.run(run));
  }
  // An attached segment needs no point-to-point: no CollComm is built (the tag is still taken).
  const agree = h.takeTag(!sh.attached);
  // One buffer per communicator: the segment's queue runs one agreement at a time.
  const all = h.agreeBuffer;
  if (p.shared === true) {
    h.takeTag(false);
    return sh.run(agree, () => agreeShared(sh, all, sig, call, p.step!));
  }
  const run = h.takeTag(true);
  return sh.run(agree, () => agreeShared(sh, all, sig, call, null)).then(() => p.run(run));
}

async function agreeP2p(c: CollComm, size: number, sig: readonly number[], call: number): Promise<void> {
  const all = new Float64Array(SIG_WORDS * size);
  await allgatherBruck(c, Float64Array.from(sig), all);
  verifySignatures(all, size, call);
}

/** The agreement through the segment, then `step`; null when nothing had to wait (no promise made). */
function agreeShared(sh: SharedCollectives, all: Float64Array, sig: readonly number[], call: number, step: (() => Promise<void> | null) | null): Promise<void> | null {
  const size = all.length / SIG_WORDS;
  const w = sh.exchangeWords(sig, all);
  if (w !== null) return agreeSharedAfter(sh, w, all, size, call, step);
  verifySignatures(all, size, call);
  return step === null ? null : step();
}

/** The rest once the agreement's phase passed: on the loop, or at a synchronous call that comes first. */
function agreeSharedAfter(sh: SharedCollectives, w: Promise<void>, all: Float64Array, size: number, call: number, step: (() => Promise<void> | null) | null): Promise<void> {
  return sh.after(w, () => {
    verifySignatures(all, size, call);
    return step === null ? null : step();
  });
}
