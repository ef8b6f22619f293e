// Incoming udp handshakes before they prove the job key: each HELLO is
// answered with a CHALLENGE of its own (its own nonce, sent to the address
// that HELLO names) and waits for its PROOF; nothing a HELLO says (its address,
// token, nonce) touches an endpoint before then. Several may wait per claimed
// peer at once (a real peer's among forgeries that merely claim its rank),
// bounded per peer and per rail with the oldest evicted, so strangers can
// neither fill the table nor keep out a real peer that keeps trying.

import { mac, macEquals, nonce } from '../../core/auth.js';
import { formatId, jobOf } from '../../core/ids.js';
import { keyOfJob, type RailEnv } from '../api.js';
import type { UdpCounters } from './counters.js';
import type { UdpEndpoint } from './endpoint.js';
import { datagramSum } from './checksum.js';
import {
  HS_BYTES, T_CHALLENGE, T_HELLO, T_PROOF,
  decodeHandshake, encodeHandshake, handshakeContext, setSum, type Handshake, type HandshakeSide,
} from './wire.js';

/** Incoming handshakes that may wait at once per claimed peer (the oldest goes first). */
export const ACCEPTS_PER_PEER = 8;
/**
 * Incoming handshakes that may wait at once for peers this rail has no
 * endpoint for (first contacts, and strangers' made-up ranks): about 0.5 KiB
 * each. The oldest is evicted, never a new one refused: a stranger's flood
 * then costs a real first contact its slot only if it outpaces the round trip.
 */
export const STRANGER_ACCEPTS = 1024;
/** A CHALLENGE is sent again (for a repeated HELLO, or early data) at most this often (ms). */
const RESEND_MS = 10;

/** What the handshakes need of their rail. */
export interface HandshakeHost {
  readonly env: RailEnv;
  readonly counters: UdpCounters;
  /** This rail's handshake flags (HS_AUTH when it requires MACs). */
  readonly hsFlags: number;
  /** The rail is closing: no new peers. */
  readonly closingDown: boolean;
  /** This rail's ports (named in handshakes). */
  readonly dataPort: number;
  readonly prioPort: number;
  now(): number;
  /** A fresh token nobody here holds (endpoints, tombs, strangers). */
  newToken(): number;
  endpointOf(peer: bigint): UdpEndpoint | undefined;
  /** An endpoint for a peer that proved the key (takes its stranger's token and key nonce). */
  adopt(peer: bigint): UdpEndpoint;
  /** Credit offered in a CHALLENGE. */
  handshakeCredit(): number;
  /** One handshake datagram to ip:port on the priority channel. */
  sendRaw(buf: Buffer, len: number, port: number, ip: string): void;
}

/** The token and key nonce an endpoint for a peer not yet known here will take (the ones its CHALLENGEs named). */
export interface Stranger {
  readonly token: number;
  readonly keyNonce: Buffer;
}

/** One HELLO answered with a CHALLENGE, waiting for its PROOF. */
export class Accept {
  readonly peer: bigint;
  /** The connector as its HELLO describes it (believed only once the PROOF verifies). */
  readonly them: HandshakeSide;
  readonly peerNonce: Buffer;
  readonly myNonce = nonce();
  readonly ip: string;
  readonly dataPort: number;
  readonly prioPort: number;
  readonly credit: number;
  /** What both MACs cover besides the nonces. */
  readonly ctx: Buffer;
  /** The CHALLENGE, sent again for a repeated HELLO or early data. */
  readonly buf = Buffer.alloc(HS_BYTES);
  readonly deadline: number;
  /** For a peer with no endpoint here (counts against STRANGER_ACCEPTS). */
  stranger: boolean;
  lastSent = -Infinity;

  constructor(h: Handshake, ip: string, me: HandshakeSide, stranger: boolean, deadline: number) {
    this.peer = h.from;
    this.them = { id: h.from, token: h.token, keyNonce: h.keyNonce, flags: h.flags };
    this.peerNonce = h.nonce;
    this.ip = ip;
    this.dataPort = h.dataPort;
    this.prioPort = h.prioPort;
    this.credit = h.credit;
    this.ctx = handshakeContext(this.them, me);
    this.stranger = stranger;
    this.deadline = deadline;
  }

  /** The same HELLO again (a retransmission: our CHALLENGE was lost), from the same place. */
  answers(h: Handshake, ip: string): boolean {
    return ip === this.ip && h.prioPort === this.prioPort && h.dataPort === this.dataPort && h.token === this.them.token && h.nonce.equals(this.peerNonce);
  }
}

export class Handshakes {
  private readonly host: HandshakeHost;
  private readonly byPeer = new Map<bigint, Accept[]>();
  /** Every pending accept in arrival order, which is also deadline order (one timeout for all). */
  private readonly all = new Set<Accept>();
  /** Pending accepts for peers with no endpoint here, oldest first. */
  private readonly strangerOrder = new Set<Accept>();
  private readonly strangers = new Map<bigint, Stranger>();
  private readonly strangerTokens = new Map<number, bigint>();

  constructor(host: HandshakeHost) {
    this.host = host;
  }

  /** Incoming handshakes waiting for their PROOF. */
  get pending(): number { return this.all.size; }

  /** Whether a stranger holds this token (an endpoint for it will take it). */
  tokenTaken(token: number): boolean {
    return this.strangerTokens.has(token);
  }

  /** An endpoint is being made for `peer`: the token and key nonce its pending CHALLENGEs named, if any. */
  takeStranger(peer: bigint): Stranger | undefined {
    const st = this.strangers.get(peer);
    if (st === undefined) return undefined;
    this.strangers.delete(peer);
    this.strangerTokens.delete(st.token);
    for (const a of this.byPeer.get(peer) ?? []) { a.stranger = false; this.strangerOrder.delete(a); }
    return st;
  }

  /** A handshake datagram (structure and checksum checked). */
  receive(msg: Buffer, type: number, ip: string): void {
    const h = decodeHandshake(msg);
    const env = this.host.env;
    // Ranks of this job, or of a job a port or spawn connected (it proves the pair's key).
    if (keyOfJob(env, h.jobId) === null || jobOf(h.from) !== h.jobId || h.to !== env.self) { this.host.counters.refused++; return; }
    if (type === T_HELLO) this.onHello(h, ip);
    else if (type === T_PROOF) this.onProof(h);
    else if (type === T_CHALLENGE) {
      const ep = this.host.endpointOf(h.from);
      if (ep === undefined) this.host.counters.refused++;
      else ep.onChallenge(h);
    }
  }

  private onHello(h: Handshake, ip: string): void {
    const host = this.host;
    const ep = host.endpointOf(h.from);
    if (ep !== undefined ? ep.closing || ep.isClosed : host.closingDown) { host.counters.refused++; return; }
    let list = this.byPeer.get(h.from);
    if (list !== undefined) {
      for (const a of list) if (a.answers(h, ip)) { this.resend(a, 0); return; }
      if (list.length >= ACCEPTS_PER_PEER) this.evict(list[0]!);
    }
    if (ep === undefined && this.strangerOrder.size >= STRANGER_ACCEPTS) this.evict(this.strangerOrder.values().next().value!);
    let me: HandshakeSide;
    if (ep !== undefined) me = ep.side();
    else {
      let st = this.strangers.get(h.from);
      if (st === undefined) {
        st = { token: host.newToken(), keyNonce: nonce() };
        this.strangers.set(h.from, st);
        this.strangerTokens.set(st.token, h.from);
      }
      me = { id: host.env.self, token: st.token, keyNonce: st.keyNonce, flags: host.hsFlags };
    }
    const a = new Accept(h, ip, me, ep === undefined, host.now() + host.env.params.handshakeTimeout);
    list = this.byPeer.get(h.from);
    if (list === undefined) { list = []; this.byPeer.set(h.from, list); }
    list.push(a);
    this.all.add(a);
    if (a.stranger) this.strangerOrder.add(a);
    const m = mac(keyOfJob(host.env, jobOf(h.from)) ?? host.env.jobKey, 'railcomm-udp-B', a.peerNonce, a.myNonce, a.ctx);
    encodeHandshake(a.buf, {
      type: T_CHALLENGE, jobId: host.env.jobId, token: me.token, from: host.env.self, to: h.from, nonce: a.myNonce,
      dataPort: host.dataPort, prioPort: host.prioPort, credit: host.handshakeCredit(), mac: m, keyNonce: Buffer.from(me.keyNonce), flags: me.flags,
    });
    setSum(new DataView(a.buf.buffer, a.buf.byteOffset, HS_BYTES), datagramSum(new DataView(a.buf.buffer, a.buf.byteOffset, HS_BYTES), a.buf, HS_BYTES));
    this.resend(a, 0);
  }

  /** A PROOF: the accept it answers (its MAC verifies) opens the endpoint; the peer's other accepts go. */
  private onProof(h: Handshake): void {
    const host = this.host;
    const env = host.env;
    const list = this.byPeer.get(h.from);
    let won: Accept | null = null;
    for (const a of list ?? []) {
      if (!a.peerNonce.equals(h.nonce) || h.token !== a.them.token) continue;
      if (macEquals(h.mac, mac(keyOfJob(env, jobOf(h.from)) ?? env.jobKey, 'railcomm-udp-A', a.myNonce, a.peerNonce, a.ctx))) { won = a; break; }
    }
    if (won === null) {
      // A second copy of the PROOF that opened the session: the peer answered our CHALLENGE twice.
      const open = host.endpointOf(h.from);
      if (open !== undefined && h.token === open.provenToken && open.provenNonce?.equals(h.nonce) === true) return;
      host.counters.refused++;
      env.log.warnEvery('udp-refused', `udp: refused a handshake claiming to be peer ${formatId(h.from)}: it does not know the job key (or its handshake was evicted or timed out)`);
      return;
    }
    const ep = host.endpointOf(h.from) ?? host.adopt(h.from);
    this.dropPeer(h.from);
    ep.acceptProven(won);
  }

  /**
   * A datagram with the token of a peer whose session is not open here yet:
   * its PROOF was lost (it sends data already). Ask again: each pending
   * CHALLENGE of that peer, to its own address.
   */
  earlyData(peer: bigint): void {
    for (const a of this.byPeer.get(peer) ?? []) this.resend(a, RESEND_MS);
  }

  /** The same for a token only a stranger holds; false when nobody holds it. */
  earlyDataFor(token: number): boolean {
    const peer = this.strangerTokens.get(token);
    if (peer === undefined) return false;
    this.earlyData(peer);
    return true;
  }

  private resend(a: Accept, every: number): void {
    const now = this.host.now();
    if (now - a.lastSent < every) return;
    a.lastSent = now;
    this.host.sendRaw(a.buf, HS_BYTES, a.prioPort, a.ip);
  }

  /** Forget pending accepts past their deadline (the oldest first: the set is in deadline order). */
  expire(now: number): void {
    for (const a of this.all) {
      if (a.deadline > now) break;
      this.remove(a);
    }
  }

  /** Every pending accept of `peer` (it opened, or its endpoint went). */
  dropPeer(peer: bigint): void {
    const list = this.byPeer.get(peer);
    if (list === undefined) return;
    for (const a of [...list]) this.remove(a);
  }

  clear(): void {
    this.byPeer.clear();
    this.all.clear();
    this.strangerOrder.clear();
    this.strangers.clear();
    this.strangerTokens.clear();
  }

  private evict(a: Accept): void {
    this.host.counters.hsEvicted++;
    this.remove(a);
  }

  private remove(a: Accept): void {
    this.all.delete(a);
    this.strangerOrder.delete(a);
    const list = this.byPeer.get(a.peer);
    if (list === undefined) return;
    const i = list.indexOf(a);
    if (i >= 0) list.splice(i, 1);
    if (list.length > 0) return;
    this.byPeer.delete(a.peer);
    // The last one of a stranger: its token is free again.
    const st = this.strangers.get(a.peer);
    if (st !== undefined) { this.strangers.delete(a.peer); this.strangerTokens.delete(st.token); }
  }
}
