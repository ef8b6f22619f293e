// Incoming byte stream -> frames, for one tcp connection. Socket reads land in
// a reused staging buffer; a frame split across reads is carried over; bulk
// payloads (rendezvous data) are read straight into the buffer the AM handler
// names, by handing that buffer to the socket (net.Socket's onread option).

import type { AmHandler, RxFrame } from '../api.js';
import type { TrafficCounters } from '../../core/counters.js';
import {
  AM_CONTROL, FRAME_HEADER, checkFrameHeader, frameAm, frameFlags, frameHdrLen, framePayLen,
} from './wire.js';

const FRAMES = 0;
const DIRECT = 1;
const SKIP = 2;
const HANDSHAKE = 3;

/** Below this many bytes left, a direct read is not worth a socket read of its own. */
const DIRECT_MIN = 32768;
/**
 * After a bulk payload, the next frame is most likely another bulk frame:
 * read only this much so its payload is not pulled into the staging buffer
 * (and copied a second time) before we know where it goes.
 */
const PEEK_BYTES = 64;
/** Read size during the handshake (its messages are at most 56 bytes). */
const HANDSHAKE_READ = 128;

export interface ReaderSink {
  /** Handler for an AM id, or undefined when the id is unknown. */
  handler(am: number): AmHandler | undefined;
  /** Handle one rail control frame (am id 0). */
  control(flags: number): void;
  /** The stream can no longer be trusted. */
  protocolError(reason: string): void;
  /** The endpoint that frames are delivered for (passed to handlers). */
  readonly endpoint: Parameters<AmHandler['recv']>[0];
  /** Counted per delivered frame: the endpoint's and the rail's. */
  readonly counters: TrafficCounters;
  readonly railCounters: TrafficCounters;
}

export class FrameReader {
  // Small until the peer proved the job key (startFrames): unauthenticated
  // connections cost little memory.
  private readBuf: Buffer;
  private readView: DataView;
  private peekBuf: Buffer;
  private peekNext = false;
  private carry: Buffer;
  private carryView: DataView;
  private readonly stagingBytes: number;
  private carryLen = 0;
  private mode = HANDSHAKE;
  private readonly rx: RxFrame;
  private readonly hdrMax: number;
  private readonly payMax: number;
  private sink: ReaderSink | null = null;
  private dead = false;

  // DIRECT / SKIP state: the frame whose payload is being read.
  private target: Uint8Array | null = null;
  private filled = 0;
  private payLen = 0;
  private skipLeft = 0;
  private directHandler: AmHandler | null = null;
  private directTemp = false;
  private tempWhole: Buffer | null = null;
  private readonly savedHdr: Buffer;
  private readonly savedHdrView: DataView;
  private savedHdrLen = 0;

  // HANDSHAKE state: collect exactly `hsNeed` bytes, then call hsDone.
  private hsBuf: Buffer = Buffer.alloc(0);
  private hsHave = 0;
  private hsDone: ((b: Buffer) => void) | null = null;

  /** For net.Socket's onread: the buffer the next read lands in. */
  readonly nextBuffer = (): Uint8Array => {
    if (this.mode === DIRECT && this.target !== null && this.payLen - this.filled >= DIRECT_MIN) {
      return this.target.subarray(this.filled, this.payLen);
    }
    if (this.peekNext && this.carryLen === 0 && this.mode === FRAMES) return this.peekBuf;
    return this.readBuf;
  };

  /** For net.Socket's onread: `n` bytes were read into `buf`. */
  readonly onRead = (n: number, buf: Uint8Array): boolean => {
    if (this.dead) return false;
    this.onActivity();
    try {
      if (buf === this.readBuf) this.feed(this.readBuf, this.readView, 0, n);
      else if (buf === this.peekBuf) { this.peekNext = false; this.feed(this.readBuf, this.readView, 0, n); }
      else this.directRead(n);
    } catch (e) {
      this.fail(`handler threw: ${(e as Error)?.stack ?? String(e)}`);
    }
    return true;
  };

  private readonly onActivity: () => void;

  constructor(stagingBytes: number, hdrMax: number, payMax: number, onActivity: () => void = () => {}) {
    this.onActivity = onActivity;
    this.stagingBytes = stagingBytes;
    this.readBuf = Buffer.allocUnsafeSlow(HANDSHAKE_READ);
    this.readView = new DataView(this.readBuf.buffer, this.readBuf.byteOffset, this.readBuf.byteLength);
    this.peekBuf = this.readBuf;
    this.carry = this.readBuf;
    this.carryView = this.readView;
    this.savedHdr = Buffer.allocUnsafeSlow(Math.max(hdrMax, 8));
    this.savedHdrView = new DataView(this.savedHdr.buffer, this.savedHdr.byteOffset, this.savedHdr.byteLength);
    this.hdrMax = hdrMax;
    this.payMax = payMax;
    this.rx = { buf: this.readBuf, view: this.readView, hdrOff: 0, hdrLen: 0, payOff: 0, payLen: 0, placed: null, words: null };
  }

  /** Handshake phase: collect exactly `n` bytes, then call `done` with them. */
  expect(n: number, done: (b: Buffer) => void): void {
    this.mode = HANDSHAKE;
    this.hsBuf = Buffer.alloc(n);
    this.hsHave = 0;
    this.hsDone = done;
  }

  /** Frames phase: from now on bytes are frames delivered to `sink`. */
  startFrames(sink: ReaderSink): void {
    this.sink = sink;
    this.mode = FRAMES;
    this.readBuf = Buffer.allocUnsafeSlow(this.stagingBytes);
    this.readView = new DataView(this.readBuf.buffer, this.readBuf.byteOffset, this.readBuf.byteLength);
    this.peekBuf = this.readBuf.subarray(0, PEEK_BYTES);
    this.carry = Buffer.allocUnsafeSlow(this.stagingBytes);
    this.carryView = new DataView(this.carry.buffer, this.carry.byteOffset, this.carry.byteLength);
  }

  /** Stop delivering anything (connection closed or abandoned). */
  stop(): void {
    this.dead = true;
  }

  /** Feed bytes that did not arrive through onread (fallback path). */
  feedChunk(chunk: Buffer): void {
    if (this.dead) return;
    const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    try { this.feed(chunk, view, 0, chunk.length); } catch (e) { this.fail(`handler threw: ${String(e)}`); }
  }

  private fail(reason: string): void {
    if (this.dead) return;
    this.dead = true;
    this.sink?.protocolError(reason);
  }

  private directRead(n: number): void {
    this.filled += n;
    if (this.filled >= this.payLen) { this.peekNext = true; this.finishDirect(); }
  }

  private feed(src: Buffer, view: DataView, off: number, end: number): void {
    while (off < end && !this.dead) {
      switch (this.mode) {
        case DIRECT: {
          const k = Math.min(end - off, this.payLen - this.filled);
          this.target!.set(src.subarray(off, off + k), this.filled);
          this.filled += k;
          off += k;
          if (this.filled >= this.payLen) this.finishDirect();
          break;
        }
        case SKIP: {
          const k = Math.min(end - off, this.skipLeft);
          this.skipLeft -= k;
          off += k;
          if (this.skipLeft === 0) this.mode = FRAMES;
          break;
        }
        case HANDSHAKE: {
          if (this.hsDone === null) { this.fail('bytes arrived before the handshake finished'); return; }
          const k = Math.min(end - off, this.hsBuf.length - this.hsHave);
          src.copy(this.hsBuf, this.hsHave, off, off + k);
          this.hsHave += k;
          off += k;
          if (this.hsHave === this.hsBuf.length) {
            const done = this.hsDone;
            this.hsDone = null;
            done(this.hsBuf);
          }
          break;
        }
        default: {
          if (this.carryLen === 0) {
            const pos = this.parse(src, view, off, end);
            if (this.mode === FRAMES && pos < end) {
              src.copy(this.carry, 0, pos, end);
              this.carryLen = end - pos;
              off = end;
            } else {
              off = pos;
            }
          } else {
            const k = Math.min(end - off, this.carry.length - this.carryLen);
            src.copy(this.carry, this.carryLen, off, off + k);
            this.carryLen += k;
            off += k;
            const pos = this.parse(this.carry, this.carryView, 0, this.carryLen);
            if (pos > 0) this.carry.copy(this.carry, 0, pos, this.carryLen);
            this.carryLen -= pos;
          }
        }
      }
    }
  }

  /** Deliver every whole frame in src[pos, end); returns where the first incomplete one starts. */
  private parse(src: Buffer, view: DataView, pos: number, end: number): number {
    const sink = this.sink!;
    const rx = this.rx;
    while (this.mode === FRAMES && !this.dead) {
      const avail = end - pos;
      if (avail < FRAME_HEADER) return pos;
      const bad = checkFrameHeader(view, pos, this.hdrMax, this.payMax);
      if (bad !== null) { this.fail(bad); return end; }
      const am = frameAm(view, pos);
      const hdrLen = frameHdrLen(view, pos);
      const payLen = framePayLen(view, pos);
      if (am === AM_CONTROL) {
        // Only the flags matter; a body (none is sent today) is skipped, never
        // carried over, since it may be larger than the staging buffers.
        const body = hdrLen + payLen;
        sink.control(frameFlags(view, pos));
        if (avail - FRAME_HEADER >= body) { pos += FRAME_HEADER + body; continue; }
        this.skipLeft = body - (avail - FRAME_HEADER);
        this.mode = SKIP;
        return end;
      }
      const h = sink.handler(am);
      if (h === undefined) { this.fail(`unknown active message id ${am}`); return end; }
      if (avail < FRAME_HEADER + hdrLen) return pos;
      rx.buf = src; rx.view = view;
      rx.hdrOff = pos + FRAME_HEADER; rx.hdrLen = hdrLen;
      rx.payOff = rx.hdrOff + hdrLen; rx.payLen = payLen;
      rx.placed = null;
      const have = Math.min(payLen, end - rx.payOff);
      if (h.place !== undefined && payLen > 0) {
        const target = h.place(sink.endpoint, rx);
        if (target !== null) src.copy(target, 0, rx.payOff, rx.payOff + have);
        if (have === payLen) {
          if (target !== null) { rx.placed = target; this.count(payLen); h.recv(sink.endpoint, rx); }
          pos = rx.payOff + payLen;
          continue;
        }
        this.saveHeader(src, rx.hdrOff, hdrLen, h, payLen);
        if (target !== null) { this.target = target; this.filled = have; this.mode = DIRECT; this.directTemp = false; }
        else { this.skipLeft = payLen - have; this.mode = SKIP; }
        return end;
      }
      const frameLen = FRAME_HEADER + hdrLen + payLen;
      if (avail >= frameLen) {
        this.count(payLen);
        h.recv(sink.endpoint, rx);
        pos += frameLen;
        continue;
      }
      if (frameLen > this.carry.length) {
        // Too large for the staging buffers: assemble it in a buffer of its own
        // (bounded by RAILCOMM_TCP_MAX_FRAME, checked above).
        const whole = Buffer.allocUnsafe(hdrLen + payLen);
        src.copy(whole, 0, rx.hdrOff, rx.payOff + have);
        this.saveHeader(src, rx.hdrOff, hdrLen, h, payLen);
        this.tempWhole = whole;
        this.target = whole.subarray(hdrLen); this.filled = have; this.mode = DIRECT; this.directTemp = true;
        return end;
      }
      return pos;
    }
    return pos;
  }

  private saveHeader(src: Buffer, hdrOff: number, hdrLen: number, h: AmHandler, payLen: number): void {
    src.copy(this.savedHdr, 0, hdrOff, hdrOff + hdrLen);
    this.savedHdrLen = hdrLen;
    this.directHandler = h;
    this.payLen = payLen;
  }

  private finishDirect(): void {
    const rx = this.rx;
    const target = this.target!;
    const h = this.directHandler!;
    this.target = null;
    this.directHandler = null;
    this.mode = FRAMES;
    rx.hdrOff = 0; rx.hdrLen = this.savedHdrLen;
    if (this.directTemp) {
      // The payload sits in a buffer of its own; present header and payload as one frame.
      const whole = this.tempWhole!;
      this.tempWhole = null;
      rx.buf = whole; rx.view = new DataView(whole.buffer, whole.byteOffset, whole.byteLength);
      rx.payOff = this.savedHdrLen; rx.payLen = this.payLen; rx.placed = null;
    } else {
      rx.buf = this.savedHdr; rx.view = this.savedHdrView;
      rx.payOff = this.savedHdrLen; rx.payLen = this.payLen; rx.placed = target;
    }
    this.count(this.payLen);
    h.recv(this.sink!.endpoint, rx);
  }

  private count(payLen: number): void {
    const s = this.sink!;
    s.counters.msgsRecv++;
    s.counters.bytesRecv += payLen;
    s.railCounters.msgsRecv++;
    s.railCounters.bytesRecv += payLen;
  }
}
