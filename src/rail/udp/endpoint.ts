// One udp rail endpoint: the handshake with one peer (job-key proof both ways,
// which hands each side the token the other stamps on every datagram and keys
// the session's MAC), then a Session that moves active messages reliably and
// in order, then an orderly close (BYE, sequenced after everything else) or a
// failure. Our own connect lives here; HELLOs from the peer wait in
// handshake.ts until one proves the key.

import type { Completion, RailEndpoint, RailStatus } from '../api.js';
import { DONE, IN_PROGRESS, NO_RESOURCE, keyOfJob } from '../api.js';
import { TrafficCounters } from '../../core/counters.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { mac, macEquals, nonce } from '../../core/auth.js';
import { formatId, jobOf } from '../../core/ids.js';
import { Session, type SessionOwner } from './session.js';
import {
  ACK_BYTES, AM_CONTROL, FLAG_BYE, HS_AUTH, HS_BYTES, T_ACK, T_HELLO, T_PROBE, T_PROOF,
  encodeAck, encodeHandshake, handshakeContext, markMac, sessionContext, setSum, type Handshake, type HandshakeSide,
} from './wire.js';
import { datagramSum } from './checksum.js';
import { datagramMac } from './mac.js';
import type { Accept } from './handshake.js';
import type { UdpRail } from './rail.js';

const enum State { IDLE, CONNECTING, OPEN, CLOSING, CLOSED }

/** Bad MACs a session takes before it is ended (see UdpEndpoint.badMac). */
export const MAC_FAILURE_LIMIT = 1 << 16;

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
  /** Ours for this endpoint's life, like the token: the session key covers both sides' (wire.ts). */
  readonly keyNonce: Buffer;
  ip = '';
  /** `ip` as a host-order IPv4 number for batched sends (0: not a dotted quad). */
  private ipNum = 0;
  private ipNumOf = '';
  dataPort = 0;
  prioPort = 0;

  private state = State.IDLE;
  /** Our connect's nonce (its HELLO's), kept once open to answer a repeated CHALLENGE. */
  private connectNonce: Buffer | null = null;
  /** The peer as the handshake that opened the session proved it. */
  private peerToken = 0;
  private peerKeyNonce: Uint8Array = new Uint8Array(16);
  private peerFlags = 0;
  /**
   * The connector's nonce and token of the PROOF that opened this session as
   * the accepting side: the same PROOF again is a duplicate (our CHALLENGE
   * went twice, e.g. data overtook the first PROOF on the other socket).
   */
  provenNonce: Buffer | null = null;
  provenToken = 0;
  /** Our HELLO, sent again until answered. */
  private readonly hsBuf = Buffer.alloc(HS_BYTES);
  private proofBuf: Buffer | null = null;
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

  constructor(rail: UdpRail, peer: bigint, address: string, token: number, keyNonce: Buffer) {
    this.rail = rail;
    this.peer = peer;
    this.myToken = token;
    this.keyNonce = keyNonce;
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
  get isClosed(): boolean { return this.state === State.CLOSED; }

  /** This side of a handshake with the peer. */
  side(): HandshakeSide {
    return { id: this.rail.env.self, token: this.myToken, keyNonce: this.keyNonce, flags: this.rail.hsFlags };
  }

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

  /**
   * We speak first: HELLO, repeated until answered or the connect timeout.
   * HELLOs from the peer meanwhile (it connects too, or a stranger claims its
   * rank) do not stop it: whichever handshake proves the key first opens the
   * session, and every handshake between the same two endpoints keys the
   * same session (wire.ts, sessionContext), so no tie-break is needed.
   */
  startConnect(): void {
    if (this.state !== State.IDLE) return;
    if (this.ip === '') return; // the peer will reach us: it knows our address
    const r = this.rail;
    this.state = State.CONNECTING;
    this.connectNonce = nonce();
    this.hsDeadline = r.now() + r.env.params.connectTimeout;
    this.writeHandshake(this.hsBuf, T_HELLO, this.connectNonce, Buffer.alloc(32));
    r.handshakeStarted(this);
    this.sendHandshake();
  }

  private writeHandshake(b: Buffer, type: number, n: Buffer, m: Buffer): void {
    const r = this.rail;
    const h: Handshake = {
      type, jobId: r.env.jobId, token: this.myToken, from: r.env.self, to: this.peer, nonce: n,
      dataPort: r.dataPort, prioPort: r.prioPort, credit: r.grant(this.session), mac: m, keyNonce: this.keyNonce, flags: r.hsFlags,
    };
    encodeHandshake(b, h);
    const v = new DataView(b.buffer, b.byteOffset, HS_BYTES);
    setSum(v, datagramSum(v, b, HS_BYTES));
  }

  /** The key this peer proves: the job key, or the pair key of its job when it is another job's rank (ports, spawn). */
  private pairKey(): string {
    return keyOfJob(this.rail.env, jobOf(this.peer)) ?? this.rail.env.jobKey;
  }

  /** (Re)send our HELLO; retries back off up to 1 s. */
  sendHandshake(): void {
    this.rail.transmitRaw(this, this.hsBuf, HS_BYTES, true);
    this.hsNext = this.rail.now() + this.hsInterval;
    this.hsInterval = Math.min(1000, this.hsInterval * 2);
  }

  /** Our connect is taking too long (HELLOs claiming the peer that never proved anything do not count). */
  handshakeExpired(): void {
    this.fail(this.error(`cannot connect: no answer from ${this.ip}:${this.dataPort}:${this.prioPort} on device ${this.rail.device.name} within ${this.rail.env.params.connectTimeout} ms`), false);
  }

  /**
   * A CHALLENGE: the peer answers our HELLO. Verified, it is answered with a
   * PROOF and opens the session if it is not open yet; once open, a repeated
   * one (our PROOF was lost, or the peer accepted our HELLO after we accepted
   * its own) is answered again.
   */
  onChallenge(h: Handshake): void {
    const env = this.rail.env;
    const n = this.connectNonce;
    if (n === null || this.state === State.CLOSED) { this.rail.counters.refused++; return; }
    const them: HandshakeSide = { id: this.peer, token: h.token, keyNonce: h.keyNonce, flags: h.flags };
    const ctx = handshakeContext(this.side(), them);
    if (!macEquals(h.mac, mac(this.pairKey(), 'railcomm-udp-B', n, h.nonce, ctx))) {
      this.rail.counters.refused++;
      env.log.warnEvery('udp-bad-answer', `udp: ignored an answer claiming to be peer ${formatId(this.peer)}: it does not know the job key`);
      return;
    }
    if (this.state !== State.CONNECTING && (!this.session.open || h.token !== this.session.token)) return;
    const b = this.proofBuf ??= Buffer.alloc(HS_BYTES);
    this.writeHandshake(b, T_PROOF, n, mac(this.pairKey(), 'railcomm-udp-A', h.nonce, n, ctx));
    this.rail.transmitRaw(this, b, HS_BYTES, true);
    if (this.state !== State.CONNECTING) return;
    this.peerToken = h.token;
    this.peerKeyNonce = Buffer.from(h.keyNonce);
    this.peerFlags = h.flags;
    this.becomeOpen(h.credit);
  }

  /** One of the peer's HELLOs proved the key (handshake.ts): its address and token are the peer's. */
  acceptProven(a: Accept): void {
    this.provenNonce = a.peerNonce;
    this.provenToken = a.them.token;
    if (this.state !== State.IDLE && this.state !== State.CONNECTING) return; // open already (through our own connect)
    this.ip = a.ip;
    this.dataPort = a.dataPort;
    this.prioPort = a.prioPort;
    this.peerToken = a.them.token;
    this.peerKeyNonce = a.them.keyNonce;
    this.peerFlags = a.them.flags;
    this.becomeOpen(a.credit);
  }

  /** A datagram with our token came before the session opened here (our PROOF-awaited CHALLENGE was lost): ask again. */
  earlyData(): void {
    this.rail.earlyData(this.peer);
  }

  private becomeOpen(credit: number): void {
    const r = this.rail;
    const env = r.env;
    if ((this.peerFlags & HS_AUTH) !== (r.hsFlags & HS_AUTH)) {
      const mine = (r.hsFlags & HS_AUTH) !== 0 ? 1 : 0;
      this.fail(this.error(`RAILCOMM_UDP_AUTH is ${mine} here but ${1 - mine} at the peer: set it alike on every rank (1, the default: every datagram carries a MAC)`), false);
      return;
    }
    this.state = State.OPEN;
    r.handshakeDone(this);
    let key: Uint8Array | null = null;
    if ((r.hsFlags & HS_AUTH) !== 0) {
      const ctx = sessionContext(this.side(), { id: this.peer, token: this.peerToken, keyNonce: this.peerKeyNonce, flags: this.peerFlags });
      key = new Uint8Array(mac(this.pairKey(), 'railcomm-udp-session-key', ctx).subarray(0, 16));
    }
    // Each side's sequence numbers start at the token the receiver chose.
    this.session.start(this.peerToken, this.peerToken, this.myToken, credit, key);
    env.log.debug(`udp: connected to peer ${formatId(this.peer)} (${this.ip}:${this.dataPort}:${this.prioPort})`);
    r.upcalls.accepted(this);
    if (this.closeWhenOpen) this.beginClose();
  }

  /**
   * A datagram with this session's token failed its MAC: forged, or corrupt
   * on the way (which the MAC catches too). A 32-bit tag lets one forged
   * datagram pass with probability 2^-32; as with SRTP's 32-bit tags (RFC
   * 3711) a forger must send every guess, and the session is ended after
   * MAC_FAILURE_LIMIT (2^16) failures so that its chance stays below 2^-16.
   */
  badMac(): void {
    if (++this.session.badMacs < MAC_FAILURE_LIMIT) return;
    this.protocolError(`${MAC_FAILURE_LIMIT} datagrams carrying this session's token failed authentication (forged, or corrupted on the way); ending the session keeps a forgery improbable`);
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
    this.rail.dropSession(this, this.peerToken, this.session.macKey);
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

  /** Keepalive (keepalive.ts): since when the layer above waits on this peer (0: it does not), the last probe, the last port check and the one in flight. */
  waitStart = 0;
  lastProbe = 0;
  lastPortCheck = 0;
  portCheck: object | null = null;

  /** The peer's host says nothing listens on its port any more (keepalive.ts): it is gone. */
  portClosed(): void {
    if (this.state === State.CLOSED) return;
    if (this.state === State.CLOSING && this.peerBye) { this.finishClose(); return; } // it said goodbye and went: as timedOut
    this.drop(this.error(`its udp port is closed (its host answered "port unreachable" to a keepalive probe): the process ended, or closed its rail without a word`));
  }

  /**
   * This rank gives up on the peer over this rail (multirail: the lane
   * stopped answering while another answers). Failed at once, not graceful
   * and not counted as bad: the session stops retransmitting, what waits in
   * it (zero-copy sends) completes with ERR_PEER_FAILED, and the rail forgets
   * the endpoint, so that a rejoin gets a fresh one and a fresh session. A
   * close() instead would wait on a BYE the silent path never acknowledges
   * (finalize held for RAILCOMM_CONNECT_TIMEOUT), keep retransmitting, refuse
   * the peer's HELLOs meanwhile, and be handed back to the lane's rejoin
   * attempts, whose sends it drops. The peer is not sent a RESET now
   * (multirail tells it on a lane that lives, with the reason); the session
   * is remembered, and what it still sends on it draws one.
   */
  giveUp(reason: string): void {
    if (this.state === State.CLOSED) return;
    this.rail.env.log.debug(`udp: giving up on peer ${formatId(this.peer)}: ${reason}`);
    this.rail.dropSession(this, this.peerToken, this.session.macKey, false);
    this.fail(this.error(`given up on: ${reason}`), false);
  }

  /** The layer above learned the peer died: fail it here (and tell it, should it live after all). */
  died(why: string): void {
    if (this.state === State.CLOSED) return;
    this.drop(this.error(why));
  }

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
      // (An IDLE endpoint with sends queued and HELLOs of the peer pending connects too: those may be forged.)
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
    const key = this.session.macKey;
    if (key !== null) { markMac(v); setSum(v, datagramMac(this.ackBuf, ACK_BYTES, key)); }
    else setSum(v, datagramSum(v, this.ackBuf, ACK_BYTES, this.ackWords));
  }
}
