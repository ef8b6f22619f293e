// Reliable, ordered delivery to one peer over datagrams, without sockets:
// sequence numbers, the send window paced by the peer's credits and a
// congestion window, cumulative ACKs (piggy-backed or explicit), retransmission
// through the hotel and the retransmit list; segments that came early wait in
// the receive window (rx-window.ts), in-order ones go on to reassembly.ts.
// The rail supplies the sockets and clocks through SessionHost
// (session-host.ts), so tests can drive it over a fake link.

import type { Checkout, Guest } from '../../core/hotel.js';
import type { Completion } from '../api.js';
import type { RailcommError } from '../../core/errors.js';
import type { SessionHost, SessionOwner } from './session-host.js';
import { Congestion, countStall } from './congestion.js';
import { Frag, SEG_OVERHEAD, Segment } from './segment.js';
import { RttEstimator } from './rtt.js';
import { Reassembler } from './reassembly.js';
import { ReceiveWindow } from './rx-window.js';
import { chunkLength, cutChunk, fillFrag, packFrag, seal, takeFrag } from './frag-segment.js';
import { SEQ_MASK, seqAdd, seqDiff } from '../../core/seq.js';
import {
  FRAG_BYTES, RECORD_BYTES, T_ACK, T_PROBE, getAck, getCredit, getHole, getSeq, getType, setSeq, setToken, stampAck,
} from './wire.js';

export type { SessionHost, SessionLimits, SessionOwner } from './session-host.js';

/** From this send of a segment on (its second retransmission), it goes out in two copies. */
export const TWO_COPIES_FROM = 3;

export class Session {
  readonly host: SessionHost;
  readonly owner: SessionOwner;
  readonly rtt: RttEstimator;
  /** Token stamped on everything sent to the peer (the peer chose it). */
  token = 0;
  /** Handshake done: segments may be posted. */
  open = false;
  dead = false;
  /**
   * The session's 128-bit MAC key (RAILCOMM_UDP_AUTH=1): every datagram of
   * the session carries the MAC under it, both ways; null: checksums only.
   */
  macKey: Uint8Array | null = null;
  /** Datagrams with this session's token whose MAC failed (forged, or corrupt on the way). */
  badMacs = 0;

  // ---- send side
  txNext = 0;
  /**
   * A datagram went out at once from send() in the current synchronous run:
   * until it ends (uncork), further whole fragments queue and are packed
   * into one datagram (frag-segment.ts packFrag), as Linux's TCP autocorking holds small
   * writes behind one still queued. A window of 64 isends of 8 bytes: two
   * datagrams, not 64. A lone send, a ping-pong's, goes at once as before.
   */
  corked = false;
  /** Oldest unacknowledged sequence number. */
  txBase = 0;
  private readonly txRing: Array<Segment | null>;
  private readonly mask: number;
  /** Weighted bytes in flight (payload plus kernel overhead per datagram). */
  flight = 0;
  /** Weighted bytes the peer lets us have in flight (its latest grant). */
  credit = 262144;
  /**
   * Congestion window (weighted bytes): halved when several segments of one
   * flight are lost (a queue on the path overflowing; at most once per
   * flight), regrown by each acknowledgement. A single loss in a flight is
   * taken for random loss and only repaired: halving on it, as TCP does, caps
   * a path with 1% random loss at a small fraction of its speed. The peer's
   * credit is sized to its socket buffer and bounds the flight anyway.
   */
  cwnd = 1 << 30;
  /** What halves and regrows cwnd (congestion.ts). */
  private readonly cc = new Congestion();
  /** Transmissions so far (orders them per channel for loss evidence; a double from the start: it passes 2^31 in a long job). */
  private txCount = -0;
  private queue: Array<Segment | Frag> = [];
  private qHead = 0;
  queuedBytes = 0;
  private wantRoom = false;
  /** This session's segments on the rail's retransmit list. */
  retxPending = 0;
  private nextFragId = 1;
  /** A hole the peer reported at holeSeq, to repair when its segment's copy had time to arrive. */
  private holeSeq = 0;
  private holeArmed = false;

  // ---- receive side
  /** The next sequence number to deliver, and the segments that came ahead of it (rx-window.ts). */
  readonly rx: ReceiveWindow;
  ackOwed = false;
  ackUrgent = false;
  ackListed = false;
  /** On the rail's list of sessions with segments to post. */
  readyListed = false;
  /** Passes an owed ACK has waited. */
  ackAge = 0;
  lastHeard = 0;
  /** When the session last went from idle (nothing queued or unacknowledged) to sending. */
  busySince = 0;
  /** Where in-order segments go: whole fragments up at once, chunks gathered. */
  private readonly asm: Reassembler;


  constructor(host: SessionHost, owner: SessionOwner) {
    this.host = host;
    this.owner = owner;
    const w = host.limits.window;
    this.mask = w - 1;
    this.txRing = new Array<Segment | null>(w).fill(null);
    this.rx = new ReceiveWindow(w);
    this.rtt = new RttEstimator(host.limits.rtoMs, host.limits.rtoFloorMs);
    this.asm = new Reassembler(host.handlers, host.counters, owner, host.limits.hdrMax);
    this.lastHeard = host.now();
  }

  /** Sequence numbers start where the handshake says (each side's token), so wrap-around is exercised. */
  start(token: number, txStart: number, rxStart: number, credit: number, macKey: Uint8Array | null = null): void {
    this.token = token >>> 0;
    this.macKey = macKey;
    this.txNext = this.txBase = txStart & SEQ_MASK;
    this.rx.next = rxStart & SEQ_MASK;
    this.credit = credit;
    this.open = true;
    this.lastHeard = this.host.now();
    if (this.qHead < this.queue.length) this.host.wantPass(this);
  }

  get inflight(): number {
    return seqDiff(this.txNext, this.txBase);
  }

  get idle(): boolean {
    return this.txNext === this.txBase && this.qHead === this.queue.length;
  }

  // ---- sending -------------------------------------------------------------

  /**
   * Queue (or post at once) one fragment. Copies unless `done` is given, in
   * which case the payload is read as chunks are cut and `done` fires after the
   * last one. Returns false (nothing taken) past the high-water mark.
   */
  send(am: number, flags: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null, done: Completion | null): boolean {
    const payLen = payload === null ? 0 : payload.length;
    const lim = this.host.limits;
    if (done === null && this.queuedBytes > lim.highWater) {
      this.wantRoom = true;
      this.owner.counters.pending++;
      return false;
    }
    // Silence is counted from when we began to wait for the peer, not from
    // the last datagram heard: after a long computation of our own, the peer
    // has had no reason to send anything.
    if (this.idle) this.busySince = this.host.now();
    const whole = FRAG_BYTES + hdrLen + payLen;
    if (whole <= lim.dataMax) {
      // Behind a full window, or after this run's first datagram: packed into the one queued last when it has room.
      if (this.qHead < this.queue.length) {
        const tail = this.queue[this.queue.length - 1]!;
        const seg = tail instanceof Segment ? packFrag(this.host, tail, am, flags, hdr, hdrLen, payload, payLen) : null;
        if (seg !== null) {
          this.queue[this.queue.length - 1] = seg;
          this.queuedBytes += RECORD_BYTES + hdrLen + payLen;
          if (done !== null) done.railComplete(null);
          return true;
        }
      }
      const tiny = whole <= lim.tinyMax;
      const seg = this.host.segment(tiny);
      seg.owner = this;
      fillFrag(seg, this.token, am, flags, hdr, hdrLen, payload, payLen);
      if (!this.corked && this.open && this.qHead === this.queue.length && this.retxPending === 0 && this.canPost(seg.weight)) {
        this.post(seg, tiny && this.host.prioIdle());
        // Further sends of this synchronous run are packed, and go when it ends.
        if (this.host.cork !== undefined) { this.corked = true; this.host.cork(this); }
      } else {
        this.queue.push(seg);
        this.queuedBytes += whole;
        if (this.open && !this.corked) this.host.wantPass(this);
      }
      if (done !== null) done.railComplete(null);
      return true;
    }
    const f = takeFrag(this.host, this.nextFragId, am, flags, hdr, hdrLen, payload!, payLen, done);
    // Modulo 2^30, as sequence numbers (seq.ts): a small integer in V8 (0 is never an id).
    this.nextFragId = ((this.nextFragId + 1) & SEQ_MASK) || 1;
    const first = this.qHead === this.queue.length;
    this.queue.push(f);
    this.queuedBytes += payLen;
    if (this.open) {
      if (first && this.retxPending === 0) this.pump();
      if (this.qHead < this.queue.length) this.host.wantPass(this);
    }
    return true;
  }

  /**
   * The synchronous run that posted a datagram at once has ended (the host's
   * microtask): what it queued after that datagram, packed, goes now.
   */
  uncork(): void {
    this.corked = false;
    if (this.qHead === this.queue.length || !this.open || this.dead) return;
    if (this.retxPending === 0) this.pump();
    if (this.qHead < this.queue.length) this.host.wantPass(this);
  }

  private canPost(weight: number): boolean {
    return seqDiff(this.txNext, this.txBase) < this.host.limits.window && (this.flight === 0 || this.flight + weight <= Math.min(this.credit, this.cwnd));
  }

  /** Post what the window and credits allow, in order. True when this pass emptied the queue (sends made in roomAgain may have queued more). */
  pump(): boolean {
    const lim = this.host.limits;
    let stall = 0; // the weight that did not fit, when the window or a credit stopped the loop
    while (this.qHead < this.queue.length && this.open && !this.dead) {
      const item = this.queue[this.qHead]!;
      if (item instanceof Segment) {
        if (!this.canPost(item.weight)) { stall = item.weight; break; }
        this.queue[this.qHead++] = null as unknown as Segment;
        this.queuedBytes -= item.len;
        this.post(item, item.tiny && this.host.prioIdle());
        continue;
      }
      const f = item;
      const len = chunkLength(lim, f);
      if (!this.canPost(len + SEG_OVERHEAD)) { stall = len + SEG_OVERHEAD; break; }
      const seg = this.host.segment(false);
      seg.owner = this;
      const n = cutChunk(seg, f, this.token, len);
      f.off += n;
      this.queuedBytes -= n;
      this.post(seg, false);
      if (f.off >= f.payLen) {
        this.queue[this.qHead++] = null as unknown as Frag;
        const done = f.done;
        f.done = null;
        f.payload = EMPTY;
        this.host.releaseFrag(f);
        if (done !== null) done.railComplete(null);
      }
    }
    this.compact();
    // Counted before roomAgain, whose sends may pump again.
    if (stall > 0) countStall(this, stall);
    const empty = this.qHead === this.queue.length;
    // At a stall too: a queue that drains ACK by ACK gives room back at half the mark.
    if (this.wantRoom && this.queuedBytes <= this.host.limits.highWater / 2) {
      this.wantRoom = false;
      this.owner.roomAgain();
    }
    return empty;
  }

  private compact(): void {
    if (this.qHead === this.queue.length) { this.queue.length = 0; this.qHead = 0; }
    else if (this.qHead > 1024 && this.qHead * 2 > this.queue.length) { this.queue.splice(0, this.qHead); this.qHead = 0; }
  }

  private post(seg: Segment, prio: boolean): void {
    const seq = this.txNext;
    this.txNext = seqAdd(seq, 1);
    seg.seq = seq;
    seg.sends = 0;
    setSeq(seg.view, seq);
    this.txRing[seq & this.mask] = seg;
    this.flight += seg.weight;
    this.transmit(seg, prio);
  }

  /** (Re)transmit a posted segment with the current ACK and credit, and check it into the hotel. */
  transmit(seg: Segment, prio: boolean): void {
    // Segments queued before the handshake finished learn the peer's token only now.
    setToken(seg.view, this.token);
    stampAck(seg.view, seqAdd(this.rx.next, -1), this.host.grant(this), this.rx.held > 0);
    seal(seg, this.macKey, this.host.limits);
    const now = this.host.now();
    seg.sentAt = now;
    seg.sends++;
    seg.prio = prio;
    seg.txOrder = ++this.txCount;
    this.host.transmit(this, seg.buf, seg.len, prio);
    this.host.counters.segsSent++;
    if (seg.sends >= TWO_COPIES_FROM) {
      // This segment was lost twice already: the path loses a lot (or the
      // peer stalls). A second copy makes a lost try much rarer, and each
      // copy that arrives draws its own ACK; one copy per backed-off timeout
      // had left the last segments of a transfer at 30% loss waiting up to 30 s.
      this.host.transmit(this, seg.buf, seg.len, prio);
      this.host.counters.segsSent++;
    }
    this.checkIn(seg, now + this.rtt.rto);
    this.ackSent();
  }

  /** Wait in the hotel until `dueMs`, with the host's timer sure to look. */
  private checkIn(seg: Segment, dueMs: number): void {
    this.host.hotel.checkIn(seg, dueMs);
    this.host.armTimer();
  }

  /** An ACK went out (piggy-backed or explicit). */
  ackSent(): void {
    this.ackOwed = false;
    this.ackUrgent = false;
    this.ackAge = 0;
  }

  /**
   * The hotel says this segment's time is up. Only the oldest unacknowledged
   * segment is sent again (as TCP does): the ACK that answers it tells us,
   * through its HOLE bit or by leaving the next one overdue, what else is
   * missing. The others wait another timeout.
   */
  expired(seg: Segment): void {
    const now = this.host.now();
    if (seg.seq !== this.txBase) {
      this.checkIn(seg, now + this.rtt.rto);
      return;
    }
    if (this.holeArmed && this.holeSeq === seg.seq) {
      // Not a timeout: the peer reported this hole, and the copy we waited for did not fill it.
      this.holeArmed = false;
      this.toRetransmit(seg);
      this.cc.lost(this, seg.seq);
      this.host.counters.fastRetransmits++;
      return;
    }
    this.rtt.backoff();
    // (A timeout alone does not shrink the congestion window: here it is as
    // often a late ACK from a descheduled peer as a loss.)
    this.toRetransmit(seg);
    this.host.counters.timeouts++;
  }

  /** Move a posted segment from the hotel to the retransmit list (progress sends it). */
  private toRetransmit(seg: Segment): void {
    this.host.hotel.checkOut(seg);
    this.host.retx.push(seg);
    this.retxPending++;
    this.host.wantPass(this);
  }

  /** Called by progress for a segment taken off the retransmit list. */
  resend(seg: Segment): void {
    this.retxPending--;
    if (this.dead) return;
    this.host.counters.retransmits++;
    this.owner.counters.retransmits++;
    this.transmit(seg, false);
  }

  // ---- receiving -----------------------------------------------------------

  /** A datagram for this session that passed the structural checks. */
  receive(buf: Buffer, v: DataView, len: number): void {
    const type = getType(v);
    this.lastHeard = this.host.now();
    const ackOnly = type === T_ACK || type === T_PROBE;
    this.onAck(getAck(v), getCredit(v), getHole(v), ackOnly, ackOnly ? getSeq(v) : 0);
    // A probe: the peer waits on us and heard nothing for a while; answer at once.
    if (type === T_PROBE && !this.dead) { this.host.counters.probesAnswered++; this.host.wantAck(this, true); }
    if (ackOnly || this.dead) return;
    const seq = getSeq(v);
    const rx = this.rx;
    const d = seqDiff(seq, rx.next);
    const c = this.host.counters;
    c.segsRecv++;
    if (d < 0) {
      // Older than expected: its ACK was lost, so ACK again now.
      c.dupSegs++;
      this.host.wantAck(this, true);
      return;
    }
    if (d >= this.host.limits.window) { c.dropWindow++; return; }
    if (d > 0) {
      if (rx.hold(seq, buf, v, len)) c.outOfOrder++; else c.dupSegs++;
      this.host.wantAck(this, true);
      return;
    }
    rx.next = seqAdd(rx.next, 1);
    this.asm.deliver(buf, v, len);
    for (;;) {
      if (this.dead) return;
      const b = rx.takeNext();
      if (b === null) break;
      this.asm.deliver(b, rx.takenView!, b.length);
    }
    this.host.wantAck(this, false);
  }

  /**
   * A cumulative ACK (every segment up to `ack` arrived) with the peer's
   * credit; `hole`: the peer holds later segments, so the one after `ack` is
   * missing. `explicit`: an ACK segment (a repeat of it is a duplicate ACK),
   * which also names `highest`, the latest segment the peer holds.
   */
  onAck(ack: number, credit: number, hole: boolean, explicit: boolean, highest = 0): void {
    this.credit = credit;
    const n = seqDiff(ack, this.txBase) + 1;
    const inflight = seqDiff(this.txNext, this.txBase);
    if (n > inflight) { this.host.counters.dropProtocol++; return; }
    if (n > 0) {
      const hotel = this.host.hotel;
      const retx = this.host.retx;
      // Round trips are sampled only from ACKs that cover no retransmitted
      // segment (Karn's rule, widened: segments that waited behind a lost one
      // were acknowledged late, not slowly).
      let clean = true;
      let newestSent = 0;
      const before = this.flight;
      for (let i = 0; i < n; i++) {
        const slot = (this.txBase + i) & this.mask;
        const seg = this.txRing[slot]!;
        this.txRing[slot] = null;
        if (seg.gList === retx) { retx.remove(seg); this.retxPending--; } else hotel.checkOut(seg);
        this.flight -= seg.weight;
        if (seg.sends !== 1) clean = false;
        newestSent = seg.sentAt;
        this.host.release(seg);
      }
      if (clean) this.rtt.sample(this.host.now() - newestSent);
      this.rtt.progress();
      this.cc.grow(this, before - this.flight);
      this.holeArmed = false;
      this.txBase = seqAdd(ack, 1);
      if (this.qHead < this.queue.length) this.host.wantPass(this);
      else if (this.txBase === this.txNext) { this.owner.drained(); return; }
    } else if (explicit && inflight > 0) {
      // A duplicate ACK. It means a segment is missing only if the peer holds
      // later ones (HOLE); otherwise it answers a copy we sent needlessly.
      this.host.counters.dupAcks++;
    }
    if (!hole || this.retxPending > 0 || this.txBase === this.txNext) {
      // Recovering from a timeout: the next segment is overdue too, so send it now rather than after another timeout.
      if (n > 0 && this.retxPending === 0 && this.txBase !== this.txNext) {
        const next = this.txRing[this.txBase & this.mask]!;
        if (this.host.now() - next.sentAt >= this.rtt.rto) { this.toRetransmit(next); this.host.counters.fastRetransmits++; }
      }
      return;
    }
    // The peer is missing txBase: send it again now, unless a copy is still on its way.
    const seg = this.txRing[this.txBase & this.mask]!;
    // Proof that it is lost: the peer holds a segment sent after its latest
    // copy on the same channel (a channel delivers in order; only the other
    // channel can overtake). Else it may just be overtaken: the peer read a
    // tiny segment from its priority socket while this one still waited in its
    // data socket, which can hold milliseconds of segments. Round trips are
    // measured through that queue, so wait about two of them.
    let proof = false;
    if (explicit && seqDiff(highest, this.txBase) > 0 && seqDiff(highest, this.txNext) < 0) {
      const later = this.txRing[highest & this.mask]!;
      proof = later.prio === seg.prio && later.txOrder > seg.txOrder;
    }
    const wait = Math.max(1, Math.min(this.rtt.rto / 2, this.rtt.srtt * 2));
    if (proof || this.host.now() - seg.sentAt >= wait) {
      this.toRetransmit(seg);
      this.cc.lost(this, seg.seq);
      this.host.counters.fastRetransmits++;
    } else if (seg.gList !== this.host.retx) {
      // Look again when that wait is over: no further ACK may come to say so
      // (a sender out of credit sends nothing that would draw one).
      this.holeSeq = seg.seq;
      this.holeArmed = true;
      this.checkIn(seg, seg.sentAt + wait);
    }
  }

  // ---- ending --------------------------------------------------------------

  /** Stop: free every segment, fail zero-copy sends still queued. */
  kill(err: RailcommError): void {
    if (this.dead) return;
    this.dead = true;
    this.open = false;
    const hotel = this.host.hotel;
    for (let i = 0; i < this.txRing.length; i++) {
      const seg = this.txRing[i];
      if (seg === null || seg === undefined) continue;
      this.txRing[i] = null;
      if (seg.gList === this.host.retx) this.host.retx.remove(seg); else hotel.checkOut(seg);
      this.host.release(seg);
    }
    this.retxPending = 0;
    this.flight = 0;
    const q = this.queue;
    this.queue = [];
    for (let i = this.qHead; i < q.length; i++) {
      const item = q[i]!;
      if (item instanceof Segment) this.host.release(item);
      else {
        const done = item.done;
        item.done = null;
        item.payload = EMPTY;
        this.host.releaseFrag(item);
        if (done !== null) done.railComplete(err);
      }
    }
    this.qHead = 0;
    this.queuedBytes = 0;
    this.rx.clear();
    this.asm.reset();
  }
}

const EMPTY = new Uint8Array(0);

/** The rail's hotel checkout: expired segments go to their session's retransmit path. */
export const expireToSession: Checkout = {
  expired(g: Guest): void {
    const seg = g as Segment;
    const s = seg.owner as Session | null;
    if (s !== null) s.expired(seg);
  },
};
