// Polling shared by the ring rails (tbsm between threads, shm between
// processes): drain every inbound ring (whose hand-back of room rings a
// producer waiting for it: Ring.onRoom), re-drive senders that found their
// ring full, and say whether a rail may sleep (nothing waits, and blocked
// senders will be rung); the rail's sleep and its second look (Sleeper).

import type { RailEndpoint, RailUpcalls, RxFrame } from '../api.js';
import type { TrafficCounters } from '../../core/counters.js';
import { FRAME_HEAD, SLEEP_RECHECK_MS, type Doorbell, type Ring } from './ring.js';
import { describeFrame } from './deliver.js';

/** What a ring rail's endpoint offers its rail's poller. */
export interface RingEndpoint extends RailEndpoint {
  /** The peer sleeps until we free room in its ring to us: ring its doorbell. */
  ringPeer(): void;
  /** Our ring to the peer can take the largest frame again. */
  hasRoom(): boolean;
  /** The peer failed or finalized: nothing more from it is delivered. */
  readonly failed: boolean;
  /** Ask to be rung when room is freed; false (nothing armed) when there is room already. */
  sleepUntilRoom(): boolean;
}

/** One ring we consume, its endpoint, and the visitor that delivers its frames. */
export interface Inbound<E extends RingEndpoint> {
  ring: Ring;
  ep: E;
  visit: (am: number, off: number, hdrLen: number, payLen: number) => void;
  /** A frame in it was corrupt, or its peer failed or finalized: it is read no more. */
  broken: boolean;
}

/** A ring to consume from a peer: its frames go to visit, and the peer is rung when room it waits for is handed back. */
export function inboundRing<E extends RingEndpoint>(ring: Ring, ep: E, visit: Inbound<E>['visit']): Inbound<E> {
  ring.onRoom = () => ep.ringPeer();
  // A ring a failed peer announces after its failure is never read.
  return { ring, ep, visit, broken: ep.failed };
}

/** Deliver what waits in one inbound ring; true if anything did. A corrupt frame fails its peer. */
export function drainInbound<E extends RingEndpoint>(e: Inbound<E>): boolean {
  if (e.broken) return false;
  try {
    return e.ring.drain(e.visit) > 0;
  } catch (err) {
    // A broken stream cannot be trusted any longer (DESIGN section 8).
    e.broken = true;
    e.ep.abort((err as Error).message);
    return false;
  }
}

/**
 * The frame at the head of one inbound ring, without delivering it: rx
 * describes it (as a handler would see it) and its AM id is returned; -1
 * when none waits. A corrupt frame fails its peer.
 */
export function peekInbound<E extends RingEndpoint>(e: Inbound<E>, rx: RxFrame): number {
  if (e.broken) return -1;
  let off: number;
  try {
    off = e.ring.peek();
  } catch (err) {
    e.broken = true;
    e.ep.abort((err as Error).message);
    return -1;
  }
  if (off < 0) return -1;
  const r = e.ring;
  describeFrame(rx, r, off, r.frameHeaderLength(off), r.framePayloadLength(off));
  return r.frameAm(off);
}

/** The frame peekInbound described was consumed by the caller: free it, and count it as delivered. */
export function takePeeked<E extends RingEndpoint>(e: Inbound<E>, rx: RxFrame): void {
  e.ring.take(rx.hdrOff - FRAME_HEAD);
  e.ep.counters.msgsRecv++; e.ep.counters.bytesRecv += rx.payLen;
}

/**
 * The receiving half shared by the ring rails' endpoints: the ring the peer
 * writes to us (once accepted), polled alone or looked at before delivery
 * when a receive waits for this peer at the call.
 */
export abstract class RingLane<E extends RingEndpoint> {
  /** The ring this peer writes to us, once accepted. */
  inbound: Inbound<E> | null = null;

  /** Deliver what waits from this peer alone; true if anything did. */
  poll(): boolean {
    return this.inbound !== null && drainInbound(this.inbound);
  }

  /** The next frame from this peer, described in rx but not delivered: its AM id, or -1 when none waits. */
  peek(rx: RxFrame): number {
    return this.inbound === null ? -1 : peekInbound(this.inbound, rx);
  }

  /** The frame peek described was consumed by the caller. */
  takePeeked(rx: RxFrame): void {
    takePeeked(this.inbound!, rx);
  }
}

/** Drain inbound rings and re-drive blocked senders; true if anything happened. */
export function pollRings<E extends RingEndpoint>(ins: Array<Inbound<E>>, blocked: Set<E>, upcalls: RailUpcalls): boolean {
  let any = false;
  for (let i = 0; i < ins.length; i++) {
    const e = ins[i]!;
    if (drainInbound(e)) any = true;
    else if (e.broken) {
      // A corrupt frame, or a peer that failed or finalized (the rails' forget): read no more.
      // (A rail may have taken the ring out of the list itself while failing the peer.)
      if (ins[i] === e) ins.splice(i, 1);
      i--;
    }
  }
  if (blocked.size > 0) {
    // A snapshot: a sender re-driven here may block again and re-enter the set.
    for (const ep of [...blocked]) {
      if (ep.hasRoom()) { blocked.delete(ep); upcalls.ready(ep); any = true; }
    }
  }
  return any;
}

/** Hand back what was consumed from every inbound ring (this rank stops looking at them for a while). */
export function settleRings<E extends RingEndpoint>(ins: ReadonlyArray<Inbound<E>>): void {
  for (const e of ins) e.ring.settle();
}

/** Whether the rail may sleep: no inbound data waits and every blocked sender armed its wake-up. */
export function maySleep<E extends RingEndpoint>(ins: ReadonlyArray<Inbound<E>>, blocked: ReadonlySet<E>): boolean {
  for (const e of ins) if (!e.broken && e.ring.hasData()) return false;
  // A blocked sender may sleep too: its receiver rings us when it frees room.
  for (const ep of blocked) if (!ep.sleepUntilRoom()) return false;
  return true;
}

/**
 * A ring rail's sleep: whom to wake, and the second look it takes at its
 * rings about SLEEP_RECHECK_MS after it went to sleep (ring.ts, PLAIN_SYNC):
 * a frame, or room, published just as the rail announced its sleep may have
 * been invisible to its last look, while its writer read the rail as awake
 * and did not ring. The look wakes the rail if anything waits after all. One
 * timer at a time, unref'd (a sleeping rail never keeps the process alive).
 */
export class Sleeper {
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;
  private readonly bell: Doorbell;
  private readonly mayStillSleep: () => boolean;
  private readonly counters: TrafficCounters;

  /** mayStillSleep: true while nothing waits for the rail (or it closed); counters: the rail's (lateWakes). */
  constructor(bell: Doorbell, mayStillSleep: () => boolean, counters: TrafficCounters) {
    this.bell = bell;
    this.mayStillSleep = mayStillSleep;
    this.counters = counters;
  }

  /** The rail goes to sleep until `wake` is called (a look already pending serves this sleep too). */
  sleeping(wake: () => void): void {
    this.wake = wake;
    if (this.timer !== null) return;
    this.timer = setTimeout(this.look, SLEEP_RECHECK_MS);
    this.timer.unref();
  }

  /** The rail's doorbell rang: wake it, if it sleeps. */
  rung(): void {
    const w = this.wake;
    this.wake = null;
    if (w !== null) w();
  }

  close(): void {
    this.wake = null;
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null; }
  }

  private readonly look = (): void => {
    this.timer = null;
    if (this.wake === null || this.mayStillSleep()) return;
    // (The doorbell's waiter stays armed: it fires at the next ring, and finds no one to wake.)
    this.bell.cancelSleep();
    this.counters.lateWakes++;
    this.rung();
  };
}
