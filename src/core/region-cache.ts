// A bounded least-recently-used cache of opened remote regions (the smcuda
// design's remote-handle cache): opening one is expensive, so receivers keep
// them, and drop them when their owner frees them. Used by the shm rail.

/**
 * A bounded least-recently-used cache of opened remote regions, per peer and
 * region id (opening one is expensive; the smcuda design caches them).
 * `close` runs for every entry that leaves: evicted, invalidated by its owner, or cleared.
 */
export class RegionCache<V> {
  readonly capacity: number;
  private readonly map = new Map<string, V>();
  private readonly close: (v: V) => void;
  hits = 0;
  misses = 0;

  constructor(capacity: number, close: (v: V) => void) {
    this.capacity = Math.max(1, capacity);
    this.close = close;
  }

  get size(): number { return this.map.size; }

  /** The cached region (now the most recently used), or open it with `open` and cache it. */
  get(peer: number, region: string, open: () => V): V {
    const key = `${peer}/${region}`;
    const v = this.map.get(key);
    if (v !== undefined) {
      this.hits++;
      this.map.delete(key);
      this.map.set(key, v);
      return v;
    }
    this.misses++;
    const fresh = open();
    this.map.set(key, fresh);
    if (this.map.size > this.capacity) {
      const oldest = this.map.keys().next().value as string;
      const old = this.map.get(oldest)!;
      this.map.delete(oldest);
      this.close(old);
    }
    return fresh;
  }

  /** The owner freed the region. */
  invalidate(peer: number, region: string): boolean {
    const key = `${peer}/${region}`;
    const v = this.map.get(key);
    if (v === undefined) return false;
    this.map.delete(key);
    this.close(v);
    return true;
  }

  /** Every region of a peer (it failed or finalized). */
  invalidatePeer(peer: number): number {
    let n = 0;
    for (const [k, v] of [...this.map]) {
      if (!k.startsWith(`${peer}/`)) continue;
      this.map.delete(k);
      this.close(v);
      n++;
    }
    return n;
  }

  clear(): void {
    for (const v of this.map.values()) this.close(v);
    this.map.clear();
  }
}
