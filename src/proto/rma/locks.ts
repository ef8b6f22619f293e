// Target-side window locks for passive-target epochs: exclusive or shared,
// granted first come first served (a shared request never overtakes a queued
// exclusive one, so writers do not starve). Pure logic: the engine sends the
// grants it returns.

import { LOCK_EXCLUSIVE } from './wire.js';

export interface LockRequest {
  readonly rank: number;
  readonly mode: number;
  readonly opId: number;
}

class RegionLock {
  exclusive = -1;
  readonly shared = new Set<number>();
  readonly queue: LockRequest[] = [];

  get free(): boolean {
    return this.exclusive < 0 && this.shared.size === 0;
  }

  /** Grant from the head of the queue while the head is compatible. */
  grant(out: LockRequest[]): void {
    while (this.queue.length > 0 && this.exclusive < 0) {
      const head = this.queue[0]!;
      if (head.mode === LOCK_EXCLUSIVE) {
        if (this.shared.size > 0) return;
        this.exclusive = head.rank;
      } else {
        this.shared.add(head.rank);
      }
      this.queue.shift();
      out.push(head);
    }
  }
}

export class LockTable {
  private readonly regions = new Map<number, RegionLock>();

  private lockOf(region: number): RegionLock {
    let l = this.regions.get(region);
    if (l === undefined) { l = new RegionLock(); this.regions.set(region, l); }
    return l;
  }

  /** A rank asks for the lock; returns the requests granted now (possibly this one). */
  request(region: number, req: LockRequest): LockRequest[] {
    const l = this.lockOf(region);
    l.queue.push(req);
    const out: LockRequest[] = [];
    l.grant(out);
    return out;
  }

  /** The rank releases what it holds; returns the requests granted in consequence. False if it held nothing. */
  release(region: number, rank: number): LockRequest[] | null {
    const l = this.regions.get(region);
    if (l === undefined) return null;
    if (l.exclusive === rank) l.exclusive = -1;
    else if (!l.shared.delete(rank)) return null;
    const out: LockRequest[] = [];
    l.grant(out);
    if (l.free && l.queue.length === 0) this.regions.delete(region);
    return out;
  }

  /** A rank died: forget its queued requests and release what it held. */
  dropRank(rank: number): Array<{ region: number; granted: LockRequest[] }> {
    const out: Array<{ region: number; granted: LockRequest[] }> = [];
    for (const [region, l] of this.regions) {
      for (let i = l.queue.length - 1; i >= 0; i--) if (l.queue[i]!.rank === rank) l.queue.splice(i, 1);
      if (l.exclusive === rank) l.exclusive = -1;
      l.shared.delete(rank);
      const granted: LockRequest[] = [];
      l.grant(granted);
      if (granted.length > 0) out.push({ region, granted });
    }
    return out;
  }

  /** The region is deregistered: its waiters are returned (they get an error). */
  dropRegion(region: number): LockRequest[] {
    const l = this.regions.get(region);
    this.regions.delete(region);
    return l === undefined ? [] : l.queue;
  }

  holders(region: number): { exclusive: number; shared: number[]; queued: number } {
    const l = this.regions.get(region);
    return l === undefined ? { exclusive: -1, shared: [], queued: 0 } : { exclusive: l.exclusive, shared: [...l.shared], queued: l.queue.length };
  }
}
