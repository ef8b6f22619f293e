// One udp rail endpoint: the handshake with one peer (job-key proof both ways,
// which hands each side the token the other stamps on every datagram), then a
// Session that moves active messages reliably and in order, then an orderly
// close (BYE, sequenced after everything else) or a failure.

import type { Completion, RailEndpoint, RailStatus } from '../api.js';
import { DONE, IN_PROGRESS, NO_RESOURCE } from '../api.js';
import { TrafficCounters } from '../../core/counters.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { mac, macEquals, nonce } from '../../core/auth.js';
import { formatId } from '../../core/ids.js';
import { Session, type SessionOwner } from './session.js';
import {
  ACK_BYTES, AM_CONTROL, FLAG_BYE, HS_BYTES, SUM_FROM, T_ACK, T_CHALLENGE, T_HELLO, T_PROBE, T_PROOF,
  encodeAck, encodeHandshake, handshakeContext, setSum, type Handshake,
} from './wire.js';
import { checksum } from './checksum.js';
import type { UdpRail } from './rail.js';

const enum State { IDLE, CONNECTING, ACCEPTING, OPEN, CLOSING, CLOSED }

/** After our BYE is acknowledged, how long to wait for the peer's (so that we can ACK it). */
const LINGER_MS = 250;
const NO_BYTES = new Uint8Array(0);

export class UdpEndpoint implements RailEndpoint, SessionOwner {
  readonly rail: UdpRail;
  readonly peer: bigint;
  readonly counters = new TrafficCounters();
  readonly endpoint = this;
  owner: unknown = null;
  readonly session: Session;
  /** The token the peer stamps on datagrams to us. */
  readonly myToken: number;
  ip = '';
  /** `ip` as a host-order IPv4 number for batched sends (0: not a dotted quad). */
  private ipNum = 0;
  private ipNumOf = '';
  dataPort = 0;
  prioPort = 0;

  private state = State.IDLE;
  private myNonce: Buffer = Buffer.alloc(16);
  private peerNonce: Buffer = Buffer.alloc(16);
  private peerToken = 0;
  private peerCredit = 0;
  /** The handshake datagram we (re)send: HELLO, CHALLENGE or PROOF. */
  private readonly hsBuf = Buffer.alloc(HS_BYTES);
  hsDeadline = 0;
  hsNext = 0;
  private hsInterval = 50;
  readonly ackBuf: Buffer;
  private readonly ackView: DataView;
  private readonly ackWords: Int32Array;
  private peerBye = false;
  private byeAcked = false;
  private reported = false;
  private closeWaiters: Array<() => void> = [];
  private lingerTimer: NodeJS.Timeout | null = null;
  private closeWhenOpen = false;

  constructor(rail: UdpRail, peer: bigint, address: string, token: number) {
    this.rail = rail;
    this.peer = peer;
    this.myToken = token;
    this.session = new Session(rail, this);
    this.ackBuf = Buffer.allocUnsafeSlow(ACK_BYTES);
    this.ackView = new DataView(this.ackBuf.buffer, this.ackBuf.byteOffset, ACK_BYTES);
    this.ackWords = new Int32Array(this.ackBuf.buffer, this.ackBuf.byteOffset, ACK_BYTES >>> 2);
    this.setAddress(address);
  }

  ipv4(): number {
    if (this.ipNumOf !== this.ip) {
      this.ipNumOf = this.ip;
      const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(this.ip);
      this.ipNum = m === null ? 0 : ((+m[1]! << 24) | (+m[2]! << 16) | (+m[3]! << 8) | +m[4]!) >>> 0;
    }
    return this.ipNum;
  }

  setAddress(address: string): void {
    if (!address) return;
    const parts = address.split(':');
    if (parts.length !== 3) return;
    this.ip = parts[0]!;
    this.dataPort = Number(parts[1]);
    this.prioPort = Number(parts[2]);
  }

  get open(): boolean { return this.state === State.OPEN; }
  get closing(): boolean { return this.state === State.CLOSING; }

  // ---- sending -------------------------------------------------------------

  sendCopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus {
    if (this.state >= State.CLOSING || this.reported) return DONE; // the layer above was told through `failed`
    if (this.state === State.IDLE) this.startConnect();
    if (!this.session.send(am, 0, hdr, hdrLen, payload, null)) return NO_RESOURCE;
    this.countSent(payload === null ? 0 : payload.length);
    return DONE;
  }

  sendZcopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array, done: Completion): RailStatus {
    if (this.state >= State.CLOSING || this.reported) {
      done.railComplete(this.error('the endpoint is closed'));
      return IN_PROGRESS;
    }
    if (this.state === State.IDLE) this.startConnect();
    this.session.send(am, 0, hdr, hdrLen, payload, done);
    this.countSent(payload.length);
    return IN_PROGRESS;
  }

  private countSent(n: number): void {
    this.counters.msgsSent++;
    this.counters.bytesSent += n;
    this.rail.counters.msgsSent++;
    this.rail.counters.bytesSent += n;
  }

  // ---- handshake -----------------------------------------------------------

  /** We speak first: HELLO, repeated until answered or the connect timeout. */
  startConnect(): void {
    if (this.state !== State.IDLE) return;
    if (this.ip === '') return; // the peer will reach us: it knows our address
    const env = this.rail.env;
    this.state = State.CONNECTING;
    this.myNonce = nonce();
    this.hsDeadline = this.rail.now() + env.params.connectTimeout;
    this.writeHandshake(T_HELLO, Buffer.alloc(32));
    this.rail.handshakeStarted(this);
    this.sendHandshake();
  }

  private writeHandshake(type: number, m: Buffer): void {
    const r = this.rail;
    const h: Handshake = {
      type, jobId: r.env.jobId, token: this.myToken, from: r.env.self, to: this.peer, nonce: this.myNonce,
      dataPort: r.dataPort, prioPort: r.prioPort, credit: r.grant(this.session), mac: m,
    };
    encodeHandshake(this.hsBuf, h);
    setSum(new DataView(this.hsBuf.buffer, this.hsBuf.byteOffset, HS_BYTES), checksum(this.hsBuf, SUM_FROM, HS_BYTES - SUM_FROM));
  }

  /** (Re)send the current handshake datagram; retries back off up to 1 s. */
  sendHandshake(): void {
    this.rail.transmitRaw(this, this.hsBuf, HS_BYTES, true);
    this.hsNext = this.rail.now() + this.hsInterval;
    this.hsInterval = Math.min(1000, this.hsInterval * 2);
  }

  /** The handshake is taking too long. */
  handshakeExpired(): void {
    const what = this.state === State.CONNECTING ? `no answer from ${this.ip}:${this.dataPort}:${this.prioPort} on device ${this.rail.device.name}` : 'the peer did not complete the handshake';
    this.fail(this.error(`cannot connect: ${what} within ${this.rail.env.params.connectTimeout} ms`), false);
  }

  onHello(h: Handshake, ip: string): void {
    const env = this.rail.env;
    if (this.state === State.OPEN || this.state === State.ACCEPTING) {
      // Our CHALLENGE was lost, or the HELLO was duplicated: answer it again.
      if (h.nonce.equals(this.peerNonce) && this.state === State.ACCEPTING) this.sendHandshake();
      return;
    }
    if (this.state === State.CONNECTING && env.self < h.from) return; // both connect: the lower id's HELLO wins
    if (this.state >= State.CLOSING) return;
    this.ip = ip;
    this.dataPort = h.dataPort;
    this.prioPort = h.prioPort;
    this.peerToken = h.token;
    this.peerNonce = h.nonce;
    this.peerCredit = h.credit;
    this.myNonce = nonce();
    this.state = State.ACCEPTING;
    this.hsInterval = 50;
    this.hsDeadline = this.rail.now() + env.params.handshakeTimeout;
    const ctx = handshakeContext(this.peer, env.self, h.token, this.myToken);
    this.writeHandshake(T_CHALLENGE, mac(env.jobKey, 'railcomm-udp-B', h.nonce, this.myNonce, ctx));
    this.rail.handshakeStarted(this);
    this.sendHandshake();
  }

  onChallenge(h: Handshake): void {
    const env = this.rail.env;
    if (this.state === State.OPEN || this.state === State.CLOSING) {
      // Our PROOF was lost: the peer asks again.
      if (h.nonce.equals(this.peerNonce)) this.rail.transmitRaw(this, this.hsBuf, HS_BYTES, true);
      return;
    }
    if (this.state !== State.CONNECTING) return;
    const ctx = handshakeContext(env.self, this.peer, this.myToken, h.token);
    if (!macEquals(h.mac, mac(env.jobKey, 'railcomm-udp-B', this.myNonce, h.nonce, ctx))) {
      this.rail.counters.refused++;
      env.log.warnEvery('udp-bad-answer', `udp: ignored an answer claiming to be peer ${formatId(this.peer)}: it does not know the job key`);
      return;
    }
    this.peerToken = h.token;
    this.peerNonce = h.nonce;
    this.writeHandshake(T_PROOF, mac(env.jobKey, 'railcomm-udp-A', h.nonce, this.myNonce, ctx));
    this.rail.transmitRaw(this, this.hsBuf, HS_BYTES, true);
    this.becomeOpen(h.credit);
  }

  onProof(h: Handshake): void {
    const env = this.rail.env;
    if (this.state !== State.ACCEPTING) return;
    const ctx = handshakeContext(this.peer, env.self, this.peerToken, this.myToken);
    if (!h.nonce.equals(this.peerNonce) || !macEquals(h.mac, mac(env.jobKey, 'railcomm-udp-A', this.myNonce, this.peerNonce, ctx))) {
      this.rail.counters.refused++;
      env.log.warnEvery('udp-refused', `udp: refused peer ${formatId(this.peer)} from ${this.ip}: it does not know the job key`);
      return;
    }
    this.becomeOpen(this.peerCredit);
  }

  /** A datagram with our token came before the PROOF (it was lost): ask again. */
  earlyData(): void {
    if (this.state === State.ACCEPTING && this.rail.now() >= this.hsNext - this.hsInterval / 2) this.sendHandshake();
  }

  private becomeOpen(credit: number): void {
    this.state = State.OPEN;
    this.rail.handshakeDone(this);
    // Each side's sequence numbers start at the token the receiver chose.
    this.session.start(this.peerToken, this.peerToken, this.myToken, credit);
    this.rail.env.log.debug(`udp: connected to peer ${formatId(this.peer)} (${this.ip}:${this.dataPort}:${this.prioPort})`);
    this.rail.upcalls.accepted(this);
    if (this.closeWhenOpen) this.beginClose();
  }

  // ---- SessionOwner ----------------------------------------------------------

  bye(): void {
    this.peerBye = true;
    if (this.state === State.CLOSING) { this.maybeFinish(); return; }
    if (!this.reported) {
      this.reported = true;
      this.rail.upcalls.failed(this, new RailcommError(ErrorCode.PEER_FAILED, `peer ${formatId(this.peer)} closed its udp endpoint (it finalized)`), true);
    }
  }

  drained(): void {
    if (this.state === State.CLOSING && this.byeSent) { this.byeAcked = true; this.maybeFinish(); }
  }

  roomAgain(): void {
    this.rail.upcalls.ready(this);
  }

  abort(reason: string): void {
    if (this.state === State.CLOSED) return; // dropped (or closed) already
    this.protocolError(reason);
  }

  protocolError(why: string): void {
    this.counters.badFrames++;
    this.rail.counters.badFrames++;
    this.rail.env.log.error(`udp: dropping peer ${formatId(this.peer)}: ${why}`);
    this.drop(this.error(`the peer sent data that cannot be right (${why}); endpoint closed`));
  }

  /** No datagram from the peer for RAILCOMM_UDP_PEER_TIMEOUT (or the connect timeout, closing) while we wait on it. */
  timedOut(seconds: number, which: string, why?: string): void {
    if (this.state === State.CLOSING && this.peerBye) { this.finishClose(); return; }
    this.drop(this.error(`no sign of life for ${seconds} s (${which}) while ${why ?? `${this.session.inflight} segments wait for its acknowledgement`}`));
  }

  /**
   * Fail the peer here and tell it so (a RESET): it fails us at once, where
   * it would otherwise wait for ACKs of what it still sends us, a closing
   * rank for RAILCOMM_CONNECT_TIMEOUT.
   */
  private drop(err: RailcommError): void {
    if (this.state === State.CLOSED) return;
    this.rail.dropSession(this, this.peerToken);
    this.fail(err, false);
  }

  /**
   * A RESET with our token: the peer dropped this session. It counts only
   * with the session's other token too (the one we stamp on what we send),
   * so a stale or guessed datagram cannot end a live session.
   */
  onReset(senderToken: number): void {
    if (!this.session.open || senderToken !== this.session.token) { this.rail.counters.dropProtocol++; return; }
    this.rail.counters.resetsRecv++;
    this.rail.env.log.debug(`udp: peer ${formatId(this.peer)} dropped this rank's session (RESET)`);
    this.fail(this.error('it dropped this rank (it aborted the connection, found our data impossible, or timed out waiting on us); endpoint closed'), false);
  }

  /** Counted by the rail among the open peers that share its receive budget. */
  countedOpen = false;

  /** Keepalive (UdpRail.checkLiveness): since when the layer above waits on this peer (0: it does not), and the last probe. */
  waitStart = 0;
  lastProbe = 0;

  error(msg: string): RailcommError {
    return new RailcommError(ErrorCode.PEER_FAILED, `udp ${this.rail.device.name}: peer ${formatId(this.peer)}: ${msg}`);
  }

  fail(err: RailcommError, graceful: boolean): void {
    if (this.state === State.CLOSED) return;
    this.state = State.CLOSED;
    this.rail.handshakeDone(this);
    this.session.kill(err);
    this.rail.forget(this);
    if (!this.reported) {
      this.reported = true;
      this.rail.upcalls.failed(this, err, graceful);
    }
    this.resolveClose();
  }

  // ---- closing -------------------------------------------------------------

  private byeSent = false;

  close(): Promise<void> {
    if (this.state === State.CLOSED) return Promise.resolve();
    const p = new Promise<void>((resolve) => this.closeWaiters.push(resolve));
    if (this.state === State.OPEN) this.beginClose();
    else if (this.state === State.IDLE && this.session.idle) this.finishClose();
    else if (this.state === State.IDLE && this.ip === '') this.finishClose(); // queued for a peer that never came
    else if (this.state !== State.CLOSING) {
      // Still connecting with sends queued: deliver them first; the connect deadline bounds the wait.
      this.closeWhenOpen = true;
      if (this.state === State.IDLE) this.startConnect();
    }
    return p;
  }

  private beginClose(): void {
    this.state = State.CLOSING;
    this.byeSent = true;
    this.session.send(AM_CONTROL, FLAG_BYE, NO_BYTES, 0, null, { railComplete: () => {} });
    this.rail.closingStarted();
    if (this.peerBye) this.startLinger();
  }

  private maybeFinish(): void {
    if (this.state !== State.CLOSING) return;
    if (this.byeAcked && this.peerBye) this.finishClose();
    else if (this.byeAcked || this.peerBye) this.startLinger();
  }

  private startLinger(): void {
    if (this.lingerTimer !== null) return;
    this.lingerTimer = setTimeout(() => this.finishClose(), Math.min(4 * LINGER_MS, Math.max(LINGER_MS, 2 * this.session.rtt.base)));
  }

  private finishClose(): void {
    if (this.state === State.CLOSED) return;
    // ACK what the peer sent last (its BYE) before going.
    if (this.session.ackOwed && this.session.open) this.rail.sendAck(this.session);
    this.state = State.CLOSED;
    this.rail.handshakeDone(this);
    this.session.kill(this.error('closed'));
    this.rail.forget(this);
    this.resolveClose();
  }

  private resolveClose(): void {
    if (this.lingerTimer !== null) { clearTimeout(this.lingerTimer); this.lingerTimer = null; }
    const w = this.closeWaiters;
    this.closeWaiters = [];
    for (const f of w) f();
  }

  /** Build the explicit ACK datagram for this session in its own buffer. */
  encodeAck(ack: number, credit: number, hole: boolean, highest: number, probe = false): void {
    const v = this.ackView;
    encodeAck(v, this.session.token, ack, credit, hole, highest, probe ? T_PROBE : T_ACK);
    setSum(v, checksum(this.ackBuf, SUM_FROM, ACK_BYTES - SUM_FROM, this.ackWords));
  }
}
