// The receiving side of multirail: envelopes from a peer with several lanes
// are taken in their numbers' order, each once (a message sent again after a
// failover, or overtaken on another lane, is held or dropped), and what
// arrived is acknowledged: piggy-backed on our own envelopes, or on its own
// at the end of the event-loop turn when nothing carried it.

import type { AmHandler, RailEndpoint, RxFrame } from '../../rail/api.js';
import { ENV_HDR, envAm, envInnerHdrLen, envNum } from './wire.js';

/** A message that came before its turn, copied until then. */
interface Early {
  am: number;
  hdr: Buffer;
  payload: Buffer;
}

export class LaneReceiver {
  /** The number of the next message to take. */
  expected = 1;
  private readonly early = new Map<number, Early>();
  /** Messages taken since the last acknowledgement went out. */
  owed = 0;
  /** Duplicates dropped (a resend after a failover): --stats. */
  duplicates = 0;
  /** True while a message taken from an envelope is being handled (its handlers ask). */
  delivering = false;

  get acknowledged(): number {
    return (this.expected - 1) >>> 0;
  }

  /**
   * One envelope (rx's header starts with it): deliver its inner message,
   * and any held ones whose turn came, through `table`. Returns false when
   * its AM id has no handler (a peer error).
   */
  take(rep: RailEndpoint, rx: RxFrame, table: ReadonlyArray<AmHandler | undefined>): boolean {
    const v = rx.view;
    const o = rx.hdrOff;
    const num = envNum(v, o);
    const am = envAm(v, o);
    const innerLen = envInnerHdrLen(v, o);
    if (ENV_HDR + innerLen !== rx.hdrLen || table[am] === undefined) return false;
    const d = (num - this.expected) | 0;
    if (d < 0 || this.early.has(num)) { this.duplicates++; this.owed++; return true; }
    if (d > 0) {
      this.early.set(num, {
        am,
        hdr: Buffer.from(rx.buf.subarray(o + ENV_HDR, o + rx.hdrLen)),
        payload: Buffer.from(rx.placed ?? rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen)),
      });
      return true;
    }
    // Its turn: the inner message, as the rail would have delivered it (the
    // frame is the rail's, reused: its fields are put back afterwards).
    const hdrLen = rx.hdrLen;
    rx.hdrOff = o + ENV_HDR;
    rx.hdrLen = innerLen;
    this.advance();
    this.delivering = true;
    try {
      table[am]!.recv(rep, rx);
    } finally {
      this.delivering = false;
      rx.hdrOff = o;
      rx.hdrLen = hdrLen;
    }
    if (this.early.size > 0) this.replay(rep, table);
    return true;
  }

  private advance(): void {
    this.expected = (this.expected + 1) >>> 0 || 1;
    this.owed++;
  }

  private replay(rep: RailEndpoint, table: ReadonlyArray<AmHandler | undefined>): void {
    for (let m = this.early.get(this.expected); m !== undefined; m = this.early.get(this.expected)) {
      this.early.delete(this.expected);
      this.advance();
      const rx: RxFrame = {
        buf: m.payload.length > 0 ? Buffer.concat([m.hdr, m.payload]) : m.hdr,
        view: null as unknown as DataView, hdrOff: 0, hdrLen: m.hdr.length, payOff: m.hdr.length, payLen: m.payload.length, placed: null, words: null,
      };
      rx.view = new DataView(rx.buf.buffer, rx.buf.byteOffset, rx.buf.byteLength);
      this.delivering = true;
      try { table[m.am]!.recv(rep, rx); } finally { this.delivering = false; }
    }
  }
}
