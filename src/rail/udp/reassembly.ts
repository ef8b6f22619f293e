// Reassembly of in-order segments into active messages, with bounded memory:
// a whole fragment goes up straight from its datagram; a chunked one is
// gathered into the buffer its handler's place() names (rendezvous data lands
// in the user's buffer) or else into one reused buffer per peer, at most one
// fragment at a time (segments arrive in order, so fragments never interleave).

import type { TrafficCounters } from '../../core/counters.js';
import type { AmHandler, RailEndpoint, RxFrame } from '../api.js';
import type { UdpCounters } from './counters.js';
import {
  AM_CONTROL, CHUNK_BYTES, COMMON_BYTES, FLAG_BYE, RECORD_BYTES, T_CHUNK, T_FRAG,
  getAm, getFragId, getHdrLen, getOffset, getPayLen, getType, recordAm, recordFlags, recordHdrLen, recordPayLen,
} from './wire.js';

/** Who the messages are for, and who hears about a peer's mistakes. */
export interface ReassemblyOwner {
  readonly endpoint: RailEndpoint;
  readonly counters: TrafficCounters;
  /** The peer's BYE arrived (it closed in order). */
  bye(): void;
  /** The peer sent something that cannot be true. */
  protocolError(why: string): void;
}

export class Reassembler {
  private readonly handlers: ReadonlyArray<AmHandler | undefined>;
  private readonly railCounters: UdpCounters;
  private readonly owner: ReassemblyOwner;
  private asmHandler: AmHandler | null = null;
  private asmActive = false;
  private asmFragId = 0;
  private asmAm = 0;
  private asmOff = 0;
  private asmPayLen = 0;
  private asmHdrLen = 0;
  /** Placed: the handler's buffer; otherwise null and the bytes gather in asmBuf after the header. */
  private asmTarget: Uint8Array | null = null;
  private asmDiscard = false;
  /** The session ended (a handler may end it in the middle of a datagram of several fragments: the rest are dropped with it). */
  private ended = false;
  private asmBuf: Buffer | null = null;
  private readonly savedHdr: Buffer;
  private readonly savedHdrView: DataView;
  private readonly rx: RxFrame;

  constructor(handlers: ReadonlyArray<AmHandler | undefined>, railCounters: UdpCounters, owner: ReassemblyOwner, hdrMax: number) {
    this.handlers = handlers;
    this.railCounters = railCounters;
    this.owner = owner;
    this.savedHdr = Buffer.alloc(Math.max(8, hdrMax));
    this.savedHdrView = new DataView(this.savedHdr.buffer, this.savedHdr.byteOffset, this.savedHdr.byteLength);
    this.rx = { buf: this.savedHdr, view: this.savedHdrView, hdrOff: 0, hdrLen: 0, payOff: 0, payLen: 0, placed: null, words: null };
  }

  /** Forget the fragment in progress and its buffers (the session ended). */
  reset(): void {
    this.ended = true;
    this.asmBuf = null;
    this.asmTarget = null;
    this.asmHandler = null;
    this.asmActive = false;
  }

  /** Deliver one in-order segment: a whole fragment, or a chunk of one. */
  deliver(buf: Buffer, v: DataView, len: number): void {
    try {
      if (getType(v) === T_FRAG) {
        // One record, or several packed by the sender (checkDatagram made sure they add up to len).
        for (let at = COMMON_BYTES; at < len && !this.ended;) at = this.deliverFrag(buf, v, at);
      } else if (getType(v) === T_CHUNK) this.deliverChunk(buf, v, len);
    } catch (e) {
      this.owner.protocolError(`an active message handler threw: ${(e as Error)?.stack ?? String(e)}`);
    }
  }

  /** Deliver the fragment whose record is at `at`; where the next record starts (the datagram's length after the last; past it after an error). */
  private deliverFrag(buf: Buffer, v: DataView, at: number): number {
    const am = recordAm(v, at);
    const hdrLen = recordHdrLen(v, at);
    const payLen = recordPayLen(v, at);
    const hdrOff = at + RECORD_BYTES;
    const next = hdrOff + hdrLen + payLen;
    if (am === AM_CONTROL) {
      if (recordFlags(v, at) & FLAG_BYE) this.owner.bye();
      return next;
    }
    if (this.asmActive) { this.owner.protocolError('a whole fragment arrived inside a fragment sent in chunks'); return Infinity; }
    const h = this.handlers[am];
    if (h === undefined) { this.railCounters.dropProtocol++; this.owner.protocolError(`unknown active message id ${am}`); return Infinity; }
    const rx = this.rx;
    rx.buf = buf; rx.view = v;
    rx.hdrOff = hdrOff; rx.hdrLen = hdrLen;
    rx.payOff = hdrOff + hdrLen; rx.payLen = payLen;
    rx.placed = null;
    this.count(payLen);
    const ep = this.owner.endpoint;
    if (h.place !== undefined && payLen > 0) {
      const t = h.place(ep, rx);
      if (t === null) return next;
      t.set(buf.subarray(rx.payOff, rx.payOff + payLen));
      rx.placed = t;
    }
    h.recv(ep, rx);
    return next;
  }

  private deliverChunk(buf: Buffer, v: DataView, len: number): void {
    const off = getOffset(v);
    const hdrLen = getHdrLen(v);
    const payLen = getPayLen(v);
    const fragId = getFragId(v);
    let at = CHUNK_BYTES;
    const ep = this.owner.endpoint;
    if (off === 0) {
      if (this.asmActive) { this.owner.protocolError('a new fragment started before the last one ended'); return; }
      const am = getAm(v);
      const h = this.handlers[am];
      if (h === undefined || am === AM_CONTROL) { this.railCounters.dropProtocol++; this.owner.protocolError(`unknown active message id ${am}`); return; }
      this.asmActive = true;
      this.asmHandler = h;
      this.asmFragId = fragId;
      this.asmAm = am;
      this.asmOff = 0;
      this.asmPayLen = payLen;
      this.asmHdrLen = hdrLen;
      this.asmDiscard = false;
      this.asmTarget = null;
      buf.copy(this.savedHdr, 0, at, at + hdrLen);
      if (h.place !== undefined) {
        const rx = this.rx;
        rx.buf = buf; rx.view = v; rx.hdrOff = at; rx.hdrLen = hdrLen; rx.payOff = at + hdrLen; rx.payLen = payLen; rx.placed = null;
        const t = h.place(ep, rx);
        if (t === null) this.asmDiscard = true; else this.asmTarget = t;
      } else {
        const need = hdrLen + payLen;
        if (this.asmBuf === null || this.asmBuf.length < need) this.asmBuf = Buffer.allocUnsafeSlow(Math.max(need, 65536));
        buf.copy(this.asmBuf, 0, at, at + hdrLen);
      }
      at += hdrLen;
    } else if (!this.asmActive || fragId !== this.asmFragId || off !== this.asmOff || getAm(v) !== this.asmAm || payLen !== this.asmPayLen) {
      this.owner.protocolError(`chunk of fragment ${fragId} at offset ${off} does not follow the fragment in progress`);
      return;
    }
    const n = len - at;
    if (this.asmTarget !== null) this.asmTarget.set(buf.subarray(at, len), off);
    else if (!this.asmDiscard) buf.copy(this.asmBuf!, this.asmHdrLen + off, at, len);
    this.asmOff = off + n;
    if (this.asmOff < this.asmPayLen) return;
    // The fragment is whole.
    const h = this.asmHandler!;
    this.asmActive = false;
    this.asmHandler = null;
    if (this.asmDiscard) return;
    const rx = this.rx;
    rx.hdrOff = 0; rx.hdrLen = this.asmHdrLen; rx.payOff = this.asmHdrLen; rx.payLen = this.asmPayLen;
    if (this.asmTarget !== null) {
      rx.buf = this.savedHdr; rx.view = this.savedHdrView; rx.placed = this.asmTarget;
      this.asmTarget = null;
    } else {
      const b = this.asmBuf!;
      rx.buf = b; rx.view = new DataView(b.buffer, b.byteOffset, b.byteLength); rx.placed = null;
      // Keep large reassembly buffers only while they are in use (bounded memory per idle peer).
      if (b.length > 1 << 20) this.asmBuf = null;
    }
    this.count(this.asmPayLen);
    h.recv(ep, rx);
  }

  private count(payLen: number): void {
    const a = this.owner.counters;
    const b = this.railCounters;
    a.msgsRecv++; a.bytesRecv += payLen;
    b.msgsRecv++; b.bytesRecv += payLen;
  }
}
