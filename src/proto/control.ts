// Small protocol control messages (CTS, FIN, CREDIT, IPC answers, ...): encoded
// in one reused scratch header and sent at once, or queued behind what already
// waits on the endpoint so they never overtake it.

import { NO_RESOURCE } from '../rail/api.js';
import { ProtoEndpoint } from './endpoint.js';

export class ControlSender {
  /** The header being built; every encode writes here, then one send takes it (all synchronous). */
  // 128: the largest header built here is RTS_DEV (cuda-wire.ts).
  readonly scratch: Uint8Array = new Uint8Array(128);
  readonly view = new DataView(this.scratch.buffer);

  /**
   * Send the first hdrLen bytes of scratch as AM `am` to ep; nothing to a
   * failed peer. To a peer not resolved yet (a revoke to a member we never
   * talked to) it waits in the queue that resolving drains.
   */
  send(ep: ProtoEndpoint, am: number, hdrLen: number): void {
    if (ep.failure !== null) return;
    if (ep.lane === null || ep.hasPending || ep.lane.sendCopy(am, this.scratch, hdrLen, null) === NO_RESOURCE) {
      ep.pushOp(ProtoEndpoint.op(am, this.scratch, hdrLen, null, false, null));
    }
  }
}
