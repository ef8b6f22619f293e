// The tbsm rail (thread-based shared memory): ranks that are worker threads
// of one process exchange active messages through SharedArrayBuffer rings,
// one per ordered pair, made by the sender on first use and handed to the
// receiver once over a BroadcastChannel. Progress polls the rings; an idle
// receiver sleeps on its doorbell (Atomics.waitAsync), which senders ring.

import type { Completion, Device, Rail, RailCaps, RailEnv, RailIpc, RailStatus, RxFrame } from '../api.js';
import { loadNative } from '../../native/addon.js';
import { sameProcessIpc } from '../shared/cma.js';
import { DONE, IN_PROGRESS, NO_RESOURCE } from '../api.js';
import { SummedTrafficCounters, TrafficCounters } from '../../core/counters.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { formatId } from '../../core/ids.js';
import { BroadcastChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { Doorbell, Ring } from '../shared/ring.js';
import { ringRailCaps } from '../shared/caps.js';
import { AM_BYE, deliverFrame, type RingPeer } from '../shared/deliver.js';
import { inboundRing, maySleep, pollRings, settleRings, RingLane, Sleeper, type Inbound as SharedInbound } from '../shared/poll.js';

type ChannelMsg =
  | { kind: 'bell'; from: string; to?: string; sab: SharedArrayBuffer }
  | { kind: 'ring'; from: string; to: string; sab: SharedArrayBuffer }
  | { kind: 'poke'; to: string };

type Inbound = SharedInbound<TbsmEndpoint>;

export class TbsmRail implements Rail {
  readonly name = 'tbsm';
  readonly component = 'tbsm';
  readonly device: Device;
  readonly caps: RailCaps;
  readonly counters = new SummedTrafficCounters(() => this.endpoints.values());
  readonly env: RailEnv;
  readonly ringBytes: number;
  private readonly selfKey: string;
  private readonly channel: BroadcastChannel;
  readonly bell = new Doorbell();
  /** Threads share one address space: a peer copies from our buffers' addresses directly. */
  readonly ipc: RailIpc | null;
  private readonly bells = new Map<string, Doorbell>();
  private readonly endpoints = new Map<bigint, TbsmEndpoint>();
  private readonly inbound: Inbound[] = [];
  readonly blocked = new Set<TbsmEndpoint>();
  private readonly rx: RxFrame = { buf: Buffer.alloc(0), view: new DataView(new ArrayBuffer(0)), hdrOff: 0, hdrLen: 0, payOff: 0, payLen: 0, placed: null, words: null };
  private closed = false;
  /** The rail's sleep and its second look; nothing waits while maySleep says so. */
  private readonly sleeper = new Sleeper(this.bell, () => this.closed || maySleep(this.inbound, this.blocked), this.counters);
  private armed = false;

  constructor(device: Device, env: RailEnv, ringBytes: number) {
    this.device = device;
    this.env = env;
    this.ringBytes = ringBytes;
    this.selfKey = String(env.self);
    const native = loadNative();
    this.ipc = native === null ? null : sameProcessIpc(native);
    // Measured crossover (bench/RESULTS.md, shm run 7): memcpy rendezvous wins from 128 KiB.
    this.caps = ringRailCaps(ringBytes, 0.5, env.params.shmRndvThreshold || 1 << 17);
    this.channel = new BroadcastChannel(`railcomm-tbsm-${env.jobId}-${process.pid}`);
    this.channel.onmessage = (e: unknown) => this.onChannel((e as { data: ChannelMsg }).data);
    this.channel.unref();
    this.channel.postMessage({ kind: 'bell', from: this.selfKey, sab: this.bell.sab } satisfies ChannelMsg);
  }

  address(): string {
    return `pid:${process.pid}`;
  }

  /** Only threads of this very process share memory with us. */
  whyNot(address: string): string | null {
    return address === this.address() ? null : `it is not a thread of this process (${address}, this is ${this.address()})`;
  }

  endpoint(peer: bigint, _address: string): TbsmEndpoint {
    let ep = this.endpoints.get(peer);
    if (ep === undefined) {
      ep = new TbsmEndpoint(this, peer);
      this.endpoints.set(peer, ep);
    }
    return ep;
  }

  /** Hand a new outbound ring to its receiver. */
  announceRing(to: bigint, ring: Ring): void {
    this.channel.postMessage({ kind: 'ring', from: this.selfKey, to: String(to), sab: ring.sab } satisfies ChannelMsg);
  }

  /** The receiver's doorbell, once it reached us. */
  bellOf(peer: bigint): Doorbell | undefined {
    return this.bells.get(String(peer));
  }

  /** Wake a receiver whose doorbell has not reached us yet (a message wakes its event loop). */
  poke(peer: bigint): void {
    this.channel.postMessage({ kind: 'poke', to: String(peer) } satisfies ChannelMsg);
  }

  private onChannel(m: ChannelMsg): void {
    if (this.closed) return;
    if (m.kind === 'bell') {
      if (m.to !== undefined && m.to !== this.selfKey) return;
      if (!this.bells.has(m.from)) {
        this.bells.set(m.from, new Doorbell(m.sab));
        // It may have missed ours (it opened later): tell it directly.
        if (m.to === undefined) this.channel.postMessage({ kind: 'bell', from: this.selfKey, to: m.from, sab: this.bell.sab } satisfies ChannelMsg);
      }
      return;
    }
    if (m.to !== this.selfKey) return;
    if (m.kind === 'ring') {
      const ep = this.endpoint(BigInt(m.from), '');
      const ring = new Ring(m.sab);
      const entry: Inbound = inboundRing(ring, ep, (am, off, hdrLen, payLen) => this.deliver(entry, am, off, hdrLen, payLen));
      ep.inbound = entry;
      this.inbound.push(entry);
      this.env.upcalls.accepted(ep);
    }
    this.env.upcalls.activity();
  }

  /** Drain inbound rings and re-drive blocked senders; true if anything happened. */
  poll(): boolean {
    return pollRings(this.inbound, this.blocked, this.env.upcalls);
  }

  /**
   * Read the channel without the event loop (a synchronous call waits):
   * rings and doorbells announced by peers arrive there. True if anything did.
   */
  pollChannel(): boolean {
    let any = false;
    // Node takes a BroadcastChannel here too (documented; @types/node says MessagePort only).
    const port = this.channel as unknown as MessagePort;
    for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
      this.onChannel((m as { message: ChannelMsg }).message);
      any = true;
    }
    return any;
  }

  /** Hand back consumed ring space (this rank stops polling for a while). */
  settle(): void {
    settleRings(this.inbound);
  }

  /** Arm the doorbell; false (and nothing armed) when data is already waiting. */
  sleep(wake: () => void): boolean {
    if (this.closed) return true;
    const seen = this.bell.prepareSleep();
    if (!maySleep(this.inbound, this.blocked)) { this.bell.cancelSleep(); return false; }
    // One waiter at a time: something else (a socket, a new request) may have
    // woken us while the previous one still waits; it stays valid.
    if (!this.armed) {
      this.armed = true;
      void this.bell.waitAsync(seen).then(() => { this.armed = false; if (!this.closed) this.sleeper.rung(); });
    }
    this.sleeper.sleeping(wake);
    return true;
  }

  private deliver(e: Inbound, am: number, off: number, hdrLen: number, payLen: number): void {
    // (A frame that made its peer fail, by its handler, ends the delivery of that peer's batch.)
    if (e.broken) return;
    deliverFrame(this.env.upcalls.am, this.rx, e.ep, e.ring, am, off, hdrLen, payLen);
  }

  /** A failed or finalized peer: its ring is read no more (the next poll drops it), nor re-driven. */
  forget(ep: TbsmEndpoint): void {
    this.blocked.delete(ep);
    if (ep.inbound !== null) ep.inbound.broken = true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Every peer learns we finalized, also those we never sent to; a BYE that
    // finds a full ring waits (bounded) for the peer to drain it.
    await Promise.all([...this.endpoints.values()].map((ep) => ep.close()));
    this.closed = true;
    this.sleeper.close();
    this.channel.close();
  }
}

export class TbsmEndpoint extends RingLane<TbsmEndpoint> implements RingPeer {
  readonly rail: TbsmRail;
  readonly peer: bigint;
  readonly counters = new TrafficCounters();
  owner: unknown = null;
  /** Single-copy reads of the peer thread's buffers (same process), where the addon loaded. */
  readonly ipc: RailIpc | null;
  private out: Ring | null = null;
  failed = false;
  /** The receiver's doorbell, cached once known (looked up by id otherwise). */
  private bell: Doorbell | undefined = undefined;

  constructor(rail: TbsmRail, peer: bigint) {
    super();
    this.rail = rail;
    this.peer = peer;
    this.ipc = rail.ipc;
  }

  private ring(): Ring {
    if (this.out === null) {
      this.out = new Ring(this.rail.ringBytes);
      this.rail.announceRing(this.peer, this.out);
    }
    return this.out;
  }

  /** Before sleeping while blocked: ask the receiver to ring us; false if room appeared meanwhile. */
  sleepUntilRoom(): boolean {
    return this.out === null || !this.out.waitForRoom(this.rail.caps.amHeaderMax, this.rail.caps.amCopyMax);
  }

  /** Ring the peer's doorbell (it waits for data from us, or for room in its ring to us). */
  ringPeer(): void {
    this.wake();
  }

  /** A blocked sender is re-driven once the largest frame it may send fits. */
  hasRoom(): boolean {
    return this.out === null || this.out.fits(this.rail.caps.amHeaderMax, this.rail.caps.amCopyMax);
  }

  sendCopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus {
    if (this.failed) return DONE;
    if (!this.ring().write(am, hdr, hdrLen, payload)) {
      this.counters.pending++;
      this.rail.blocked.add(this);
      return NO_RESOURCE;
    }
    this.sent(payload === null ? 0 : payload.length);
    return DONE;
  }

  /** The payload is copied into the ring at once: complete now. */
  sendZcopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array, done: Completion): RailStatus {
    if (this.failed) { done.railComplete(new RailcommError(ErrorCode.PEER_FAILED, `peer ${formatId(this.peer)} is gone`)); return IN_PROGRESS; }
    if (!this.ring().write(am, hdr, hdrLen, payload)) {
      this.counters.pending++;
      this.rail.blocked.add(this);
      return NO_RESOURCE;
    }
    this.sent(payload.length);
    done.railComplete(null);
    return IN_PROGRESS;
  }

  private sent(payLen: number): void {
    this.counters.msgsSent++; this.counters.bytesSent += payLen;
    this.wake();
  }

  private wake(): void {
    const b = this.bell ?? (this.bell = this.rail.bellOf(this.peer));
    if (b !== undefined) b.ring();
    else this.rail.poke(this.peer);
  }

  /** Tell the peer we finalized; true once written (false: its ring is full for now). */
  sayBye(): boolean {
    if (this.failed) return true;
    if (!this.ring().write(AM_BYE, EMPTY, 0, null)) return false;
    this.wake();
    return true;
  }

  peerClosed(): void {
    if (this.failed) return;
    this.failed = true;
    this.rail.forget(this);
    this.rail.env.upcalls.failed(this, new RailcommError(ErrorCode.PEER_FAILED, `peer ${formatId(this.peer)} finalized`), true);
  }

  abort(reason: string): void {
    if (this.failed) return;
    this.failed = true;
    this.counters.badFrames++;
    this.rail.counters.badFrames++;
    this.rail.env.log.error(`tbsm: dropping peer ${formatId(this.peer)}: ${reason}`);
    this.rail.forget(this);
    this.rail.env.upcalls.failed(this, new RailcommError(ErrorCode.PEER_FAILED, `tbsm: peer ${formatId(this.peer)} sent a malformed frame (${reason})`), false);
  }

  async close(): Promise<void> {
    const deadline = Date.now() + this.rail.env.params.connectTimeout;
    while (!this.sayBye() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  }
}

const EMPTY = new Uint8Array(0);
