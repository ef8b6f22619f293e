// A message taken out of matching by a matched probe (mprobe / improbe):
// nobody else can receive it; recv() receives exactly it, once.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { asBytes } from '../core/bytes.js';
import type { Status } from '../proto/request.js';

export interface ClaimedReceiver {
  receiveClaimed(buf: Uint8Array, token: unknown): Promise<Status>;
}

export class Message {
  readonly source: number;
  readonly tag: number;
  /** Size of the message in bytes. */
  readonly bytes: number;
  private token: unknown;
  private readonly owner: ClaimedReceiver;

  constructor(owner: ClaimedReceiver, source: number, tag: number, bytes: number, token: unknown) {
    this.owner = owner;
    this.source = source;
    this.tag = tag;
    this.bytes = bytes;
    this.token = token;
  }

  /** Receive this message into buf (at least `bytes` long, else ERR_TRUNCATE). */
  recv(buf: ArrayBufferView): Promise<Status> {
    if (this.token === null) throw new RailcommError(ErrorCode.INVALID_ARG, 'this matched message was already received; a Message is received once');
    // A bad buffer (or a finalized rank) throws at the call, as recv's does: the message stays claimed for another try.
    const p = this.owner.receiveClaimed(asBytes(buf, 'receive buffer'), this.token);
    this.token = null;
    return p;
  }
}
