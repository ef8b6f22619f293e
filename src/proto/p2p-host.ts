// What the point-to-point protocol (p2p.ts) needs from its owner, the
// Context: the job's size and this rank in it, the eager limit, endpoints
// by world rank, and the parameters its device datapaths read.

import type { Logger } from '../core/log.js';
import type { Params } from '../core/params.js';
import type { ProtoEndpoint } from './endpoint.js';

/** What the protocol needs from its owner (the Context). */
export interface P2pHost {
  readonly worldRank: number;
  readonly worldSize: number;
  /** This job's ranks: world ranks from here on are other jobs' (inter-job.ts). Absent: no other jobs. */
  readonly jobSize?: number;
  readonly log: Logger;
  /** Sends up to this size complete at once, never waiting for the receiver. */
  readonly eagerLimit: number;
  /** Large messages may be read by the receiver straight from the sender's memory where a lane can. */
  readonly singleCopy?: boolean;
  endpointFor(world: number): ProtoEndpoint;
  /** The endpoint if this rank ever used that peer (no lookup started). */
  existingEndpoint(world: number): ProtoEndpoint | undefined;
  allEndpoints(): Iterable<ProtoEndpoint>;
  /** The parameters (the device datapaths read theirs), and a hook run when the context closes. */
  readonly params?: Params;
  atClose?(fn: () => void): void;
}
