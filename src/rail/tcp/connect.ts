// How one tcp endpoint gets its connection: dialling the peer (with retries
// until the connect timeout, each try bounded by the handshake timeout) and
// proving a connection the peer dialled, both with the job key (or the pair
// key of another job's rank). Whichever proven connection comes first is
// handed to the endpoint (endpoint.ts attach); the rail decides which of two
// crossing dials goes on (rail.ts, lower id wins).

import net from 'node:net';
import { keyOfJob } from '../api.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { mac, macEquals, nonce } from '../../core/auth.js';
import { formatId, jobOf } from '../../core/ids.js';
import { FrameReader } from './reader.js';
import {
  CHALLENGE_BYTES, HS_CHALLENGE, HS_REJECT, PROOF_BYTES, RejectReason,
  decodeChallenge, decodeProof, encodeChallenge, encodeHello, encodeProof, idBytes,
} from './wire.js';
import type { TcpRail } from './rail.js';

/** How long our own connection attempt waits while the peer's connection to us is being proven (ms). */
const ACCEPT_GRACE_MS = 500;

/** What the connector needs of its endpoint. */
export interface ConnectorHost {
  readonly rail: TcpRail;
  readonly peer: bigint;
  readonly peerAddress: string;
  /** Still connecting and without a connection: a dial may go on. */
  readonly wantsConnection: boolean;
  /** Still connecting (a dial that was refused as a duplicate may retry). */
  readonly connectingState: boolean;
  /** A proven connection: the endpoint takes it, or drops it if it has one or is closing. */
  attach(s: net.Socket, reader: FrameReader): void;
  fail(err: RailcommError, graceful: boolean): void;
  connError(msg: string): RailcommError;
  /** A connection the peer dialled was not proven: the endpoint decides whether to dial itself. */
  incomingRefused(): void;
}

export class Connector {
  private readonly ep: ConnectorHost;
  /** Our dial under way, until proven or abandoned. */
  private outgoing: net.Socket | null = null;
  /** Handshakes of the peer's connections to us under way, and since when (ms): our own attempt waits for them a moment (dial). */
  private accepting = 0;
  private acceptingSince = 0;
  private deadline = 0;
  private tries = 0;
  /** Why the last attempt failed (or the open connection's last error), for messages. */
  lastError = '';
  private retryTimer: NodeJS.Timeout | null = null;
  /** Abandons the connection attempt under way (marks it settled first). */
  private abandonAttempt: (() => void) | null = null;

  constructor(ep: ConnectorHost) {
    this.ep = ep;
  }

  /** Our own dial is under way. */
  get dialing(): boolean { return this.outgoing !== null; }

  /** No dial under way and no handshake of the peer's being proven. */
  get quiet(): boolean { return this.outgoing === null && this.accepting === 0; }

  /** Begin connecting (the endpoint just entered its connecting state). */
  start(): void {
    this.deadline = Date.now() + this.ep.rail.env.params.connectTimeout;
    this.tries = 0;
    this.dial();
  }

  /** Drop a retry that is due later. */
  stopRetry(): void {
    if (this.retryTimer !== null) { clearTimeout(this.retryTimer); this.retryTimer = null; }
  }

  /** Stop everything under way: the retry and our own attempt (the endpoint failed or the peer's connection won). */
  cancel(): void {
    this.stopRetry();
    this.abandonAttempt?.();
  }

  /** Dial now, dropping a retry due later (it was waiting for a handshake of the peer's that failed). */
  dialNow(): void {
    this.stopRetry();
    this.dial();
  }

  /** The message for a dial that gave up. */
  private cannotConnect(why: string): RailcommError {
    return this.ep.connError(`cannot connect to ${this.ep.peerAddress} on device ${this.ep.rail.device.name} after ${this.tries} tries: ${why}`);
  }

  private retryIn(ms: number): void {
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.dial(), ms);
  }

  private dial(): void {
    const ep = this.ep;
    const rail = ep.rail;
    this.retryTimer = null;
    if (ep.wantsConnection && Date.now() >= this.deadline) {
      ep.fail(this.cannotConnect(this.lastError || 'no answer'), false);
      return;
    }
    if (!ep.wantsConnection) return;
    // The peer's connection is being proven: it becomes the one (or, refused,
    // its finish connects us). Dialling now could leave each side keeping the
    // connection the other dropped, and what was written on it lost. Only for
    // ACCEPT_GRACE_MS: a HELLO is a mere claim, and a stranger sending them
    // must not keep us from the real peer.
    if (this.accepting > 0) {
      const wait = this.acceptingSince + ACCEPT_GRACE_MS - Date.now();
      if (wait > 0) { if (this.retryTimer === null) this.retryIn(wait); return; }
    }
    const [host, portText] = splitAddress(ep.peerAddress);
    if (this.outgoing !== null) return;
    const reader = new FrameReader(rail.env.params.tcpRecvBuffer, rail.caps.amHeaderMax, rail.env.params.tcpMaxFrame, rail.upcalls.activity);
    this.tries++;
    const s = net.connect({ host, port: Number(portText), noDelay: true, onread: { buffer: reader.nextBuffer, callback: reader.onRead } });
    this.outgoing = s;
    const myNonce = nonce();
    const ids = idBytes(rail.env.self, ep.peer);
    let settled = false;
    // A dial the kernel would wait on for minutes (a SYN that is dropped: some
    // 130 s of retries) ends after the handshake timeout; the next try, or the
    // connect timeout's error, follows. Only until the connection is made: a
    // peer's kernel answers for it, and a rank busy in a long computation
    // sends its CHALLENGE when its event loop runs again.
    const patience = Math.min(rail.env.params.handshakeTimeout, Math.max(1, this.deadline - Date.now()));
    const attemptTimer = setTimeout(() => giveUp(`the connection request got no answer within ${patience} ms`, true), patience);
    const abandon = (): void => {
      settled = true;
      clearTimeout(attemptTimer);
      reader.stop();
      s.destroy();
      if (this.outgoing === s) this.outgoing = null;
      if (this.abandonAttempt === abandon) this.abandonAttempt = null;
    };
    this.abandonAttempt = abandon;
    const giveUp = (why: string, retry: boolean): void => {
      if (settled) return;
      abandon();
      if (!ep.wantsConnection) return;
      this.lastError = why;
      if (retry && Date.now() < this.deadline) {
        this.retryIn(Math.min(1000, 20 * 2 ** Math.min(this.tries, 6)));
        return;
      }
      ep.fail(this.cannotConnect(why), false);
    };
    s.once('connect', () => {
      clearTimeout(attemptTimer);
      s.write(encodeHello({ jobId: rail.env.jobId, from: rail.env.self, to: ep.peer, nonce: myNonce }));
      reader.expect(CHALLENGE_BYTES, (b) => {
        const ch = decodeChallenge(b);
        if (typeof ch === 'string') { rail.counters.refused++; giveUp(ch, false); return; }
        if (ch.reject !== 0) {
          abandon();
          if (ch.reject === RejectReason.DUPLICATE) {
            // The peer's own connection wins (lower id). Should it never come
            // (the peer gave up, or its socket was dying), try again ourselves.
            this.lastError = 'the peer is connecting to us';
            if (ep.connectingState) this.retryIn(1000);
            return;
          }
          if (ch.reject === RejectReason.CLOSING) {
            ep.fail(new RailcommError(ErrorCode.PEER_FAILED, `peer ${formatId(ep.peer)} is finalizing and takes no new connections`), true);
            return;
          }
          ep.fail(ep.connError(`the peer refused the connection (reason ${ch.reject})`), false);
          return;
        }
        const expect = mac(this.pairKey(), 'railcomm-tcp-A', myNonce, ch.nonce, ids);
        if (!macEquals(expect, ch.mac)) { rail.counters.refused++; giveUp('the peer does not know the job key', false); return; }
        s.write(encodeProof(mac(this.pairKey(), 'railcomm-tcp-C', ch.nonce, myNonce, ids)));
        settled = true;
        this.outgoing = null;
        if (this.abandonAttempt === abandon) this.abandonAttempt = null;
        ep.attach(s, reader);
      });
    });
    s.on('error', (err: NodeJS.ErrnoException) => {
      if (!settled) giveUp(`${err.code ?? ''} ${err.message}`.trim(), err.code !== 'ECONNREFUSED' || this.tries < 4);
    });
    s.on('close', () => { if (!settled) giveUp('connection closed during handshake', true); });
  }

  /** The acceptor side of a handshake, after HELLO named us and this peer. */
  accept(s: net.Socket, reader: FrameReader, peerNonce: Buffer): void {
    const ep = this.ep;
    const env = ep.rail.env;
    const myNonce = nonce();
    const ids = idBytes(ep.peer, env.self);
    const from = `${s.remoteAddress}:${s.remotePort}`;
    const timer = setTimeout(() => { ep.rail.counters.refused++; finish(false, 'handshake timed out'); }, env.params.handshakeTimeout);
    let done = false;
    if (this.accepting++ === 0) this.acceptingSince = Date.now();
    const finish = (ok: boolean, why: string): void => {
      if (done) return;
      done = true;
      this.accepting--;
      clearTimeout(timer);
      if (ok) {
        // Proven: the peer's connection wins over ours (it has the lower id, or we had none).
        if (this.outgoing !== null) this.cancel();
        ep.attach(s, reader);
        return;
      }
      env.log.warnEvery('tcp-refused', `tcp: refused connection claiming to be peer ${formatId(ep.peer)} from ${from}: ${why}`);
      reader.stop();
      s.destroy();
      ep.rail.handshakeDone(s);
      ep.incomingRefused();
    };
    s.write(encodeChallenge(HS_CHALLENGE, 0, myNonce, mac(this.pairKey(), 'railcomm-tcp-A', peerNonce, myNonce, ids)));
    reader.expect(PROOF_BYTES, (b) => {
      const proof = decodeProof(b);
      if (typeof proof === 'string') { ep.rail.counters.refused++; finish(false, proof); return; }
      if (!macEquals(proof, mac(this.pairKey(), 'railcomm-tcp-C', myNonce, peerNonce, ids))) {
        ep.rail.counters.refused++;
        finish(false, 'it does not know the job key');
        return;
      }
      finish(true, '');
    });
    s.on('close', () => finish(false, 'closed during handshake'));
    s.on('error', () => { /* close follows */ });
  }

  /** The key this peer proves: the job key, or the pair key of its job when it is another job's rank (ports, spawn). */
  private pairKey(): string {
    const env = this.ep.rail.env;
    return keyOfJob(env, jobOf(this.ep.peer)) ?? env.jobKey;
  }

  /** Refuse a connection before its handshake (wrong job or peer, a duplicate, or we are closing). */
  static reject(s: net.Socket, reason: number): void {
    s.end(encodeChallenge(HS_REJECT, reason, Buffer.alloc(16), Buffer.alloc(32)));
    setTimeout(() => s.destroy(), 1000).unref();
  }
}

export function splitAddress(a: string): [string, string] {
  const i = a.lastIndexOf(':');
  return [a.slice(0, i).replace(/^\[|\]$/g, ''), a.slice(i + 1)];
}
