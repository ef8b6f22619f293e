// The rail layer's interfaces: Component -> Device -> Rail -> RailEndpoint.
// A rail moves active messages (AM) and, optionally, RMA between two processes;
// it knows nothing of tags, communicators or ranks (peers are opaque 64-bit ids).

import type { Params } from '../core/params.js';
import type { TrafficCounters } from '../core/counters.js';
import type { RailcommError } from '../core/errors.js';
import type { Logger } from '../core/log.js';

/**
 * Every rail operation answers one of three things. NO_RESOURCE (socket,
 * ring, window or credits full) means "nothing was taken: queue it and retry
 * when the rail calls `ready`".
 */
export const DONE = 0;
export const IN_PROGRESS = 1;
export const NO_RESOURCE = 2;
export type RailStatus = typeof DONE | typeof IN_PROGRESS | typeof NO_RESOURCE;

/** What a rail can do; only known once it is open (LCP step 7). */
export interface RailCaps {
  /** Delivers every AM exactly once (possibly after retransmission). */
  readonly reliable: boolean;
  /** AMs to one peer arrive in the order sent. */
  readonly ordered: boolean;
  /** Largest AM header the rail carries. */
  readonly amHeaderMax: number;
  /** Largest payload worth inlining with the header in one copy (short protocol). */
  readonly amShortMax: number;
  /** Largest payload sendCopy takes (the rail copies it; completes at once). */
  readonly amCopyMax: number;
  /** Largest payload sendZcopy takes (sent from the caller's memory; completes later). */
  readonly amZcopyMax: number;
  /** Native one-sided operations on registered memory. */
  readonly put: boolean;
  readonly get: boolean;
  readonly atomics: boolean;
  /** Estimates used to rank rails (microseconds, MB/s). */
  readonly latencyUs: number;
  readonly bandwidthMBps: number;
  /**
   * Where this rail's rendezvous should start, when it knows better than
   * RAILCOMM_RNDV_THRESHOLD: the shared-memory rings move messages up to a
   * few hundred KiB faster by copying in and out than by a single-copy
   * rendezvous round trip.
   */
  readonly rndvThreshold?: number;
  /**
   * Sending is copying into memory the peer reads (shared-memory rings):
   * sendCopy costs no more than sendZcopy, so a blocking send of any size up
   * to the zero-copy range that the rail takes at once completes at the call.
   */
  readonly copiesAtSend?: boolean;
  /**
   * How a synchronous call (comm/sync.ts), which runs no event loop, waits on
   * this rail: 'memory', peers' frames land in memory a plain read sees
   * (self, the shared-memory rings); 'queue', a completion queue read by a
   * plain call, waited on with blockSync (ofi). Absent: the rail progresses
   * only on the event loop, and synchronous calls refuse its peers.
   */
  readonly syncWait?: 'memory' | 'queue';
}

/** Completion of an in-progress operation. Implemented by requests, so no closure per message. */
export interface Completion {
  railComplete(err: RailcommError | null): void;
}

/** Completion of a native fetching atomic: the element's old value comes first, then railComplete. */
export interface ValueCompletion extends Completion {
  railValue(v: number | bigint): void;
}

/** Memory registered with a rail for native one-sided operations (Rail.registerMemory). */
export interface RailMemory {
  /** What a peer needs to reach it through this rail (its part of the packed rkey). */
  readonly packed: Uint8Array;
  /** Deregister (the window is freed everywhere). */
  release(): void;
}

/** A peer's registration as this rail reaches it (Rail.unpackRemoteKey); opaque above the rail. */
export interface RailRemoteKey {
  readonly rail: string;
}

/**
 * Native one-sided operations on a peer's registered memory (the ofi rail:
 * fi_write, fi_read, fi_atomic). Each answers IN_PROGRESS (done fires once
 * the operation is complete at the target, or the data is here), DONE (put
 * and get: complete at the target, or the data here, when the call returned;
 * done is never called) or NO_RESOURCE (nothing taken: retry once the rail
 * calls `ready`). Types and
 * ops are the one-sided engine's codes (proto/rma/apply.ts).
 */
export interface RailRma {
  put(src: Uint8Array, key: RailRemoteKey, offset: number, done: Completion): RailStatus;
  get(dst: Uint8Array, key: RailRemoteKey, offset: number, done: Completion): RailStatus;
  /** Whether `op` on `type` runs natively: accumulate of `count` elements, fetch-and-op or compare-and-swap (fetch). */
  atomicNative(type: number, op: number, fetch: boolean, count: number): boolean;
  /** target[offset + i] op= src's elements, atomically per element. */
  accumulate(src: Uint8Array, type: number, op: number, key: RailRemoteKey, offset: number, done: Completion): RailStatus;
  /** Fetch-and-op or compare-and-swap (op OP_CSWAP) on one element; the old value goes to done.railValue. */
  fetchAtomic(type: number, op: number, operand: number | bigint, compare: number | bigint, key: RailRemoteKey, offset: number, done: ValueCompletion): RailStatus;
}

/**
 * One received AM, handed to a handler synchronously. The object and the bytes
 * it points at are reused by the rail: copy what you keep before returning.
 */
export interface RxFrame {
  buf: Buffer;
  view: DataView;
  hdrOff: number;
  hdrLen: number;
  payOff: number;
  payLen: number;
  /** Set when the payload was written straight into the buffer `place` returned. */
  placed: Uint8Array | null;
  /**
   * buf as 32-bit words (from buf's first byte), where payloads start 4-byte
   * aligned in it (the rings): small payloads are copied out a word at a
   * time. null elsewhere.
   */
  words: Int32Array | null;
}

export interface AmHandler {
  /** The AM arrived (header and payload, or header with `placed` set). */
  recv(ep: RailEndpoint, rx: RxFrame): void;
  /**
   * Optional: called with the header before the payload is read, for AMs that
   * carry bulk data to a known place (rendezvous data, emulated put). Return a
   * view of exactly rx.payLen bytes to receive into, or null to discard them.
   */
  place?(ep: RailEndpoint, rx: RxFrame): Uint8Array | null;
}

/** How a rail reports to the layer above. */
export interface RailUpcalls {
  /** Handlers by AM id; an id without one is a protocol error from the peer. */
  readonly am: ReadonlyArray<AmHandler | undefined>;
  /** An endpoint that answered NO_RESOURCE can take sends again. */
  ready(ep: RailEndpoint): void;
  /** The endpoint is gone: `graceful` when the peer closed it on purpose (finalize). */
  failed(ep: RailEndpoint, err: RailcommError, graceful: boolean): void;
  /** An endpoint was created by the peer connecting to us. */
  accepted(ep: RailEndpoint): void;
  /** Bytes arrived or a write completed (per socket operation, not per message): keeps progress polling. */
  activity(): void;
  /**
   * Whether the layer above waits on this endpoint's peer (a receive the peer
   * could satisfy, a rendezvous or one-sided operation with it, sends queued
   * to it). Rails that cannot see a peer die (udp) probe it only then. Asked
   * rarely (a keepalive check), never on a hot path.
   */
  waitingOn?(ep: RailEndpoint): boolean;
}

export interface RailEnv {
  /** This process's 64-bit endpoint id (job << 32 | rank). */
  readonly self: bigint;
  readonly jobId: number;
  readonly jobKey: string;
  /**
   * The key that ranks of another job prove, once a port or spawn connected
   * the two jobs (a key both derived for the pair), or null: a stranger.
   */
  keyFor?(jobId: number): string | null;
  readonly params: Params;
  readonly log: Logger;
  readonly upcalls: RailUpcalls;
  /** Ranks on this host outside this process (rails on shared memory use it to know when every peer has mapped a segment). */
  readonly hostPeers?: number;
  /** Ranks this process runs as threads, this one included (the launch's RAILCOMM_THREADS; absent: 1). */
  readonly threadRanks?: number;
}

export interface Device {
  readonly component: string;
  readonly name: string;
  readonly kind: 'self' | 'memory' | 'loopback' | 'network';
  /** Address on the device, where it has one (an IP). */
  readonly address?: string;
  readonly notes?: string;
}

/** How far a component can reach: used by layout filtering (LCP step 3). */
export type Reach = 'self' | 'process' | 'host' | 'network';

export interface Component {
  readonly name: string;
  readonly reach: Reach;
  /** Used only when RAILCOMM_RAILS names it (ofi: opening libfabric costs time and memory every job would pay). */
  readonly optIn?: boolean;
  /** LCP step 2: can this build use it at all? */
  available(): { ok: boolean; why: string };
  /**
   * LCP step 3: why this job cannot use it on this host, or null (shm: not
   * enough free space in /dev/shm for the rings to `hostPeers` peers).
   */
  fits?(params: Params, hostPeers: number): string | null;
  /** LCP step 4. */
  queryDevices(params: Params): Device[];
  /** More for `railcomm info` after its devices were queried (ofi: the providers it refuses, and why). */
  report?(): string[];
  /** LCP step 6. */
  open(device: Device, env: RailEnv): Promise<Rail>;
}

export interface Rail {
  readonly name: string;
  readonly component: string;
  readonly device: Device;
  readonly caps: RailCaps;
  readonly counters: TrafficCounters;
  /** What peers need to reach this rail, published through wire-up. */
  address(): string;
  /** The endpoint to a peer (connection made on first use, asynchronously). */
  endpoint(peer: bigint, address: string): RailEndpoint;
  close(): Promise<void>;
  /**
   * Why a peer that published `address` for this rail is not reachable through
   * it, in a clause for ERR_NO_RAIL's message; null when it is (absent: every
   * address is; tcp and udp addresses are also judged by subnet, proto/lanes).
   */
  whyNot?(address: string): string | null;
  /** Polled rails (shared memory): deliver what waits; true if anything happened. */
  poll?(): boolean;
  /** Send now what the rail holds back until the current run of JavaScript ends (udp: sends packed after the run's first datagram); a synchronous wait calls it, since it runs no microtasks. */
  flush?(): void;
  /** What the rail itself holds or waits for, in words (the hang report; rare); null when nothing. */
  describeState?(): string | null;
  /** Polled rails: arm a wake-up for when data arrives; false (nothing armed) when data already waits. */
  sleep?(wake: () => void): boolean;
  /** Polled rails: this rank stops polling for a while (not asleep on the rail): hand back consumed ring space. */
  settle?(): void;
  /** Memory that peers of this rail can map (comm.alloc): large sends from it need no staging and no CMA. */
  allocShared?(bytes: number): Uint8Array | null;
  /** The layer above learned that this peer died (the wire-up service saw it go): drop what is kept for it. */
  peerDied?(peer: bigint): void;
  /** finalize() began: a peer this rank never wrote to that is gone by now finalized first (its BYE is moot). */
  beginFinalize?(): void;
  /** caps.syncWait 'queue': a synchronous call's wait, at most ms, for the queue to have something (no event loop runs). */
  blockSync?(ms: number): void;
  /** Rails with native one-sided operations: register memory peers may reach (null: not this memory). */
  registerMemory?(bytes: Uint8Array): RailMemory | null;
  /** Remote reads fit for rendezvous (the receiver reads a registered send buffer: proto/rndv/rdma.ts). */
  readonly rendezvousReads?: boolean;
  /** A peer's packed registration for this rail, made usable (null: malformed). */
  unpackRemoteKey?(packed: Uint8Array): RailRemoteKey | null;
  /** Forget a key unpackRemoteKey gave (a one-message registration, read once). */
  dropRemoteKey?(key: RailRemoteKey): void;
}

/** An endpoint of a polled rail: its peer's traffic can be polled alone, and its next frame looked at first. */
export type PolledEndpoint = RailEndpoint & Required<Pick<RailEndpoint, 'poll' | 'peek' | 'takePeeked'>>;

export interface RailEndpoint {
  readonly rail: Rail;
  readonly peer: bigint;
  readonly counters: TrafficCounters;
  /** Slot for the layer above (its protocol endpoint), so lookups cost nothing. */
  owner: unknown;
  /** Header and payload are copied before return: DONE or NO_RESOURCE. */
  sendCopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus;
  /** Payload is sent from the caller's memory; `done` fires once it may be reused. */
  sendZcopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array, done: Completion): RailStatus;
  /** Close after everything queued is sent; the peer sees a graceful close. */
  close(): Promise<void>;
  /** The peer sent something that cannot be true: drop the connection (counted, logged, peer failed). */
  abort(reason: string): void;
  /** This rank gives up on the connection, not for anything the peer sent (multirail: a lane that stopped answering): close it at once, failed. */
  giveUp?(reason: string): void;
  /** Polled rails: deliver what waits from this peer alone (a receive waits for it at the call); true if anything did. */
  poll?(): boolean;
  /**
   * A synchronous wait's liveness check (no event loop runs, so no wire-up
   * service report reaches it): send the peer something cheap it ignores, so
   * that a connection its death broke fails the endpoint (ofi, peers on other hosts).
   */
  probe?(): void;
  /**
   * Polled rails: describe the next frame from this peer in rx without
   * delivering it, and return its AM id (-1: none waits). The layer above may
   * consume it itself (takePeeked), or leave it to be delivered as usual.
   */
  peek?(rx: RxFrame): number;
  /** The frame peek described was consumed by the layer above: free it (counted as received). */
  takePeeked?(rx: RxFrame): void;
  /**
   * Optional single-copy reads of the peer's memory (shm: Linux CMA), for
   * rendezvous RGET. null or absent when the rail cannot.
   */
  readonly ipc?: RailIpc | null;
  /** Native one-sided operations to this peer (rails whose caps declare put, get and atomics). */
  readonly rma?: RailRma | null;
}

/** Reading a peer's memory directly: the peer publishes an address, we read from it once. */
export interface RailIpc {
  /** Where `buf` lives in this process, for the peer to read (stable while the buffer lives). */
  addressOf(buf: Uint8Array): bigint;
  /** Read dst.byteLength bytes at the peer's `address`: 0 on success, else a negative errno (-1 EPERM: not allowed, -3 ESRCH: peer gone). */
  read(dst: Uint8Array, address: bigint): number;
  /** Write src at the peer's `address` (same answers as read). */
  write(src: Uint8Array, address: bigint): number;
  /** Where `buf` lies in one of this rail's registered shared segments (Rail.allocShared), or null. */
  segmentOf?(buf: Uint8Array): { id: number; offset: number } | null;
  /** Copy from the peer's registered segment `id` at `offset` (mapped once, cached): 0, or a negative errno (-2: gone). */
  readSegment?(dst: Uint8Array, id: number, offset: number): number;
}

/** The key a peer of job `jobId` must prove: this job's key, a connected job's pair key, or null (refuse it). */
export function keyOfJob(env: RailEnv, jobId: number): string | null {
  return jobId === env.jobId ? env.jobKey : env.keyFor?.(jobId) ?? null;
}
