// Receives from another job's ranks (inter-communicators: ports, spawn).
// This rank's wire-up service announces only its own job's deaths, and a
// connection to another job's rank exists only once traffic made one: a
// receive from a rank that died before any traffic would wait for ever. So
// the first receive (or probe) that could match such a rank opens the
// connection (a credit message, which the peer takes as nothing): a rank that
// is gone shows as a connection that fails (ERR_PEER_FAILED).

import { RailcommError, ErrorCode } from '../core/errors.js';
import type { ProtoEndpoint } from './endpoint.js';
import type { ContextState } from './context-state.js';
import type { P2pHost } from './p2p-host.js';

export class ReachOut {
  private readonly host: P2pHost;
  private readonly sendCredit: (ep: ProtoEndpoint) => void;

  constructor(host: P2pHost, sendCredit: (ep: ProtoEndpoint) => void) {
    this.host = host;
    this.sendCredit = sendCredit;
  }

  /** Whether world rank w belongs to another job. */
  outsider(w: number): boolean {
    return w >= (this.host.jobSize ?? Infinity);
  }

  /** A receive naming another job's rank: its endpoint, the connection opened the first time. */
  one(world: number): ProtoEndpoint {
    const ep = this.host.endpointFor(world);
    if (ep.reachedOut || ep.failure !== null) return ep;
    ep.reachedOut = true;
    if (ep.txSeq === 0) this.sendCredit(ep);
    return ep;
  }

  /**
   * An ANY_SOURCE receive or probe in st: every rank of another job it could
   * match is reached (once per context); then, when every member is known to
   * have failed, the error to fail it with (no rank can ever send it), else null.
   */
  all(st: ContextState): RailcommError | null {
    const js = this.host.jobSize, g = st.group;
    if (js === undefined || g === null) return null;
    if (!st.reachedAll) {
      st.reachedAll = true;
      for (let i = 0; i < g.length; i++) if (g[i]! >= js) { this.one(g[i]!); st.outsiders = true; }
    }
    return st.outsiders ? this.allGone(g) : null;
  }

  private allGone(g: readonly number[]): RailcommError | null {
    let last: RailcommError | null = null;
    for (let i = 0; i < g.length; i++) {
      const ep = this.host.existingEndpoint(g[i]!);
      if (ep === undefined || ep.failure === null) return null;
      last = ep.failure;
    }
    return last === null ? null : new RailcommError(ErrorCode.PEER_FAILED, `every rank an ANY_SOURCE receive here could match has failed (the last: ${last.message})`, { cause: last });
  }
}
