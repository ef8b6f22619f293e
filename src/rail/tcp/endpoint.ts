// One tcp rail endpoint: the connection to one peer. Small frames are copied
// into a batch buffer, written at once when the socket has no write in flight
// and otherwise when the write in flight completes (so bursts coalesce);
// large payloads are written from the caller's memory with writev (cork).
// The connection is made on first use and proven with the job key both ways
// (connect.ts).

import net from 'node:net';
import type { Completion, RailEndpoint, RailStatus, AmHandler } from '../api.js';
import { DONE, IN_PROGRESS, NO_RESOURCE } from '../api.js';
import { TrafficCounters } from '../../core/counters.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { formatId } from '../../core/ids.js';
import type { FrameReader, ReaderSink } from './reader.js';
import { AM_CONTROL, CTRL_BYE, FRAME_HEADER, encodeFrameHeader } from './wire.js';
import { Connector } from './connect.js';
import type { TcpRail } from './rail.js';
import type { CheckedEndpoint } from './peer-check.js';
import { netSocketFd } from '../../core/socket-fd.js';

export interface Batch { buf: Buffer; view: DataView }

/** A batch holding at most this much is written from a copy of its bytes (the batch is reused at once). */
const SMALL_FLUSH = 16384;

/** Zero-copy payloads up to this size are copied into the batch instead (a separate write costs more). */
const ZCOPY_COPY_MAX = 8192;

/** What a write callback finishes: a batch buffer to recycle, or a zero-copy send. */
type Inflight = Batch | Completion;

const enum State { IDLE, CONNECTING, OPEN, CLOSING, FAILED }

export class TcpEndpoint implements RailEndpoint, ReaderSink, CheckedEndpoint {
  readonly rail: TcpRail;
  readonly peer: bigint;
  readonly counters = new TrafficCounters();
  owner: unknown = null;
  readonly endpoint = this;
  readonly railCounters: TrafficCounters;

  private state = State.IDLE;
  private sock: net.Socket | null = null;
  private reader: FrameReader | null = null;
  peerAddress: string;
  /** The other end of the open connection, for messages. */
  private remote = '';
  private readonly connector: Connector;
  private closeDeadline: NodeJS.Timeout | null = null;

  private batch: Batch;
  private batchLen = 0;
  /** Written before the connection was open, in order: batches and zero-copy payloads. */
  private staged: Array<Uint8Array | Inflight> = [];
  private readonly inflight: Inflight[] = [];
  private inflightHead = 0;
  private waitingDrain = false;
  private peerSaidBye = false;
  private closeWaiters: Array<() => void> = [];
  private closeWhenOpen = false;

  private readonly onWritten = (err?: Error | null): void => {
    // A sender pushing megabytes sees no reads for a long while: its write
    // completions are what keeps progress polling.
    this.rail.upcalls.activity();
    const item = this.inflight[this.inflightHead];
    this.inflight[this.inflightHead++] = undefined as unknown as Inflight;
    if (this.inflightHead > 1024 && this.inflightHead * 2 > this.inflight.length) {
      this.inflight.splice(0, this.inflightHead);
      this.inflightHead = 0;
    }
    if (item !== undefined) {
      if ('railComplete' in item) {
        // Node completes the writes a destroyed socket still held without an
        // error (stream_base_commons onWriteComplete: "if (stream.destroyed)
        // callback(null)"): a peer that died mid-stream made a large send look
        // delivered. Such a write did not go out.
        if (!err && (this.sock === null || this.sock.destroyed)) item.railComplete(this.connError(`connection to ${this.peerAddress || this.remote} lost before this write went out`));
        else item.railComplete(err ? this.connError(`write failed: ${err.message}`, err) : null);
      } else this.rail.batches.put(item);
    }
    // Frames that queued up behind the writes in flight go out together now.
    if (this.batchLen > 0 && this.inflightHead === this.inflight.length && this.sock !== null) this.flushBatch();
  };
  private readonly onDrain = (): void => {
    if (!this.waitingDrain) return;
    this.waitingDrain = false;
    this.rail.upcalls.ready(this);
  };

  constructor(rail: TcpRail, peer: bigint, address: string) {
    this.rail = rail;
    this.railCounters = rail.counters;
    this.peer = peer;
    this.peerAddress = address;
    this.batch = rail.batches.get();
    this.connector = new Connector(this);
  }

  get open(): boolean { return this.state === State.OPEN; }
  get connecting(): boolean { return this.connector.dialing; }

  setAddress(address: string): void {
    if (address) this.peerAddress = address;
  }

  // ---- sending -----------------------------------------------------------

  /** Copies are bounded: past RAILCOMM_TCP_SEND_HIGH_WATER queued bytes, answer NO_RESOURCE. */
  sendCopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus {
    if (this.state >= State.CLOSING) return DONE; // the layer above was told through `failed`
    if (this.blocked()) return NO_RESOURCE;
    const payLen = payload === null ? 0 : payload.length;
    const frameLen = FRAME_HEADER + hdrLen + payLen;
    const cap = this.batch.buf.length;
    if (this.batchLen + frameLen > cap) this.flushBatch();
    if (frameLen > cap) {
      const big = Buffer.allocUnsafe(frameLen);
      const v = new DataView(big.buffer, big.byteOffset, frameLen);
      encodeFrameHeader(v, 0, am, hdrLen, payLen);
      big.set(hdr.subarray(0, hdrLen), FRAME_HEADER);
      if (payload !== null) big.set(payload, FRAME_HEADER + hdrLen);
      this.writeRaw(big, null);
    } else {
      const off = this.batchLen;
      encodeFrameHeader(this.batch.view, off, am, hdrLen, payLen);
      const b = this.batch.buf;
      for (let i = 0; i < hdrLen; i++) b[off + FRAME_HEADER + i] = hdr[i]!;
      if (payload !== null) {
        if (payLen <= 64) for (let i = 0; i < payLen; i++) b[off + FRAME_HEADER + hdrLen + i] = payload[i]!;
        else b.set(payload, off + FRAME_HEADER + hdrLen);
      }
      this.batchLen += frameLen;
      if (this.inflightHead === this.inflight.length) this.flushBatch();
    }
    this.countSent(payLen);
    return DONE;
  }

  sendZcopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array, done: Completion): RailStatus {
    if (this.state >= State.CLOSING) {
      done.railComplete(this.connError('connection closed'));
      return IN_PROGRESS;
    }
    if (payload.length <= ZCOPY_COPY_MAX) {
      // Small: copied into the batch like sendCopy (with its back-pressure),
      // and the caller's memory is free at once. Written on its own, each
      // such piece held a whole 64 KiB batch until its write completed.
      const st = this.sendCopy(am, hdr, hdrLen, payload);
      if (st === NO_RESOURCE) return NO_RESOURCE;
      done.railComplete(null);
      return IN_PROGRESS;
    }
    // No back-pressure here: the payload stays in the caller's memory until
    // written, so queueing it costs us nothing, and stopping the pipe until
    // 'drain' would leave the socket idle.
    if (this.batchLen + FRAME_HEADER + hdrLen > this.batch.buf.length) this.flushBatch();
    encodeFrameHeader(this.batch.view, this.batchLen, am, hdrLen, payload.length);
    this.batch.buf.set(hdr.subarray(0, hdrLen), this.batchLen + FRAME_HEADER);
    this.batchLen += FRAME_HEADER + hdrLen;
    const s = this.sock;
    if (s !== null) s.cork();
    this.flushBatch();
    this.writeRaw(payload, done);
    if (s !== null) s.uncork();
    this.countSent(payload.length);
    return IN_PROGRESS;
  }

  private countSent(payLen: number): void {
    this.counters.msgsSent++;
    this.counters.bytesSent += payLen;
    this.railCounters.msgsSent++;
    this.railCounters.bytesSent += payLen;
  }

  private blocked(): boolean {
    const s = this.sock;
    if (s !== null && s.writableLength > this.rail.env.params.tcpSendHighWater) {
      this.counters.pending++;
      if (!this.waitingDrain) { this.waitingDrain = true; s.once('drain', this.onDrain); }
      return true;
    }
    return false;
  }

  private flushBatch(): void {
    if (this.batchLen === 0) return;
    if (this.batchLen <= SMALL_FLUSH) {
      // A few frames: written from an exact-size copy, and the batch stays.
      // Handing over the whole 64 KiB batch pinned it until the write
      // completed, and a peer that does not read let thousands of such writes
      // queue (the high-water mark counts bytes, not batches): 3 GB of
      // batches for 50,000 small messages.
      const bytes = Buffer.allocUnsafe(this.batchLen);
      this.batch.buf.copy(bytes, 0, 0, this.batchLen);
      this.batchLen = 0;
      this.writeRaw(bytes, null);
      return;
    }
    const b = this.batch;
    const len = this.batchLen;
    this.batch = this.rail.batches.get();
    this.batchLen = 0;
    this.writeRaw(b.buf.subarray(0, len), b);
  }

  /** Write bytes now (or stage them until the connection is open); `item` is finished by the write callback. */
  private writeRaw(bytes: Uint8Array, item: Inflight | null): void {
    const s = this.sock;
    if (s === null) {
      this.staged.push(bytes);
      if (item !== null) this.staged.push(item);
      if (this.state === State.IDLE) this.startConnect();
      return;
    }
    this.inflight.push(item ?? (undefined as unknown as Inflight));
    s.write(bytes, this.onWritten);
  }

  // ---- connection management (connect.ts dials and proves) ---------------

  /** Called by the rail when the layer above first wants this peer. */
  startConnect(): void {
    if (this.state !== State.IDLE || this.connector.dialing) return;
    this.state = State.CONNECTING;
    this.connector.start();
  }

  get wantsConnection(): boolean { return this.state === State.CONNECTING && this.sock === null; }
  get connectingState(): boolean { return this.state === State.CONNECTING; }

  /** The acceptor side of a handshake, after HELLO named us and this peer. */
  acceptHandshake(s: net.Socket, reader: FrameReader, peerNonce: Buffer): void {
    this.connector.accept(s, reader, peerNonce);
  }

  /** A connection the peer dialled failed its proof: connect ourselves if we still have something to say. */
  incomingRefused(): void {
    if (this.state === State.IDLE && (this.staged.length > 0 || this.batchLen > 0)) this.startConnect();
    // (A retry due later was ours waiting for this handshake, or for the peer's connection that lost: dial now.)
    else if (this.state === State.CONNECTING && this.connector.quiet) this.connector.dialNow();
    else if (this.state === State.IDLE && this.closeWhenOpen) { this.state = State.CLOSING; this.finishClose(); }
  }

  /** Still has something to deliver before it may close (staged sends). */
  get mustDeliver(): boolean {
    return this.closeWhenOpen;
  }

  attach(s: net.Socket, reader: FrameReader): void {
    if (this.state >= State.CLOSING || this.sock !== null) { reader.stop(); s.destroy(); return; }
    this.connector.stopRetry();
    this.sock = s;
    this.reader = reader;
    this.remote = `${s.remoteAddress}:${s.remotePort}`;
    this.state = State.OPEN;
    s.setNoDelay(true);
    this.rail.peerCheck.arm(s);
    reader.startFrames(this);
    s.removeAllListeners('close');
    s.removeAllListeners('error');
    s.on('error', (err: NodeJS.ErrnoException) => {
      this.connector.lastError = `${err.code ?? ''} ${err.message}`.trim();
      // Keepalive probes went unanswered (peer-check.ts): say what that means.
      if (err.code === 'ETIMEDOUT' && this.rail.env.params.tcpPeerTimeout > 0) this.connector.lastError += `: its host answered no keepalive probe for about ${this.rail.env.params.tcpPeerTimeout} s (RAILCOMM_TCP_PEER_TIMEOUT): the network between us is cut, or its host is down`;
    });
    s.on('close', () => this.onClosed());
    this.rail.env.log.debug(`tcp: connected to peer ${formatId(this.peer)} (${s.remoteAddress}:${s.remotePort})`);
    this.rail.handshakeDone(s);
    const staged = this.staged;
    this.staged = [];
    if (staged.length > 0) {
      s.cork();
      for (let i = 0; i < staged.length; i++) {
        const item = staged[i]!;
        if (item instanceof Uint8Array) {
          const next = staged[i + 1];
          const owner = next !== undefined && !(next instanceof Uint8Array) ? next : null;
          if (owner !== null) i++;
          this.inflight.push(owner ?? (undefined as unknown as Inflight));
          s.write(item, this.onWritten);
        }
      }
      s.uncork();
    }
    this.flushBatch();
    // Announce only now: what the layer above sends next must follow the staged frames.
    this.rail.connected(this);
    if (this.closeWhenOpen) this.beginClose();
  }

  private onClosed(): void {
    this.reader?.stop();
    this.sock = null;
    if (this.state === State.CLOSING || this.state === State.FAILED) {
      this.finishClose();
      return;
    }
    const graceful = this.peerSaidBye;
    this.fail(graceful
      ? new RailcommError(ErrorCode.PEER_FAILED, `peer ${formatId(this.peer)} closed its connection (it finalized)`)
      : this.connError(`connection to ${this.peerAddress || this.remote} lost${this.connector.lastError ? ': ' + this.connector.lastError : ''}`), graceful);
  }

  fail(err: RailcommError, graceful: boolean): void {
    if (this.state === State.FAILED) return;
    this.state = State.FAILED;
    this.connector.cancel();
    this.reader?.stop();
    this.sock?.destroy();
    this.sock = null;
    // Zero-copy sends still waiting complete with the error.
    for (const item of this.staged) if (!(item instanceof Uint8Array) && 'railComplete' in item) item.railComplete(err);
    this.staged = [];
    for (let i = this.inflightHead; i < this.inflight.length; i++) {
      const item = this.inflight[i];
      if (item !== undefined && 'railComplete' in item) item.railComplete(err);
    }
    this.inflight.length = 0;
    this.inflightHead = 0;
    this.rail.forget(this);
    this.rail.upcalls.failed(this, err, graceful);
    this.finishClose();
  }

  /** The open connection's fd, for the peer check (-1: none). */
  get socketFd(): number {
    return this.sock === null || this.state !== State.OPEN ? -1 : netSocketFd(this.sock);
  }

  /** The peer's host acknowledged nothing for ms with data waiting (peer-check.ts): the lane fails. */
  ackTimedOut(ms: number): void {
    if (this.state !== State.OPEN) return;
    this.fail(this.connError(`its host has acknowledged nothing for ${Math.round(ms / 1000)} s while data waited (RAILCOMM_TCP_PEER_TIMEOUT=${this.rail.env.params.tcpPeerTimeout}): the network between us is cut, or its host is down`), false);
  }

  connError(msg: string, cause?: unknown): RailcommError {
    return new RailcommError(ErrorCode.PEER_FAILED, `tcp ${this.rail.device.name}: peer ${formatId(this.peer)}: ${msg}`, cause === undefined ? undefined : { cause });
  }

  // ---- ReaderSink --------------------------------------------------------

  handler(am: number): AmHandler | undefined {
    return this.rail.upcalls.am[am];
  }

  control(flags: number): void {
    if (flags & CTRL_BYE) this.peerSaidBye = true;
  }

  abort(reason: string): void {
    this.reader?.stop();
    this.protocolError(reason);
  }

  giveUp(reason: string): void {
    this.fail(this.connError(`given up on: ${reason}`), false);
  }

  protocolError(reason: string): void {
    this.counters.badFrames++;
    this.rail.counters.badFrames++;
    this.rail.env.log.error(`tcp: closing the connection to peer ${formatId(this.peer)}: malformed stream (${reason})`);
    this.fail(this.connError(`malformed data on the connection (${reason}); connection closed`), false);
  }

  // ---- closing -----------------------------------------------------------

  close(): Promise<void> {
    if (this.state === State.FAILED) return Promise.resolve();
    const p = new Promise<void>((resolve) => this.closeWaiters.push(resolve));
    if (this.state === State.OPEN) {
      this.beginClose();
    } else if (this.state === State.IDLE && this.staged.length === 0 && this.batchLen === 0) {
      this.state = State.CLOSING;
      this.finishClose();
    } else if (this.state !== State.CLOSING) {
      // Still connecting with data staged (sends that already completed for
      // the user): deliver it first, then close. attach() or fail() continues,
      // and the connect deadline bounds the wait.
      this.closeWhenOpen = true;
      if (this.state === State.IDLE) this.startConnect();
      if (this.closeDeadline === null) {
        this.closeDeadline = setTimeout(() => {
          if (this.state !== State.OPEN && this.state !== State.CLOSING) {
            this.fail(this.connError(`could not deliver to ${this.peerAddress} before closing: ${this.connector.lastError || 'no connection'}`), false);
          }
        }, this.rail.env.params.connectTimeout);
        this.closeDeadline.unref();
      }
    }
    return p;
  }

  private beginClose(): void {
    const s = this.sock!;
    this.state = State.CLOSING;
    this.connector.stopRetry();
    if (this.batchLen + FRAME_HEADER > this.batch.buf.length) this.flushBatch();
    encodeFrameHeader(this.batch.view, this.batchLen, AM_CONTROL, 0, 0, CTRL_BYE);
    this.batchLen += FRAME_HEADER;
    this.flushBatch();
    s.end();
    // Linger: a peer that is computing reads later, so wait while our bytes
    // still move; give up only when nothing moved for the connect timeout, or
    // a few seconds after everything was written and the peer did not close.
    const limit = this.rail.env.params.connectTimeout;
    let last = s.bytesWritten;
    let still = 0;
    let done = 0;
    const t = setInterval(() => {
      if (s.destroyed) { clearInterval(t); return; }
      if (s.writableFinished) { if (++done >= 5) s.destroy(); return; }
      if (s.bytesWritten !== last) { last = s.bytesWritten; still = 0; return; }
      if (++still * 1000 >= limit) s.destroy();
    }, 1000);
    t.unref();
    s.once('close', () => clearInterval(t));
  }

  private finishClose(): void {
    if (this.closeDeadline !== null) { clearTimeout(this.closeDeadline); this.closeDeadline = null; }
    this.rail.forget(this);
    const w = this.closeWaiters;
    this.closeWaiters = [];
    for (const f of w) f();
  }
}
