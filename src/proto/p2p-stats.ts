// The point-to-point protocol's counts (p2p.ts snapshot), for `railcomm
// info`, --stats and hang reports: receives posted, messages unexpected,
// rendezvous and single-copy transfers, protocol errors.

import type { ContextState } from './context-state.js';
import type { SingleCopy } from './rndv/single-copy.js';
import type { PointToPoint } from './p2p.js';

export interface P2pSnapshot {
  posted: number; unexpected: number; unexpectedBytes: number; rndvSends: number; rndvRecvs: number; rndvRestarts: number; protocolErrors: number;
  rgetMsgs: number; rgetBytes: number; rdmaReads: number; rdmaReadBytes: number; rdmaFellBack: number; recvsAtCall: number; syncBlocks: number;
}

export function p2pSnapshot(p: PointToPoint, contexts: ReadonlyMap<number, ContextState>, singleCopy: SingleCopy): P2pSnapshot {
  let posted = 0, unexpected = 0, unexpectedBytes = 0;
  for (const st of contexts.values()) {
    posted += st.queues.postedCount;
    unexpected += st.queues.arrivedCount;
    for (const u of st.queues.allArrived()) if (u.data !== null) unexpectedBytes += u.size;
  }
  return { posted, unexpected, unexpectedBytes, rndvSends: p.rndv.sends.size, rndvRecvs: p.rndv.recvs.size, rndvRestarts: p.rndv.restarts, protocolErrors: p.protocolErrors, rgetMsgs: singleCopy.rgetMsgs + 0, rgetBytes: singleCopy.rgetBytes + 0, rdmaReads: p.rdma.reads + 0, rdmaReadBytes: p.rdma.readBytes + 0, rdmaFellBack: p.rdma.fellBack + 0, recvsAtCall: p.atCall.recvsAtCall + 0, syncBlocks: p.atCall.syncBlocks + 0 };
}
