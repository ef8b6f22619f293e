// An shm rail endpoint: the ring we write to one peer process (a /dev/shm
// segment we create on first send and announce in the peer's inbox), the
// peer's doorbell, its pid (liveness, CMA reads) and the single-copy reader.

import type { Completion, RailIpc, RailStatus } from '../api.js';
import { processExists } from '../../core/host.js';
import { DONE, IN_PROGRESS, NO_RESOURCE } from '../api.js';
import { TrafficCounters } from '../../core/counters.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { formatId, rankOf } from '../../core/ids.js';
import { Doorbell, Ring } from '../shared/ring.js';
import { AM_BYE, type RingPeer } from '../shared/deliver.js';
import { RingLane } from '../shared/poll.js';
import { cmaIpc } from '../shared/cma.js';
import type { ShmRail } from './rail.js';
import {
  CTL_FREE, INBOX_BELL_BYTE, INBOX_SLOTS, IN_ANNOUNCED, IN_CLOSED, IN_MAGIC, IN_MAPPED, IN_PID, IN_SLOTS, IN_VERSION, SHM_MAGIC, SHM_VERSION, checkStamp, inboxName, ringName, segmentName,
} from './wire.js';

const EMPTY = new Uint8Array(0);

export class ShmEndpoint extends RingLane<ShmEndpoint> implements RingPeer {
  readonly rail: ShmRail;
  readonly peer: bigint;
  readonly counters = new TrafficCounters();
  owner: unknown = null;
  readonly ipc: RailIpc;
  /** The peer's process id (from its address or its ring's stamp); 0 until known. */
  pid: number;
  private out: Ring | null = null;
  private peerInbox: Int32Array | null = null;
  private bell: Doorbell | null = null;
  failed = false;

  constructor(rail: ShmRail, peer: bigint, pid: number) {
    super();
    this.rail = rail;
    this.peer = peer;
    this.pid = pid;
    this.ipc = {
      ...cmaIpc(rail.native, () => this.pid),
      segmentOf: (buf) => rail.segmentOf(buf),
      readSegment: (dst, id, offset) => this.readSegment(dst, id, offset),
    };
  }

  /** Copy from the peer's registered segment, mapped once and kept in the rail's LRU cache. */
  readSegment(dst: Uint8Array, id: number, offset: number): number {
    const peerRank = rankOf(this.peer);
    let sab: SharedArrayBuffer;
    try {
      sab = this.rail.remoteSegments.get(peerRank, String(id), () => this.rail.native.shmOpen(segmentName(this.rail.prefix, peerRank, id)));
    } catch {
      return -2; // freed meanwhile, or never ours to see: the ring path follows
    }
    if (offset + dst.length > sab.byteLength) return -14;
    dst.set(new Uint8Array(sab, offset, dst.length));
    return 0;
  }

  /** A rail control frame from the peer. */
  railControl(hdr: DataView, off: number, len: number): void {
    if (len >= 8 && hdr.getUint32(off, true) === CTL_FREE) this.rail.remoteSegments.invalidate(rankOf(this.peer), String(hdr.getUint32(off + 4, true)));
  }

  /** Send a rail control frame (only to peers we talk to; best effort when the ring is full). */
  sendControl(hdr: Uint8Array, hdrLen: number): void {
    if (this.failed || this.out === null) return;
    if (this.out.write(AM_BYE, hdr, hdrLen, null)) this.bell!.ring();
  }

  /**
   * The peer announced a ring to us: we learn its pid, and map its inbox to
   * ring it. A peer that already finalized has removed its inbox: its
   * messages (and BYE) are still in the ring, so that is no failure here.
   */
  accepted(pid: number): void {
    if (this.pid === 0) this.pid = pid;
    this.openPeerInbox(true);
  }

  /** Map the peer's inbox (for its doorbell and to announce rings); false when that failed (the peer failed, unless quiet). */
  private openPeerInbox(quiet = false): boolean {
    if (this.peerInbox !== null) return true;
    if (this.failed) return false;
    const name = inboxName(this.rail.prefix, rankOf(this.peer));
    let words: Int32Array;
    try {
      words = new Int32Array(this.rail.native.shmOpen(name));
    } catch (err) {
      if (quiet) return false;
      // Finalizing (the layer above says goodbye to every peer it bound, even
      // ones it never wrote to): a peer whose inbox is gone finalized first, and
      // removed it. Nothing to say to it, and no failure to report.
      if (this.rail.finalizing && ((err as Error).cause as { code?: string } | undefined)?.code === 'ENOENT') this.finalizedFirst(name);
      else this.fail(`cannot map its inbox ${name}: ${(err as Error).message}`, false);
      return false;
    }
    const bad = checkStamp(Atomics.load(words, IN_MAGIC), words[IN_VERSION]!, `inbox ${name}`);
    if (bad !== null) { this.fail(bad, true); return false; }
    if (this.pid === 0) this.pid = words[IN_PID]!;
    this.peerInbox = words;
    this.bell = new Doorbell(words.buffer as SharedArrayBuffer, INBOX_BELL_BYTE, this.rail.notify);
    // The last of the peers it expects removes the name (nothing left behind under any launcher).
    const mapped = Atomics.add(words, IN_MAPPED, 1) + 1;
    if (mapped >= (this.rail.env.hostPeers ?? Infinity)) this.rail.native.shmUnlink(name);
    return true;
  }

  /** Our ring to the peer, made and announced on first use; null when the peer failed. */
  private ring(): Ring | null {
    if (this.out !== null) return this.out;
    if (!this.openPeerInbox()) return null;
    const rail = this.rail;
    const name = ringName(rail.prefix, rail.rank, rankOf(this.peer));
    let ring: Ring;
    try {
      rail.native.shmUnlink(name); // a leftover of a killed job with the same id
      ring = new Ring(rail.native.shmCreate(name, 128 + rail.ringBytes));
    } catch (err) {
      // The peer waits for what we send: tell it (an announcement without a
      // ring), so that it fails too instead of waiting for ever.
      const slot = Atomics.add(this.peerInbox!, IN_ANNOUNCED, 1);
      if (slot < INBOX_SLOTS) { Atomics.store(this.peerInbox!, IN_SLOTS + slot, -(rail.rank + 1)); this.bell!.ring(); }
      this.fail(`cannot create ring ${name}: ${(err as Error).message}`, false);
      return null;
    }
    ring.stamp(SHM_MAGIC, SHM_VERSION, process.pid);
    const w = this.peerInbox!;
    const slot = Atomics.add(w, IN_ANNOUNCED, 1);
    if (slot >= INBOX_SLOTS) {
      rail.native.shmUnlink(name);
      this.fail(`its inbox has no slot left for a new ring (${INBOX_SLOTS} peers)`, false);
      return null;
    }
    Atomics.store(w, IN_SLOTS + slot, rail.rank + 1);
    // The peer closed its rail (it finalized) before or while we announced: it
    // will never map the ring, so its name is ours to remove. (It sets the flag
    // before it reads the announcements, we announce before we read the flag:
    // one of the two sees the other, and unlinking twice is harmless.)
    if (Atomics.load(w, IN_CLOSED) !== 0) rail.native.shmUnlink(name);
    this.out = ring;
    return ring;
  }

  sleepUntilRoom(): boolean {
    return this.out === null || !this.out.waitForRoom(this.rail.caps.amHeaderMax, this.rail.caps.amCopyMax);
  }

  ringPeer(): void {
    if (this.bell !== null) this.bell.ring();
  }

  hasRoom(): boolean {
    return this.out === null || this.out.fits(this.rail.caps.amHeaderMax, this.rail.caps.amCopyMax);
  }

  sendCopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus {
    if (this.failed) return DONE;
    const r = this.out ?? this.ring();
    if (r === null) return DONE;
    if (!r.write(am, hdr, hdrLen, payload)) {
      this.counters.pending++;
      this.rail.blocked.add(this);
      return NO_RESOURCE;
    }
    this.sent(payload === null ? 0 : payload.length);
    return DONE;
  }

  sendZcopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array, done: Completion): RailStatus {
    const r = this.failed ? null : this.out ?? this.ring();
    if (r === null) { done.railComplete(new RailcommError(ErrorCode.PEER_FAILED, `peer ${formatId(this.peer)} is gone`)); return IN_PROGRESS; }
    if (!r.write(am, hdr, hdrLen, payload)) {
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
    this.bell!.ring();
  }

  /** Tell the peer we finalized (only if we ever talked); true once written. */
  sayBye(): boolean {
    if (this.failed || this.out === null) return true;
    if (!this.out.write(AM_BYE, EMPTY, 0, null)) return false;
    this.bell!.ring();
    return true;
  }

  /** Whether the peer's process still exists (or we cannot tell, or it already failed). */
  alive(): boolean {
    return this.failed || this.pid === 0 || processExists(this.pid);
  }

  /** Liveness: a peer whose process vanished fails now. */
  checkAlive(): void {
    if (this.alive()) return;
    this.fail(`its process ${this.pid} is gone`, false);
    // A rank killed before every local peer mapped its inbox never removed
    // the name: under launchers that do not sweep the job's prefix (Slurm,
    // mpirun) the survivors do, with the rings between it and us that were
    // never mapped on the other side.
    this.rail.unlinkDeadPeer(rankOf(this.peer));
  }

  peerClosed(): void {
    if (this.failed) return;
    this.failed = true;
    this.rail.forget(this);
    this.rail.remoteSegments.invalidatePeer(rankOf(this.peer));
    this.rail.env.upcalls.failed(this, new RailcommError(ErrorCode.PEER_FAILED, `peer ${formatId(this.peer)} finalized`), true);
  }

  /** While this rank finalizes: the peer, never written to, finalized first (its inbox name is gone). */
  private finalizedFirst(name: string): void {
    this.rail.env.log.debug(`shm: peer ${formatId(this.peer)} finalized before this rank wrote to it (${name} is gone)`);
    this.peerClosed();
  }

  abort(reason: string): void {
    this.fail(reason, true);
  }

  /** The peer could not make its ring to us (it announced none): it failed us, we fail it. */
  unreachable(): void {
    this.fail('it could not create its ring to this rank (is /dev/shm full? railcomm info says how much is free)', false);
  }

  private fail(reason: string, bad: boolean): void {
    if (this.failed) return;
    this.failed = true;
    if (bad) { this.counters.badFrames++; this.rail.counters.badFrames++; }
    this.rail.env.log.error(`shm: dropping peer ${formatId(this.peer)}: ${reason}`);
    this.rail.forget(this);
    this.rail.remoteSegments.invalidatePeer(rankOf(this.peer));
    this.rail.env.upcalls.failed(this, new RailcommError(ErrorCode.PEER_FAILED, `shm: peer ${formatId(this.peer)} failed: ${reason}`), false);
  }

  /** Drop our references to shared memory (the mappings go when V8 frees them). */
  release(): void {
    this.out = null;
    this.peerInbox = null;
    this.bell = null;
  }

  async close(): Promise<void> {
    const deadline = Date.now() + this.rail.env.params.connectTimeout;
    while (!this.sayBye() && Date.now() < deadline) {
      if (this.pid !== 0) this.checkAlive();
      await new Promise((r) => setTimeout(r, 1));
    }
  }
}
