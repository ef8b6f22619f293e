// The ofi rail's operations in flight: each native operation that completes
// later (a zero-copy send, an RMA write or read, an atomic) carries a 32-bit
// id that the completion event hands back. An id names a slot and the slot's
// generation, so a completion that comes after its operation was failed
// (its peer died) never completes the slot's next operation.

import type { Completion, ValueCompletion } from '../api.js';
import type { RailcommError } from '../../core/errors.js';

const SLOT_BITS = 20;
const SLOT_MASK = (1 << SLOT_BITS) - 1;
const GEN_LIMIT = 1 << (32 - SLOT_BITS);

/**
 * How long operations in flight to a peer that finalized may still complete
 * (ms): the provider's completion of a send the peer received can come after
 * the peer's BYE (endpoint.ts peerClosed).
 */
export const PEER_CLOSED_DRAIN_MS = 2000;

/** An operation failed while the provider still held it: nothing waits for it, its slot goes back when the provider lets go. */
const ORPHAN: Completion = { railComplete(): void { /* failed already */ } };

export interface OpOwner {
  readonly failed: boolean;
}

export class OpTable<E extends OpOwner> {
  private done: Array<Completion | null> = [];
  private owner: Array<E | null> = [];
  /** Memory the provider reads or writes until completion: kept alive here. */
  private keep: Array<Uint8Array | null> = [];
  /** Fetching atomics: the engine's element type of the old value (-1: none). */
  private type: number[] = [];
  private gen: number[] = [];
  private free: number[] = [];
  /** Operations in flight that something waits for (not those failed while the provider held them). */
  count = 0;
  /** Owners (peers that finalized) whose operations may still complete until a time (ms), then fail with err. */
  readonly draining = new Map<E, { until: number; err: RailcommError }>();

  /** A slot for done; returns the id to pass the binding (never 0). */
  take(done: Completion, owner: E, keep: Uint8Array | null, type: number): number {
    let i = this.free.pop();
    if (i === undefined) {
      i = this.done.length;
      if (i > SLOT_MASK) throw new RangeError('ofi: more than a million operations in flight');
      this.done.push(null); this.owner.push(null); this.keep.push(null); this.type.push(-1); this.gen.push(1);
    }
    this.done[i] = done; this.owner[i] = owner; this.keep[i] = keep; this.type[i] = type;
    this.count++;
    return ((this.gen[i]! << SLOT_BITS) | i) >>> 0;
  }

  /** The type of the operation release() took last. */
  private releasedType = -1;

  /**
   * The completion of id, taken out of the table (null: already failed or
   * unknown); its type in releasedType (no object per operation: every native
   * operation and zero-copy send comes through here).
   */
  private release(id: number): Completion | null {
    const i = id & SLOT_MASK;
    const g = id >>> SLOT_BITS;
    const d = this.done[i];
    if (d === undefined || d === null || this.gen[i] !== g) return null;
    this.releasedType = this.type[i]!;
    this.done[i] = null; this.owner[i] = null; this.keep[i] = null; this.type[i] = -1;
    this.gen[i] = g + 1 >= GEN_LIMIT ? 1 : g + 1;
    this.free.push(i);
    if (d !== ORPHAN) this.count--;
    return d;
  }

  /** A native completion; value decodes a fetching atomic's old value for its type. */
  complete(id: number, value: ((type: number) => number | bigint) | null): void {
    const done = this.release(id);
    if (done === null) return;
    const type = this.releasedType;
    if (type >= 0 && value !== null) (done as ValueCompletion).railValue(value(type));
    done.railComplete(null);
  }

  fail(id: number, err: RailcommError): void {
    this.release(id)?.railComplete(err);
  }

  /** The operation was not taken (no resource): its slot goes back, nobody is told. */
  drop(id: number): void {
    this.release(id);
  }

  /** Id of slot i as it stands (for failing everything of one owner). */
  private idOf(i: number): number {
    return ((this.gen[i]! << SLOT_BITS) | i) >>> 0;
  }

  /**
   * Fail every operation of owner (its peer is gone, or given up on). The
   * provider may still hold them (a connection that carries nothing keeps
   * its sends): each fails now, but its slot, and the memory it reads or
   * writes, stay until the provider lets go of it (its completion, or the
   * rail's close), else the provider would touch freed memory.
   */
  failOwner(owner: E, err: RailcommError): void {
    for (let i = 0; i < this.owner.length; i++) {
      const d = this.done[i];
      if (this.owner[i] !== owner || d === null || d === undefined) continue;
      this.done[i] = ORPHAN; this.owner[i] = null; this.type[i] = -1;
      this.count--;
      d.railComplete(err);
    }
  }

  /** Whether owner has an operation in flight. */
  hasOwner(owner: E): boolean {
    if (this.count === 0) return false;
    for (let i = 0; i < this.owner.length; i++) if (this.owner[i] === owner) return true;
    return false;
  }

  /** Leave owner's operations in flight to complete until `until` (ms); then they fail with err (drainDue). */
  drain(owner: E, err: RailcommError, until: number): void {
    if (this.hasOwner(owner)) this.draining.set(owner, { until, err });
  }

  /** Owners drained: forgotten once nothing of theirs is in flight; what is still in flight past their time fails. */
  drainDue(now: number): void {
    for (const [owner, d] of this.draining) {
      if (d.until <= now) this.failOwner(owner, d.err);
      else if (this.hasOwner(owner)) continue;
      this.draining.delete(owner);
    }
  }

  /** Fail everything (the rail closes). */
  failAll(err: RailcommError): void {
    this.draining.clear();
    for (let i = 0; i < this.done.length; i++) if (this.done[i] !== null) this.fail(this.idOf(i), err);
  }

  /** The owner of id's operation (null: none). */
  ownerOf(id: number): E | null {
    const i = id & SLOT_MASK;
    return this.gen[i] === id >>> SLOT_BITS ? this.owner[i] ?? null : null;
  }
}
