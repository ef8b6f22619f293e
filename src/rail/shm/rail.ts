// The shm rail: process ranks on one host exchange active messages through
// rings in /dev/shm segments (one per ordered pair, made by the sender on
// first use, announced in the receiver's inbox, unlinked once both mapped it).
// An idle receiver sleeps on a futex doorbell in its inbox; peers are watched
// for liveness (a killed rank fails its requests within a second).

import { existsSync, readdirSync } from 'node:fs';
import type { Device, Rail, RailCaps, RailEnv, RxFrame } from '../api.js';
import { SummedTrafficCounters } from '../../core/counters.js';
import { endpointId, jobOf, rankOf } from '../../core/ids.js';
import { shmJobPrefix, type DoorbellWaiter, type NativeAddon } from '../../native/addon.js';
import { cleanupOnSignal } from '../../core/signal-cleanup.js';
import { Doorbell, Ring } from '../shared/ring.js';
import { ringRailCaps } from '../shared/caps.js';
import { deliverFrame } from '../shared/deliver.js';
import { inboundRing, maySleep, pollRings, settleRings, Sleeper, type Inbound as SharedInbound } from '../shared/poll.js';
import { ShmEndpoint } from './endpoint.js';
import { RegionCache } from '../../core/region-cache.js';
import { processExists } from '../../core/host.js';
import {
  CTL_FREE, CTL_HDR, INBOX_BELL_BYTE, INBOX_BYTES, INBOX_SLOTS, IN_ANNOUNCED, IN_CLOSED, IN_PID, IN_SLOTS, checkStamp, decodeAddress, encodeAddress, inboxName, ringName, segmentName, stampInbox,
} from './wire.js';

type Inbound = SharedInbound<ShmEndpoint>;

/** How often peers' pids are checked (ms). */
const LIVENESS_MS = 500;
/** Peers' registered segments kept mapped at once (least recently used ones are dropped). */
const SEGMENT_CACHE = 64;

export class ShmRail implements Rail {
  readonly name = 'shm';
  readonly component = 'shm';
  readonly device: Device;
  readonly caps: RailCaps;
  readonly counters = new SummedTrafficCounters(() => this.endpoints.values());
  readonly env: RailEnv;
  readonly native: NativeAddon;
  readonly ringBytes: number;
  readonly prefix: string;
  readonly rank: number;
  readonly host: string;
  readonly inboxName: string;
  private readonly inbox: SharedArrayBuffer;
  private readonly inWords: Int32Array;
  readonly bell: Doorbell;
  private readonly sleeper: Sleeper;
  private readonly waiter: DoorbellWaiter;
  private readonly endpoints = new Map<bigint, ShmEndpoint>();
  private readonly inbound: Inbound[] = [];
  /** Announce slots of our inbox already taken care of. */
  private seen = 0;
  readonly blocked = new Set<ShmEndpoint>();
  private readonly rx: RxFrame = { buf: Buffer.alloc(0), view: new DataView(new ArrayBuffer(0)), hdrOff: 0, hdrLen: 0, payOff: 0, payLen: 0, placed: null, words: null };
  private readonly liveness: NodeJS.Timeout;
  private armed = false;
  private closed = false;
  /** finalize() began (beginFinalize): a peer's inbox found gone now means it finalized first. */
  finalizing = false;
  readonly notify: (sab: SharedArrayBuffer, byteOffset: number) => unknown;
  /** Our registered segments (comm.alloc) by their memory, and the names still to remove. */
  private readonly segments = new WeakMap<SharedArrayBuffer, number>();
  private readonly segmentNames = new Map<number, string>();
  private nextSegment = 1;
  private readonly freed = new FinalizationRegistry<number>((id) => this.segmentFreed(id));
  /** Peers' segments we mapped, by (peer rank, id). */
  readonly remoteSegments = new RegionCache<SharedArrayBuffer>(SEGMENT_CACHE, () => { /* V8 unmaps when unreferenced */ });
  private readonly ctl = new Uint8Array(CTL_HDR);

  constructor(device: Device, env: RailEnv, native: NativeAddon, ringBytes: number, host: string) {
    this.device = device;
    this.env = env;
    this.native = native;
    this.ringBytes = ringBytes;
    this.host = host;
    this.prefix = shmJobPrefix(env.jobId, env.jobKey);
    this.rank = rankOf(env.self);
    // Measured crossover (bench/RESULTS.md, shm run 7): the ring up to 256 KiB.
    this.caps = ringRailCaps(ringBytes, 0.6, env.params.shmRndvThreshold || 1 << 18);
    this.notify = (sab, off) => native.futexWake(sab, off);
    this.inboxName = inboxName(this.prefix, this.rank);
    // A name left by a killed job with the same id would make creation fail: it is ours to replace.
    native.shmUnlink(this.inboxName);
    this.inbox = native.shmCreate(this.inboxName, INBOX_BYTES);
    this.inWords = new Int32Array(this.inbox);
    stampInbox(this.inWords, process.pid);
    this.bell = new Doorbell(this.inbox, INBOX_BELL_BYTE, this.notify);
    this.sleeper = new Sleeper(this.bell, () => this.closed || this.nothingWaits(), this.counters);
    this.waiter = native.doorbellWaiter(this.inbox, INBOX_BELL_BYTE, () => this.onBell());
    this.liveness = setInterval(() => this.checkPeers(), LIVENESS_MS);
    this.liveness.unref();
    // A rank that exits without finalize (process.exit, an uncaught error)
    // still removes its names; only a killed one leaves them to the launcher.
    process.once('exit', this.onExit);
    // Nor does one stopped by SIGINT/SIGTERM/SIGHUP, whoever launched it (core/signal-cleanup.ts).
    this.releaseOnSignal = cleanupOnSignal(this.onExit);
  }

  private readonly releaseOnSignal: () => void;

  private readonly onExit = (): void => {
    this.native.shmUnlink(this.inboxName);
    for (const name of this.segmentNames.values()) this.native.shmUnlink(name);
    this.unlinkUnmappedRings();
    this.sweepKilledPeers();
  };

  /**
   * The names of this job's ranks on this host whose process is gone: a rank
   * killed by SIGKILL removes none, and under launchers that do not sweep the
   * job's prefix (mpirun, Slurm) nobody else would. The liveness check
   * (ShmEndpoint.checkAlive) covers peers this rank talked to; this covers the
   * others, from the inboxes in /dev/shm (each stamped with its owner's pid),
   * as this rank leaves (finalize, exit, or a signal: mpirun sends SIGTERM to
   * the rest of the job when one rank dies). Removed: the dead rank's inbox,
   * its rings and segments (`<prefix><rank>-...`), and our ring to it.
   */
  private sweepKilledPeers(): void {
    const mine = this.jobNames();
    for (const n of mine) {
      const m = /^(\d+)-in$/.exec(n.slice(this.prefix.length));
      if (m === null) continue;
      const r = Number(m[1]);
      if (r === this.rank) continue;
      let pid = 0;
      try { pid = new Int32Array(this.native.shmOpen(n), 0, IN_PID + 1)[IN_PID]!; } catch { continue; }
      if (pid <= 0 || pid === process.pid || processExists(pid)) continue;
      this.unlinkDeadPeer(r, mine);
    }
  }

  /** This job's names in /dev/shm ([] where it cannot be listed). */
  private jobNames(): string[] {
    try { return readdirSync('/dev/shm').filter((n) => n.startsWith(this.prefix)); } catch { return []; }
  }

  /**
   * The names of rank r, whose process is gone: its inbox, rings and segments
   * (`<prefix><r>-...`: it removes none when killed), and our ring to it.
   * `names`: this job's names, if already listed.
   */
  unlinkDeadPeer(r: number, names: readonly string[] = this.jobNames()): void {
    const own = `${this.prefix}${r}-`;
    for (const name of names) if (name.startsWith(own)) this.native.shmUnlink(name);
    this.native.shmUnlink(ringName(this.prefix, this.rank, r));
  }

  /**
   * Rings announced to us that we never mapped (a peer's last words as we
   * left, a revoke, a BYE): nobody else would remove their names. The closed
   * flag tells a peer announcing from now on to remove its ring itself.
   */
  private unlinkUnmappedRings(): void {
    const w = this.inWords;
    Atomics.store(w, IN_CLOSED, 1);
    const announced = Math.min(Atomics.load(w, IN_ANNOUNCED), INBOX_SLOTS);
    for (let s = this.seen; s < announced; s++) {
      const who = Atomics.load(w, IN_SLOTS + s);
      if (who > 0) this.native.shmUnlink(ringName(this.prefix, who - 1, this.rank));
    }
  }

  address(): string {
    return encodeAddress({ host: this.host, pid: process.pid, inbox: this.inboxName });
  }

  /** Same host, another process, and its inbox is in our /dev/shm (containers may not share it). */
  whyNot(address: string): string | null {
    const a = decodeAddress(address);
    if (a === null) return 'its address is not a shared-memory address';
    if (a.host !== this.host) return `it is on host ${a.host}, not this one (${this.host})`;
    if (a.pid === process.pid) return 'it is a thread of this process (thread ranks reach each other over tbsm)';
    if (!existsSync(`/dev/shm/${a.inbox}`)) return `its inbox /dev/shm/${a.inbox} is not here (another container's /dev/shm, or it finalized)`;
    return null;
  }

  endpoint(peer: bigint, address: string): ShmEndpoint {
    let ep = this.endpoints.get(peer);
    if (ep === undefined) {
      const a = decodeAddress(address);
      ep = new ShmEndpoint(this, peer, a?.pid ?? 0);
      this.endpoints.set(peer, ep);
    }
    return ep;
  }

  /**
   * A buffer in a new /dev/shm segment of ours that peers may map (comm.alloc).
   * Its name stays until the buffer is garbage collected or the rail closes
   * (railcomm run also sweeps the job's names).
   */
  allocShared(bytes: number): Uint8Array | null {
    if (this.closed) return null;
    const id = this.nextSegment++;
    const name = segmentName(this.prefix, this.rank, id);
    const sab = this.native.shmCreate(name, Math.max(bytes, 8));
    this.segments.set(sab, id);
    this.segmentNames.set(id, name);
    this.freed.register(sab, id);
    return new Uint8Array(sab, 0, bytes);
  }

  /** Which registered segment of ours holds `buf`, and where. */
  segmentOf(buf: Uint8Array): { id: number; offset: number } | null {
    const b = buf.buffer;
    if (!(b instanceof SharedArrayBuffer)) return null;
    const id = this.segments.get(b);
    return id === undefined ? null : { id, offset: buf.byteOffset };
  }

  /** A registered segment was freed: remove its name and tell the peers to drop their mappings. */
  private segmentFreed(id: number): void {
    const name = this.segmentNames.get(id);
    if (name === undefined) return;
    this.segmentNames.delete(id);
    this.native.shmUnlink(name);
    if (this.closed) return;
    const v = new DataView(this.ctl.buffer);
    v.setUint32(0, CTL_FREE, true);
    v.setUint32(4, id, true);
    for (const ep of this.endpoints.values()) ep.sendControl(this.ctl, CTL_HDR);
  }

  /** Map rings that peers announced in our inbox. */
  private accept(): boolean {
    const w = this.inWords;
    const n = Math.min(Atomics.load(w, IN_ANNOUNCED), INBOX_SLOTS);
    let any = false;
    while (this.seen < n) {
      const who = Atomics.load(w, IN_SLOTS + this.seen);
      if (who === 0) break; // taken, not written yet: next poll
      this.seen++;
      any = true;
      if (who < 0) { this.endpoint(endpointId(jobOf(this.env.self), -who - 1), '').unreachable(); continue; }
      const from = who - 1;
      const peer = endpointId(jobOf(this.env.self), from);
      const ep = this.endpoint(peer, '');
      const name = ringName(this.prefix, from, this.rank);
      let ring: Ring;
      try {
        ring = new Ring(this.native.shmOpen(name));
      } catch (err) {
        ep.abort(`cannot map its ring ${name}: ${(err as Error).message}`);
        continue;
      } finally {
        // Both sides have it mapped now (or it is useless): the name goes.
        this.native.shmUnlink(name);
      }
      const st = ring.stampOf();
      const bad = checkStamp(st.magic, st.version, `ring ${name}`);
      if (bad !== null) { ep.abort(bad); continue; }
      ep.accepted(st.pid);
      const entry: Inbound = inboundRing(ring, ep, (am, off, hdrLen, payLen) => this.deliver(entry, am, off, hdrLen, payLen));
      ep.inbound = entry;
      this.inbound.push(entry);
      this.env.upcalls.accepted(ep);
    }
    return any;
  }

  /** Drain inbound rings and re-drive blocked senders; true if anything happened. */
  poll(): boolean {
    const accepted = Atomics.load(this.inWords, IN_ANNOUNCED) !== this.seen && this.accept();
    return pollRings(this.inbound, this.blocked, this.env.upcalls) || accepted;
  }

  /** Hand back consumed ring space (this rank stops polling for a while). */
  settle(): void {
    settleRings(this.inbound);
  }

  /** Arm the futex doorbell; false (nothing armed) when something already waits. */
  sleep(wake: () => void): boolean {
    if (this.closed) return true;
    const seen = this.bell.prepareSleep();
    if (!this.nothingWaits()) { this.bell.cancelSleep(); return false; }
    if (!this.armed) {
      this.armed = true;
      this.native.doorbellArm(this.waiter, seen);
    }
    this.sleeper.sleeping(wake);
    return true;
  }

  /** No new peer announced a ring, no frame waits, and every blocked sender will be rung. */
  private nothingWaits(): boolean {
    return Atomics.load(this.inWords, IN_ANNOUNCED) === this.seen && maySleep(this.inbound, this.blocked);
  }

  private onBell(): void {
    this.armed = false;
    if (!this.closed) this.sleeper.rung();
  }

  private deliver(e: Inbound, am: number, off: number, hdrLen: number, payLen: number): void {
    // (A frame that made its peer fail, by its handler, ends the delivery of that peer's batch.)
    if (e.broken) return;
    deliverFrame(this.env.upcalls.am, this.rx, e.ep, e.ring, am, off, hdrLen, payLen);
  }

  /** finalize() began: from now on a peer's inbox found gone means that peer finalized first. */
  beginFinalize(): void {
    this.finalizing = true;
  }

  /**
   * A rank the wire-up service saw die, whether or not we ever talked to it:
   * its names (inbox, rings with us) go, since a killed rank removes nothing.
   */
  peerDied(peer: bigint): void {
    if (jobOf(peer) !== jobOf(this.env.self)) return;
    const r = rankOf(peer);
    this.native.shmUnlink(inboxName(this.prefix, r));
    this.native.shmUnlink(ringName(this.prefix, r, this.rank));
    this.native.shmUnlink(ringName(this.prefix, this.rank, r));
  }

  /**
   * A peer whose process is gone fails (its requests with it), but only after
   * what it sent is delivered: a rank that finalized and exited left its last
   * messages and its BYE in our rings, which this rank may not have polled yet.
   */
  private checkPeers(): void {
    let drained = false;
    for (const ep of this.endpoints.values()) {
      if (ep.alive()) continue;
      if (!drained) { drained = true; while (this.poll()) { /* deliver everything that waits */ } }
      ep.checkAlive();
    }
  }

  /** A failed or finalized peer: its ring is read no more (the next poll drops it), nor re-driven. */
  forget(ep: ShmEndpoint): void {
    this.blocked.delete(ep);
    if (ep.inbound !== null) ep.inbound.broken = true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await Promise.all([...this.endpoints.values()].map((ep) => ep.close()));
    this.closed = true;
    this.sleeper.close();
    clearInterval(this.liveness);
    process.off('exit', this.onExit);
    this.releaseOnSignal();
    this.native.doorbellClose(this.waiter);
    for (const name of this.segmentNames.values()) this.native.shmUnlink(name);
    this.segmentNames.clear();
    this.remoteSegments.clear();
    // The last peer that mapped it may have removed the name already (no error then).
    this.native.shmUnlink(this.inboxName);
    this.unlinkUnmappedRings();
    this.sweepKilledPeers();
    for (const ep of this.endpoints.values()) ep.release();
    this.inbound.length = 0;
  }
}
