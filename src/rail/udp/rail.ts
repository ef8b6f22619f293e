// The udp rail: two sockets on one device (priority: ACKs, handshakes and tiny
// fragments; data: everything else and every retransmission), the sessions by
// peer and by token, and progress: each receive burst ends with a pass that
// sends retransmissions, then posts for ready endpoints, then explicit ACKs;
// a coarse timer backs the hotel and delayed ACKs up while anything is pending.

import type dgram from 'node:dgram';
import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { AmHandler, Device, Rail, RailCaps, RailEnv, RailUpcalls } from '../api.js';
import { FreeList } from '../../core/freelist.js';
import { GuestList, Hotel } from '../../core/hotel.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { formatId } from '../../core/ids.js';
import { UdpCounters } from './counters.js';
import { Frag, SEG_OVERHEAD, Segment } from './segment.js';
import { Session, expireToSession, type SessionHost, type SessionLimits } from './session.js';
import { UdpEndpoint } from './endpoint.js';
import { Handshakes, type HandshakeHost } from './handshake.js';
import { Keepalive, type KeepaliveHost } from './keepalive.js';
import { datagramSum } from './checksum.js';
import { datagramMac } from './mac.js';
import { nonce } from '../../core/auth.js';
import { FaultInjector, parseFaults, type FaultWire } from './faults.js';
import { loadNative } from '../../native/addon.js';
import { seqAdd } from '../../core/seq.js';
import {
  ACK_BYTES, Bad, COMMON_BYTES, HS_AUTH, T_HELLO, T_PROOF, T_RESET,
  checkDatagram, getSeq, getSum, getToken, getType, isMac,
} from './wire.js';
import { Tombstones } from './tombs.js';
import { FRAG_MAX, HDR_MAX, sessionLimits, udpCaps } from './limits.js';
import { bindSocket, udpSocket } from './sockets.js';
import { SendPath } from './send-path.js';

/** The backstop timer's period (ms); the hotel's resolution is 1 ms. */
const TICK_MS = 2;

export class UdpRail implements Rail, SessionHost, FaultWire, HandshakeHost, KeepaliveHost {
  readonly name: string;
  readonly component = 'udp';
  readonly device: Device;
  readonly caps: RailCaps;
  readonly counters = new UdpCounters();
  readonly env: RailEnv;
  readonly upcalls: RailUpcalls;
  readonly handlers: ReadonlyArray<AmHandler | undefined>;
  readonly hotel: Hotel;
  readonly retx = new GuestList('retx');
  readonly limits: SessionLimits;
  dataPort = 0;
  prioPort = 0;
  private ip: string;
  private readonly data: dgram.Socket;
  private readonly prio: dgram.Socket;
  private readonly endpoints = new Map<bigint, UdpEndpoint>();
  private readonly byToken = new Map<number, UdpEndpoint>();
  /** Sessions this rail dropped, still answered with RESETs. */
  private readonly tombs: Tombstones;
  /** Endpoints whose own connect is under way. */
  private readonly handshaking = new Set<UdpEndpoint>();
  /** Incoming handshakes waiting for their PROOF. */
  private readonly hs: Handshakes;
  /** Handshake flags: HS_AUTH when sessions carry MACs (RAILCOMM_UDP_AUTH). */
  readonly hsFlags: number;
  private readonly dataSegs: FreeList<Segment>;
  private readonly tinySegs: FreeList<Segment>;
  private readonly frags: FreeList<Frag>;
  private ready: Session[] = [];
  private readySpare: Session[] = [];
  private acks: Session[] = [];
  private acksSpare: Session[] = [];
  private passScheduled = false;
  /** Sessions that posted a datagram at once in the current synchronous run (Session.corked). */
  private corked: Session[] = [];
  private corkedSpare: Session[] = [];
  private timer: NodeJS.Timeout | null = null;
  private lastPeerCheck = 0;
  /** The slow keepalive check (unref'd: it never holds a finished rank open). */
  private liveness: NodeJS.Timeout | null = null;
  private rxBudget = 1 << 20;
  private openCount = 0;
  /** Peers that share the receive budget (for grant()); read by the conformance suite. */
  get openPeers(): number { return this.openCount; }
  private closing = false;
  private closed = false;
  private readonly faults: FaultInjector | null;
  private readonly peerTimeoutMs: number;
  private readonly keepalive: Keepalive;
  private readonly ackDelay: number;
  /** How datagrams leave the two sockets (send-path.ts: one sendmmsg per pass). */
  private readonly out: SendPath;
  private readonly pass = (): void => this.runPass();
  private readonly onTimer = (): void => this.tick();
  private readonly onMessage = (msg: Buffer, rinfo: dgram.RemoteInfo): void => this.receive(msg, rinfo);

  private constructor(device: Device, env: RailEnv, mtu: number) {
    this.device = device;
    this.env = env;
    this.upcalls = env.upcalls;
    this.handlers = env.upcalls.am;
    this.name = `udp:${device.name}`;
    this.ip = device.address ?? '127.0.0.1';
    const p = env.params;
    this.limits = sessionLimits(p, mtu);
    const tinyMax = this.limits.tinyMax;
    this.caps = udpCaps(device, mtu);
    this.hotel = new Hotel(performance.now(), 1, 4096);
    this.dataSegs = new FreeList(() => new Segment(mtu, false), 4096);
    this.tinySegs = new FreeList(() => new Segment(tinyMax, true), 4096);
    this.frags = new FreeList(() => new Frag(HDR_MAX), 1024);
    this.counters.refresh = () => this.refreshGauges();
    this.hsFlags = p.udpAuth ? HS_AUTH : 0;
    this.hs = new Handshakes(this);
    this.peerTimeoutMs = p.udpPeerTimeout * 1000;
    this.keepalive = new Keepalive(this, this.peerTimeoutMs);
    this.ackDelay = p.udpAckDelay;
    const f = parseFaults(p.udpFaults);
    this.faults = f === null ? null : new FaultInjector(f, this, this.counters);
    this.data = udpSocket(p.udpSocketBuffer);
    this.prio = udpSocket(p.udpSocketBuffer);
    this.out = new SendPath(this.data, this.prio, this.counters);
    this.tombs = new Tombstones((b, port, ip) => {
      if (this.closed) return;
      if (this.faults !== null) this.faults.send(b, b.length, port, ip, true);
      else this.prio.send(b, 0, b.length, port, ip);
    }, () => this.now());
    for (const s of [this.data, this.prio]) {
      s.on('message', this.onMessage);
      s.on('error', (err) => env.log.warn(`udp: socket error on ${this.name}: ${err.message}`));
    }
  }

  static async open(device: Device, env: RailEnv, mtu: number): Promise<UdpRail> {
    const rail = new UdpRail(device, env, mtu);
    try {
      rail.dataPort = await bindSocket(rail.data, rail.ip);
      rail.prioPort = await bindSocket(rail.prio, rail.ip);
    } catch (err) {
      rail.data.close();
      rail.prio.close();
      throw new RailcommError(ErrorCode.NO_RAIL, `udp: cannot bind on ${rail.ip} (device ${device.name}): ${(err as Error).message}`, { cause: err });
    }
    const native = loadNative();
    if (native !== null && typeof native.udpSendBatch === 'function' && rail.faults === null) rail.out.useAddon(native.udpSendBatch);
    // The kernel doubles what it grants for its own bookkeeping: half is ours.
    rail.rxBudget = Math.max(4 * (mtu + SEG_OVERHEAD), Math.floor(rail.data.getRecvBufferSize() / 2));
    // Sockets alone must not keep a finished rank alive.
    rail.data.unref();
    rail.prio.unref();
    rail.liveness = setInterval(() => { if (!rail.closed) rail.keepalive.waited(rail.now()); }, Math.max(50, Math.min(1000, rail.peerTimeoutMs / 6)));
    rail.liveness.unref();
    return rail;
  }

  address(): string {
    return `${this.ip}:${this.dataPort}:${this.prioPort}`;
  }

  whyNot(address: string): string | null {
    return address.split(':').length === 3 ? null : `its address is not a udp address (ip:dataPort:prioPort): ${address}`;
  }

  endpoint(peer: bigint, address: string): UdpEndpoint {
    const ep = this.endpoints.get(peer);
    if (ep === undefined) return this.createEndpoint(peer, address);
    ep.setAddress(address);
    return ep;
  }

  /** A new endpoint; a peer whose HELLOs wait here gets the token and key nonce their CHALLENGEs named. */
  private createEndpoint(peer: bigint, address: string): UdpEndpoint {
    const st = this.hs.takeStranger(peer);
    const token = st?.token ?? this.newToken();
    const ep = new UdpEndpoint(this, peer, address, token, st?.keyNonce ?? nonce());
    this.endpoints.set(peer, ep);
    this.byToken.set(token, ep);
    return ep;
  }

  // ---- HandshakeHost ---------------------------------------------------------

  get closingDown(): boolean { return this.closing; }

  newToken(): number {
    let token = 0;
    while (token === 0 || this.byToken.has(token) || this.tombs.has(token) || this.hs.tokenTaken(token)) token = randomInt(1, 0xffffffff);
    return token;
  }

  endpointOf(peer: bigint): UdpEndpoint | undefined {
    return this.endpoints.get(peer);
  }

  adopt(peer: bigint): UdpEndpoint {
    return this.endpoints.get(peer) ?? this.createEndpoint(peer, '');
  }

  handshakeCredit(): number {
    return Math.max(2 * (this.limits.dataMax + SEG_OVERHEAD), Math.floor(this.rxBudget / Math.max(1, this.openCount)));
  }

  sendRaw(buf: Buffer, len: number, port: number, ip: string): void {
    if (this.closed) return;
    if (this.faults !== null) this.faults.send(buf, len, port, ip, true);
    else this.prio.send(buf, 0, len, port, ip);
  }

  /** A datagram with the token of `peer`, whose session is not open here yet. */
  earlyData(peer: bigint): void {
    this.hs.earlyData(peer);
  }

  forget(ep: UdpEndpoint): void {
    if (this.endpoints.get(ep.peer) === ep) { this.endpoints.delete(ep.peer); this.hs.dropPeer(ep.peer); }
    if (this.byToken.get(ep.myToken) === ep) this.byToken.delete(ep.myToken);
    // Not ep.session.open: a failed or closed endpoint's session is already
    // killed here, and the count would never come down (grants shrinking).
    if (ep.countedOpen) { ep.countedOpen = false; this.openCount--; }
  }

  /**
   * A rank the wire-up service saw die: its session ends now, failing what
   * waits for its acknowledgements (a large send under way), instead of at
   * the next port check or RAILCOMM_UDP_PEER_TIMEOUT.
   */
  peerDied(peer: bigint): void {
    this.endpoints.get(peer)?.died('the wire-up service saw it die');
  }

  /**
   * This rail drops `ep`'s session (not in order): tell the peer with a
   * RESET, so that it fails us at once instead of waiting on ACKs until
   * RAILCOMM_CONNECT_TIMEOUT. Call before the session is killed. `resetNow`
   * false: no RESET now, only for what the peer still sends on it (giveUp).
   */
  dropSession(ep: UdpEndpoint, peerToken: number, key: Uint8Array | null, resetNow = true): void {
    if (this.closed || !ep.session.open || ep.ip === '') return;
    this.tombs.drop(ep.ip, ep.prioPort, peerToken, ep.myToken, key, resetNow);
    this.counters.resetsSent = this.tombs.sent;
  }

  handshakeStarted(ep: UdpEndpoint): void {
    this.handshaking.add(ep);
    this.armTimer();
  }

  handshakeDone(ep: UdpEndpoint): void {
    if (this.handshaking.delete(ep) && ep.open && !ep.countedOpen) { ep.countedOpen = true; this.openCount++; }
  }

  closingStarted(): void {
    this.armTimer();
  }

  // ---- SessionHost -----------------------------------------------------------

  now(): number {
    return performance.now();
  }

  segment(tiny: boolean): Segment {
    return tiny ? this.tinySegs.get() : this.dataSegs.get();
  }

  release(seg: Segment): void {
    seg.owner = null;
    (seg.tiny ? this.tinySegs : this.dataSegs).put(seg);
  }

  frag(): Frag {
    return this.frags.get();
  }

  releaseFrag(f: Frag): void {
    this.frags.put(f);
  }

  prioIdle(): boolean {
    return this.prio.getSendQueueCount() === 0;
  }

  grant(_s: Session): number {
    // The receive buffer is shared by every peer that may send at once.
    return this.handshakeCredit();
  }

  transmit(s: Session, buf: Buffer, len: number, prio: boolean): void {
    this.transmitRaw(s.owner as UdpEndpoint, buf, len, prio);
  }

  transmitRaw(ep: UdpEndpoint, buf: Buffer, len: number, prio: boolean): void {
    if (this.closed) return;
    const port = prio ? ep.prioPort : ep.dataPort;
    if (this.faults !== null) this.faults.send(buf, len, port, ep.ip, prio);
    else this.out.send(ep, buf, len, port, prio);
  }

  /** FaultWire: where datagrams go after fault injection. */
  put(buf: Uint8Array, len: number, port: number, ip: string, prio: boolean): void {
    if (this.closed) return;
    (prio ? this.prio : this.data).send(buf, 0, len, port, ip);
  }

  cork(s: Session): void {
    this.corked.push(s);
    if (this.corked.length === 1) queueMicrotask(this.uncork);
  }

  flush(): void {
    if (this.corked.length > 0) this.uncork();
    // A pass waiting for setImmediate (sessions with segments to post, ACKs owed) runs now: a synchronous wait runs no event loop.
    if (this.passScheduled) this.runPass();
  }

  /** The synchronous run that corked sessions ended: their packed datagrams go. */
  private readonly uncork = (): void => {
    const list = this.corked;
    // A send made by uncork's own completions corks again into the other list (two, swapped: nothing allocated per run).
    this.corked = this.corkedSpare;
    for (let i = 0; i < list.length; i++) list[i]!.uncork();
    list.length = 0;
    this.corkedSpare = list;
  };

  wantPass(s: Session): void {
    if (!s.readyListed) { s.readyListed = true; this.ready.push(s); }
    this.schedulePass();
  }

  wantAck(s: Session, urgent: boolean): void {
    s.ackOwed = true;
    if (urgent) s.ackUrgent = true;
    if (!s.ackListed) { s.ackListed = true; this.acks.push(s); }
    this.schedulePass();
  }

  private schedulePass(): void {
    if (this.passScheduled || this.closed) return;
    this.passScheduled = true;
    setImmediate(this.pass);
  }

  sendAck(s: Session, probe = false): void {
    const ep = s.owner as UdpEndpoint;
    ep.encodeAck(seqAdd(s.rx.next, -1), this.grant(s), s.rx.held > 0, s.rx.highest, probe);
    this.transmitRaw(ep, ep.ackBuf, ACK_BYTES, true);
    this.counters.acksSent++;
    s.ackSent();
  }

  // ---- receiving -------------------------------------------------------------

  private receive(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const c = this.counters;
    const len = msg.length;
    if (len < COMMON_BYTES) { c.dropShort++; return; }
    const v = new DataView(msg.buffer, msg.byteOffset, len);
    // A MAC is checked once the token names the session (its key); a sum here.
    const mac = isMac(v);
    const bad = checkDatagram(v, len, mac ? -1 : datagramSum(v, msg, len), HDR_MAX, FRAG_MAX);
    if (bad !== Bad.OK) { c.dropped(bad); return; }
    const type = getType(v);
    if (type >= T_HELLO && type <= T_PROOF) {
      if (mac) { c.dropType++; return; } // handshakes carry a sum: they prove the key themselves
      this.hs.receive(msg, type, rinfo.address);
      this.armTimer();
      return;
    }
    const token = getToken(v);
    const ep = this.byToken.get(token);
    if (ep === undefined) {
      c.dropUnknownPeer++;
      // A peer whose PROOF was lost sends data already: ask again. A peer we
      // dropped that did not hear our RESET (and still has the session's key): say it again.
      if (!this.hs.earlyDataFor(token) && type !== T_RESET && this.tombs.answer(token, msg, v, len)) c.resetsSent = this.tombs.sent;
      return;
    }
    const s = ep.session;
    if (!s.open) { c.dropUnknownPeer++; ep.earlyData(); return; }
    const key = s.macKey;
    if (key !== null) {
      // A session that requires the MAC takes nothing without it: a sniffed token and a valid checksum forge nothing.
      if (!mac) { c.dropNoMac++; return; }
      if (datagramMac(msg, len, key) !== getSum(v)) { c.dropCorrupt++; c.macFailures++; ep.badMac(); return; }
    } else if (mac) { c.dropNoMac++; return; } // (the handshake makes both sides agree: not reached)
    if (type === T_RESET) { ep.onReset(getSeq(v)); return; }
    s.receive(msg, v, len);
    this.schedulePass();
  }

  // ---- progress ----------------------------------------------------------------

  /**
   * One progress pass, at the end of a receive burst or after sends were
   * queued: retransmissions first, then endpoints with segments to post, then
   * ACKs that nothing carried.
   */
  private runPass(): void {
    this.passScheduled = false;
    if (this.closed) return;
    this.out.inPass = true;
    try {
      this.hotel.advance(this.now(), expireToSession);
      for (let g = this.retx.shift(); g !== null; g = this.retx.shift()) {
        const seg = g as Segment;
        (seg.owner as Session).resend(seg);
      }
      const ready = this.ready;
      this.ready = this.readySpare;
      for (let i = 0; i < ready.length; i++) {
        const s = ready[i]!;
        s.readyListed = false;
        if (!s.dead) s.pump();
      }
      ready.length = 0;
      this.readySpare = ready;
    } finally {
      this.out.inPass = false;
      this.out.flush();
    }
    this.flushAcks(false);
    this.upcalls.activity();
    this.armTimer();
  }

  /** Send the ACKs that waited long enough (all of them when `all`). */
  private flushAcks(all: boolean): void {
    const acks = this.acks;
    if (acks.length === 0) return;
    this.acks = this.acksSpare;
    for (let i = 0; i < acks.length; i++) {
      const s = acks[i]!;
      if (!s.ackOwed || s.dead || !s.open) { s.ackListed = false; continue; }
      if (all || s.ackUrgent || ++s.ackAge >= this.ackDelay) { s.ackListed = false; this.sendAck(s); }
      else this.acks.push(s);
    }
    acks.length = 0;
    this.acksSpare = acks;
  }

  /**
   * Keep the backstop timer running while anything waits on time; hold the
   * loop open only for unacknowledged data. SessionHost: sessions call it for
   * every segment they check into the hotel.
   */
  armTimer(): void {
    if (this.closed) return;
    const busy = this.hotel.guests > 0 || this.retx.size > 0 || this.handshaking.size > 0;
    // Strangers' pending handshakes keep the timer (to expire them) but never the process.
    if (!busy && this.acks.length === 0 && this.hs.pending === 0) return;
    if (this.timer === null) this.timer = setTimeout(this.onTimer, TICK_MS);
    if (busy) this.timer.ref(); else this.timer.unref();
  }

  private tick(): void {
    this.timer = null;
    if (this.closed) return;
    const now = this.now();
    this.hotel.advance(now, expireToSession);
    if (this.retx.size > 0) this.schedulePass();
    this.flushAcks(true);
    for (const ep of this.handshaking) {
      if (now >= ep.hsDeadline) ep.handshakeExpired();
      else if (now >= ep.hsNext) ep.sendHandshake();
    }
    this.hs.expire(now);
    if (now - this.lastPeerCheck >= 100) {
      this.lastPeerCheck = now;
      this.keepalive.inFlight(now);
    }
    this.armTimer();
  }

  // ---- KeepaliveHost -----------------------------------------------------------

  peers(): Iterable<UdpEndpoint> {
    return this.endpoints.values();
  }

  probeDatagram(ep: UdpEndpoint): Buffer {
    const s = ep.session;
    ep.encodeAck(seqAdd(s.rx.next, -1), this.grant(s), s.rx.held > 0, s.rx.highest, true);
    return Buffer.from(ep.ackBuf);
  }

  /** Current figures for --stats: the largest RTO, and what is in flight. */
  refreshGauges(): void {
    this.counters.gauge(this.endpoints.values(), this.limits.window, this.hs.pending);
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await Promise.all([...this.endpoints.values()].map((ep) => ep.close()));
    this.refreshGauges();
    this.counters.refresh = null;
    this.closed = true;
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null; }
    if (this.liveness !== null) { clearInterval(this.liveness); this.liveness = null; }
    this.keepalive.close();
    this.faults?.close();
    this.tombs.clear();
    this.hs.clear();
    await Promise.all([this.data, this.prio].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    this.env.log.debug(`udp: ${this.name} closed (${formatId(this.env.self)})`);
  }
}


