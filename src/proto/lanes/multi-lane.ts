// A protocol endpoint's lanes to one peer, seen from above as one rail
// endpoint. Rendezvous data is striped over the rendezvous lanes by weight;
// everything else goes on the first live eager lane inside an envelope that
// numbers it and carries the acknowledgement of what came the other way. What
// is not yet acknowledged is kept, and when a lane fails (an error, a reset,
// or no answer to its heartbeat while another lane answers) it is sent again
// on the lanes that live; the receiver takes each number once (receiver.ts).
// A failed lane is retried with backoff and rejoins. The peer fails only when
// its last lane is gone. Peers with a single lane never get here.

import type { Completion, Rail, RailEndpoint, RailStatus } from '../../rail/api.js';
import { IN_PROGRESS, NO_RESOURCE } from '../../rail/api.js';
import { TrafficCounters } from '../../core/counters.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { AM_DATA } from '../wire.js';
import { pickByWeight } from './select.js';
import { ACK_HDR, AM_LANE_ACK, AM_LANE_DOWN, AM_LANE_ENV, AM_LANE_PING, DOWN_HDR, ENV_HDR, PING_HDR, encodeDown, encodeEnvelope, encodePing } from './wire.js';

/** One lane: a rail endpoint to the peer and what we know of it. */
export class Lane {
  rep: RailEndpoint;
  readonly rail: Rail;
  readonly address: string;
  readonly eager: boolean;
  readonly rndv: boolean;
  readonly weight: number;
  live = true;
  /** When the peer last answered a heartbeat on it (ms), or when it became live, or heartbeats resumed after a pause. */
  lastPong = 0;
  /** Rendezvous bytes handed to it whose send has not completed (striping prefers the emptier lane). */
  outstanding = 0;
  // Counters for --stats (doubles from the start, as TrafficCounters').
  msgs = -0;
  bytes = -0;
  failures = 0;
  rejoins = 0;
  failedAt = 0;
  why = '';
  retryMs = 1000;
  retry: NodeJS.Timeout | null = null;

  constructor(rep: RailEndpoint, eager: boolean, rndv: boolean, address: string) {
    this.rep = rep;
    this.rail = rep.rail;
    this.address = address;
    this.eager = eager;
    this.rndv = rndv;
    this.weight = rep.rail.caps.bandwidthMBps;
  }
}

/** How often the heartbeat of a peer with work outstanding runs (ms): a quarter of the lane timeout. */
export function heartbeatEvery(laneTimeoutMs: number): number {
  return Math.max(50, Math.floor(laneTimeoutMs / 4));
}

/** What the lanes need from the protocol layer. */
export interface LaneHost {
  readonly laneTimeoutMs: number;
  now(): number;
  /** The acknowledgement to piggy-back for this peer (the receiver's state), and that it was sent. */
  ackFor(owner: unknown): number;
  ackSent(owner: unknown): void;
  /** A lane failed while others live: rendezvous in flight must be asked for again. */
  laneFailed(multi: MultiLane, lane: Lane): void;
  laneJoined(multi: MultiLane, lane: Lane): void;
  /** The lanes can take sends again. */
  ready(multi: MultiLane): void;
  /** A lane's fate; quiet ones at debug level. */
  log(msg: string, quiet?: boolean): void;
}

/** A message kept until the peer acknowledged it: its envelope and inner header, and its payload. */
interface Kept {
  num: number;
  hdr: Buffer;
  payload: Buffer | null;
}

const NOOP: Completion = { railComplete(): void { /* kept until acknowledged */ } };

export class MultiLane implements RailEndpoint {
  readonly lanes: Lane[];
  readonly peer: bigint;
  readonly counters = new TrafficCounters();
  owner: unknown = null;
  /** The primary lane's rail: thresholds and caps above are its (with the lanes' smallest chunk). */
  readonly rail: Rail;
  private readonly host: LaneHost;
  private nextNum = 1;
  /** Sent, not acknowledged, in number order. */
  private kept: Kept[] = [];
  private keptHead = 0;
  /** Kept messages still to (re)send after a failover, from this index. */
  private resendFrom = -1;
  private readonly env = new Uint8Array(ENV_HDR + 256);
  private readonly envView = new DataView(this.env.buffer);
  private readonly ctl = new Uint8Array(PING_HDR);
  private readonly ctlView = new DataView(this.ctl.buffer);
  private pings = 0;
  private eagerTurn = 0;
  private readonly maxEager: number;
  resends = -0;
  private readonly sentBytes: number[];
  private readonly weights: number[];

  constructor(host: LaneHost, peer: bigint, lanes: Lane[], maxEager: number) {
    this.host = host;
    this.peer = peer;
    this.lanes = lanes;
    this.rail = lanes[0]!.rail;
    this.maxEager = Math.max(1, maxEager);
    const now = host.now();
    for (const l of lanes) l.lastPong = now;
    this.sentBytes = lanes.map(() => 0);
    this.weights = lanes.map(() => 0);
  }

  get liveCount(): number {
    let n = 0;
    for (const l of this.lanes) if (l.live) n++;
    return n;
  }

  /** The lane that carries the next eager message (round robin over the first maxEager live eager lanes). */
  private eagerLane(): Lane | null {
    let n = 0;
    let first: Lane | null = null;
    for (const l of this.lanes) if (l.live && l.eager) { n++; first ??= l; }
    if (first === null) for (const l of this.lanes) if (l.live) return l; // only rendezvous lanes left: they carry all
    if (n <= 1 || this.maxEager <= 1) return first;
    let k = (this.eagerTurn = (this.eagerTurn + 1) % Math.min(n, this.maxEager));
    for (const l of this.lanes) if (l.live && l.eager && k-- === 0) return l;
    return first;
  }

  // ---- RailEndpoint: sending -------------------------------------------------

  sendCopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus {
    return this.sendEnveloped(am, hdr, hdrLen, payload);
  }

  sendZcopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array, done: Completion): RailStatus {
    if (am === AM_DATA) return this.stripe(hdr, hdrLen, payload, done);
    // Kept until acknowledged, so copied: the caller's memory is free at once.
    const st = this.sendEnveloped(am, hdr, hdrLen, payload);
    if (st === NO_RESOURCE) return NO_RESOURCE;
    done.railComplete(null);
    return IN_PROGRESS;
  }

  /** Number, keep and send one message on the eager lane; nothing changes on NO_RESOURCE. */
  private sendEnveloped(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus {
    if (this.resendFrom >= 0) { this.resendKept(); if (this.resendFrom >= 0) return NO_RESOURCE; }
    const lane = this.eagerLane();
    if (lane === null) return NO_RESOURCE; // the peer is being failed (no lane left)
    const num = this.nextNum;
    const ack = this.host.ackFor(this.owner);
    encodeEnvelope(this.envView, num, ack, am, hdrLen);
    this.env.set(hdr.subarray(0, hdrLen), ENV_HDR);
    const envLen = ENV_HDR + hdrLen;
    const st = this.put(lane, this.env, envLen, payload);
    if (st === NO_RESOURCE) return NO_RESOURCE;
    this.nextNum = (num + 1) >>> 0 || 1;
    this.host.ackSent(this.owner);
    this.kept.push({ num, hdr: Buffer.from(this.env.subarray(0, envLen)), payload: payload === null || payload.length === 0 ? null : Buffer.from(payload) });
    this.counters.msgsSent++;
    this.counters.bytesSent += payload === null ? 0 : payload.length;
    return IN_PROGRESS;
  }

  /** One frame on one lane: copied when the rail copies that size, else sent from `payload` (kept alive by the caller). */
  private put(lane: Lane, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus {
    const n = payload === null ? 0 : payload.length;
    const st = n <= lane.rail.caps.amCopyMax
      ? lane.rep.sendCopy(AM_LANE_ENV, hdr, hdrLen, payload)
      : lane.rep.sendZcopy(AM_LANE_ENV, hdr, hdrLen, payload!, NOOP);
    if (st !== NO_RESOURCE) { lane.msgs++; lane.bytes += n; }
    return st;
  }

  /** The peer acknowledged every message up to `ack`: forget them. */
  acked(ack: number): void {
    const k = this.kept;
    let h = this.keptHead;
    while (h < k.length && ((k[h]!.num - ack) | 0) <= 0) k[h++] = undefined as unknown as Kept;
    if (this.resendFrom >= 0 && this.resendFrom < h) this.resendFrom = h < k.length ? h : -1;
    if (h === k.length) { k.length = 0; h = 0; if (this.resendFrom >= 0) this.resendFrom = -1; }
    else if (h > 1024 && h * 2 > k.length) { k.splice(0, h); if (this.resendFrom >= 0) this.resendFrom -= h; h = 0; }
    this.keptHead = h;
  }

  get unacknowledged(): number {
    return this.kept.length - this.keptHead;
  }

  /** Rendezvous data on the rendezvous lane whose share is furthest behind its weight. */
  private stripe(hdr: Uint8Array, hdrLen: number, payload: Uint8Array, done: Completion): RailStatus {
    const lanes = this.lanes;
    for (let i = 0; i < lanes.length; i++) {
      const l = lanes[i]!;
      const on = l.live && l.rndv;
      // Measured, not only declared: what a lane still holds counts against it.
      this.sentBytes[i] = on ? l.outstanding : -1;
      this.weights[i] = on ? l.weight : 0;
    }
    let i = pickByWeight(this.sentBytes, this.weights);
    if (i < 0) {
      // No rendezvous lane lives: any lane will do.
      for (let k = 0; k < lanes.length && i < 0; k++) if (lanes[k]!.live) i = k;
      if (i < 0) return NO_RESOURCE;
    }
    const lane = lanes[i]!;
    const n = payload.length;
    lane.outstanding += n;
    // A piece lost with a failed lane is asked for again by the receiver
    // (proto/rndv): the send completes on its FIN, not on the lane's word.
    // A piece that completes after its lane failed (which zeroed the count) is not taken off
    // again: the count would go negative, and striping would skip the lane once it rejoined.
    const epoch = lane.failures;
    const piece: Completion = { railComplete: () => { if (lane.failures === epoch) lane.outstanding -= n; done.railComplete(null); } };
    const st = lane.rep.sendZcopy(AM_DATA, hdr, hdrLen, payload, piece);
    if (st === NO_RESOURCE) { lane.outstanding -= n; return NO_RESOURCE; }
    lane.msgs++;
    lane.bytes += n;
    this.counters.msgsSent++;
    this.counters.bytesSent += n;
    return st;
  }

  /** An explicit acknowledgement (nothing else was going out to carry it). */
  sendAck(ack: number): void {
    const lane = this.eagerLane();
    if (lane === null) return;
    this.ctlView.setUint32(0, ack, true);
    if (lane.rep.sendCopy(AM_LANE_ACK, this.ctl, ACK_HDR, null) !== NO_RESOURCE) this.host.ackSent(this.owner);
  }

  // ---- failover ----------------------------------------------------------------

  /** Which lane this rail endpoint is, or -1. */
  indexOf(rep: RailEndpoint): number {
    for (let i = 0; i < this.lanes.length; i++) if (this.lanes[i]!.rep === rep) return i;
    return -1;
  }

  /**
   * A lane's rail endpoint failed (or we gave up on it, or the peer closed
   * it: `byPeer`, said at debug level only, since the peer that finalizes
   * may close one lane before its BYE arrives on another). Returns whether
   * other lanes live: then what it may have lost is sent again on them.
   * Unless the peer told us (`tell` false), the peer hears it on a lane
   * that lives (tellPeer): a silent drop shows to each side only through its
   * own heartbeats, and a side whose heartbeats had paused (a receiver that
   * had nothing outstanding until a resent message woke it) would find out
   * a whole lane timeout later, holding up what it must ask for again.
   */
  laneFailed(rep: RailEndpoint, why: string, byPeer = false, tell = !byPeer): boolean {
    const i = this.indexOf(rep);
    if (i < 0) return this.liveCount > 0;
    const lane = this.lanes[i]!;
    if (lane.live) {
      lane.live = false;
      lane.failures++;
      lane.failedAt = this.host.now();
      lane.why = why;
      lane.outstanding = 0;
      if (this.liveCount > 0) {
        this.host.log(`lane ${lane.rail.name} to peer failed (${why}); traffic moves to ${this.lanes.filter((l) => l.live).map((l) => l.rail.name).join(', ')}`, byPeer);
        if (tell) this.tellPeer(lane, why);
        this.resendFrom = this.keptHead < this.kept.length ? this.keptHead : -1;
        this.resendKept();
        this.host.laneFailed(this, lane);
        this.host.ready(this);
      }
    }
    if (this.liveCount > 0) this.scheduleRejoin(lane);
    return this.liveCount > 0;
  }

  /**
   * Tell the peer, on a lane that lives, that this side gave up on `lane`
   * (named by its component, this side's rail address and the peer's).
   * Best effort, not kept: a peer that does not hear it finds out by its
   * own heartbeats, as before.
   */
  private tellPeer(lane: Lane, why: string): void {
    const via = this.eagerLane();
    if (via === null) return;
    this.ctlView.setUint32(0, 0, true);
    via.rep.sendCopy(AM_LANE_DOWN, this.ctl, DOWN_HDR, encodeDown(lane.rail.component, lane.rail.address(), lane.address, why));
  }

  /**
   * The peer gave up on its lane of `component` from its address `from` to
   * our `to`: ours (from our `to` to its `from`) fails too, at once, and
   * what it held moves to the lanes that live. False when no live lane is that one.
   */
  peerGaveUp(component: string, from: string, to: string, why: string): boolean {
    for (const lane of this.lanes) {
      if (!lane.live || lane.rail.component !== component || lane.address !== from || lane.rail.address() !== to) continue;
      this.giveUpOn(lane, `closed by the peer, which gave up on it (${why})`, false);
      return true;
    }
    return false;
  }

  /** A lane closed gracefully (the peer finalized): true while others live. */
  laneClosed(rep: RailEndpoint): boolean {
    const i = this.indexOf(rep);
    if (i >= 0) { this.lanes[i]!.live = false; this.lanes[i]!.why = 'closed (the peer finalized)'; }
    return this.liveCount > 0;
  }

  /** Send the kept messages again, from resendFrom, until a lane is full. */
  private resendKept(): void {
    const k = this.kept;
    while (this.resendFrom >= 0 && this.resendFrom < k.length) {
      const m = k[this.resendFrom]!;
      const lane = this.eagerLane();
      if (lane === null) return;
      // The acknowledgement it carried may be stale by now: the fresh one goes.
      m.hdr.writeUInt32LE(this.host.ackFor(this.owner), 4);
      if (this.put(lane, m.hdr, m.hdr.length, m.payload) === NO_RESOURCE) return;
      this.resends++;
      this.resendFrom++;
    }
    this.resendFrom = -1;
  }

  /** The lanes can take sends again. */
  drained(): void {
    if (this.resendFrom >= 0) this.resendKept();
  }

  private scheduleRejoin(lane: Lane): void {
    if (lane.retry !== null || this.closing) return;
    lane.retry = setTimeout(() => this.tryRejoin(lane), lane.retryMs);
    lane.retry.unref();
    lane.retryMs = Math.min(30_000, lane.retryMs * 2);
  }

  /** A fresh rail endpoint on the failed lane's rail, proven by a heartbeat answer before it carries traffic. */
  private tryRejoin(lane: Lane): void {
    lane.retry = null;
    if (lane.live || this.closing || this.liveCount === 0) return;
    const rep = lane.rail.endpoint(this.peer, lane.address);
    rep.owner = this.owner;
    lane.rep = rep;
    this.ping(this.lanes.indexOf(lane));
    this.scheduleRejoin(lane);
  }

  /** The peer connected to us on a rail: a failed lane there comes back with it. */
  accepted(rep: RailEndpoint): boolean {
    for (const lane of this.lanes) {
      if (lane.rail !== rep.rail) continue;
      if (lane.rep === rep) return true;
      if (!lane.live) { lane.rep = rep; this.rejoined(lane); return true; }
    }
    return false;
  }

  private rejoined(lane: Lane): void {
    if (lane.retry !== null) { clearTimeout(lane.retry); lane.retry = null; }
    lane.live = true;
    lane.rejoins++;
    lane.retryMs = 1000;
    lane.lastPong = this.host.now();
    this.host.log(`lane ${lane.rail.name} to peer is back`);
    this.host.laneJoined(this, lane);
  }

  // ---- heartbeat ---------------------------------------------------------------

  /** When heartbeat() last ran (ms): a longer gap than two beats restarts every lane's clock. */
  private lastBeat = -Infinity;

  /** Ask every lane (live, or trying to rejoin) for an answer. */
  heartbeat(): void {
    const now = this.host.now();
    const resumed = now - this.lastBeat > 2 * heartbeatEvery(this.host.laneTimeoutMs);
    this.lastBeat = now;
    // Heartbeats paused (nothing was outstanding to the peer, or this rank's
    // event loop was held and the answers that came meanwhile are still
    // unread): each lane gets the whole timeout from this ping, not one beat.
    if (resumed) for (const l of this.lanes) if (l.live) l.lastPong = now;
    for (let i = 0; i < this.lanes.length; i++) if (this.lanes[i]!.live) this.ping(i);
    this.judge(now);
  }

  private ping(i: number): void {
    encodePing(this.ctlView, i, ++this.pings);
    this.lanes[i]!.rep.sendCopy(AM_LANE_PING, this.ctl, PING_HDR, null);
  }

  /** The answer to our ping `i` came back. */
  pong(rep: RailEndpoint, i: number): void {
    const lane = this.lanes[i];
    if (lane === undefined || lane.rep !== rep) return;
    lane.lastPong = this.host.now();
    if (!lane.live) this.rejoined(lane);
  }

  /**
   * A lane that has not answered for the lane timeout while another lane did
   * is given up on: a silent drop (a firewall, a dead link) reports nothing.
   * When no lane answers, the peer is busy or gone, and that is not a lane's fault.
   */
  private judge(now: number): void {
    const limit = this.host.laneTimeoutMs;
    let someoneAnswers = false;
    for (const l of this.lanes) if (l.live && now - l.lastPong < limit) someoneAnswers = true;
    if (!someoneAnswers) return;
    for (const l of this.lanes) {
      if (!l.live || now - l.lastPong < limit) continue;
      this.giveUpOn(l, `no answer on it for ${Math.round(now - l.lastPong)} ms while other lanes answer (RAILCOMM_LANE_TIMEOUT)`, true);
    }
  }

  /**
   * For a hang report: when no live lane has answered a heartbeat for the
   * lane timeout (judge() then fails none: the peer may be busy in its own
   * code), say so, with how long; null while one answers.
   */
  silence(now: number): string | null {
    const limit = this.host.laneTimeoutMs;
    // Heartbeats paused (this rank's loop held, or nothing outstanding): the clocks are stale, not the lanes.
    if (now - this.lastBeat > 2 * heartbeatEvery(limit)) return null;
    let quiet = Infinity;
    const names: string[] = [];
    for (const l of this.lanes) {
      if (!l.live) continue;
      if (now - l.lastPong < limit) return null;
      quiet = Math.min(quiet, now - l.lastPong);
      names.push(l.rail.name);
    }
    if (names.length === 0) return null;
    return `no heartbeat answer on any lane to it (${names.join(', ')}) for ${(quiet / 1000).toFixed(1)} s: it is busy in its own code, or the network between us is cut`;
  }

  /** This side gives up on a live lane: it fails (the peer told when `tell`), and its rail endpoint is given up (or closed). */
  private giveUpOn(lane: Lane, why: string, tell: boolean): void {
    const rep = lane.rep;
    this.laneFailed(rep, why, false, tell);
    if (rep.giveUp !== undefined) rep.giveUp(why); else void rep.close().catch(() => undefined);
  }

  // ---- the rest of RailEndpoint ------------------------------------------------

  private closing = false;

  abort(reason: string): void {
    for (const l of this.lanes) if (l.live) l.rep.abort(reason);
  }

  /** This rank closes: no more attempts to bring failed lanes back. */
  shutdown(): void {
    this.closing = true;
    for (const l of this.lanes) {
      if (l.retry !== null) { clearTimeout(l.retry); l.retry = null; }
      // A failed lane's last attempt to come back must not hold the rail's close (it would wait to deliver its heartbeat).
      if (!l.live) l.rep.giveUp?.('closing');
    }
  }

  async close(): Promise<void> {
    this.shutdown();
    await Promise.all(this.lanes.map((l) => (l.live ? l.rep.close() : Promise.resolve())));
  }

  /** --stats: each lane's traffic, share and history. */
  laneStats(): Record<string, Record<string, number | string>> {
    let total = 0;
    for (const l of this.lanes) total += l.bytes;
    const out: Record<string, Record<string, number | string>> = {};
    for (const l of this.lanes) {
      out[l.rail.name] = {
        live: l.live ? 1 : 0, eager: l.eager ? 1 : 0, rndv: l.rndv ? 1 : 0, msgs: l.msgs + 0, bytes: l.bytes + 0,
        share: total > 0 ? Math.round((l.bytes / total) * 100) : 0, failures: l.failures, rejoins: l.rejoins,
        ...(l.failures > 0 ? { lastFailure: l.why } : {}),
      };
    }
    return out;
  }

  /** Why the peer is lost: every lane failed. */
  lostError(): RailcommError {
    return new RailcommError(ErrorCode.PEER_FAILED, `every lane to the peer failed: ${this.lanes.map((l) => `${l.rail.name} (${l.why || 'failed'})`).join(', ')}`);
  }
}
