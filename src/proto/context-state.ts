// A communicator context as the point-to-point protocol sees it: its match
// queues, its group, its waiting probes and whether a failure broke it.
// Shared by p2p.ts and the parts split from it (leaving.ts, p2p-waits.ts).

import type { RailcommError } from '../core/errors.js';
import { MatchQueues } from './matching.js';
import type { Request } from './request.js';
import type { Unexpected } from './unexpected.js';

export interface ContextState {
  readonly queues: MatchQueues<Request, Unexpected>;
  /** World rank of each communicator rank, once the communicator registered it. */
  group: readonly number[] | null;
  /** Waiting probes (probe / mprobe), in order. */
  probes: Request[];
  /** A collective context: a member's failure breaks every collective on it. */
  collective: boolean;
  broken: RailcommError | null;
  /** An ANY_SOURCE receive opened connections to every member of another job (reach-out.ts). */
  reachedAll: boolean;
  /** ...and some members belong to another job. */
  outsiders: boolean;
}

export function newContextState(): ContextState {
  return { queues: new MatchQueues<Request, Unexpected>(), group: null, probes: [], collective: false, broken: null, reachedAll: false, outsiders: false };
}
