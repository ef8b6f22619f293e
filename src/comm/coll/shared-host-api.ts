// What the shared-memory collectives (shared.ts, shared-phase.ts) need from
// their communicator: a segment, a doorbell to sleep and wake on, liveness
// checks and hang reports; shared-host.ts provides it for thread and process
// ranks.

import type { CollComm } from './engine.js';
import type { AsideWork } from '../../proto/progress.js';

/** What the shared path needs from its communicator (shared-host.ts). */
export interface SharedHost {
  /** Spin this long (ms) before sleeping; 0 when ranks outnumber cores. */
  readonly spinMs: number;
  /** Bytes of one slot. */
  readonly slotBytes: number;
  /** Reductions of at least this many bytes split the work (each rank reduces a block); smaller ones reduce everything everywhere. */
  readonly splitBytes: number;
  /** Make (rank 0) or map (others) the segment; collective over c. */
  attach(c: CollComm, bytes: number): Promise<Uint8Array>;
  /** Throws ERR_PEER_FAILED if a member is known dead. */
  checkAlive(): void;
  /** Run fn when this rank starts finalize(). */
  atFinalize(fn: () => void): void;
  /** Hold the event loop open while a collective waits (true) or not (false). */
  keep(on: boolean): void;
  /** Block this thread until the doorbell word ctrl[0] differs from `seen`, a wake, or `us` pass (the event loop waits too). */
  pause(ctrl: Int32Array, seen: number, us: number): void;
  /** Sleep until ctrl[0] differs from `seen` (or `ms` pass); only this rank's event loop waits. */
  sleep(ctrl: Int32Array, seen: number, ms: number): Promise<unknown>;
  /** Wake every rank sleeping or blocked on ctrl[0] (after it changed). */
  wake(ctrl: Int32Array): void;
  /** Communicators of up to this many ranks use flat phases (every rank watches every flag); larger ones leader phases. */
  readonly flatMax: number;
  /** A synchronous call's check, without the event loop: throws ERR_PEER_FAILED if a member is dead. */
  checkAliveSync(): void;
  /** A synchronous call has waited forMs for ranks `missing`: say so once past RAILCOMM_HANG_TIMEOUT; true once nothing more needs saying. */
  hangSync(forMs: number, missing: readonly number[]): boolean;
  /** A synchronous call waits long: deliver what waits on the point-to-point rails, and run the work other waits leave aside, meanwhile. */
  pollSync(): void;
  /** w (a communicator whose collective waits on a phase) has work a synchronous wait elsewhere should run. */
  addAside(w: AsideWork): void;
  /** attach() for a synchronous call: `barrier` is a blocking barrier over point-to-point on the call's tag. */
  attachSync(barrier: () => void, rank: number, bytes: number): Uint8Array;
}
