// Host buffers that device data is staged through: page-locked memory
// (cuMemHostAlloc: copies to and from the GPU at full speed, and
// asynchronously) up to a size, plain memory above it, kept in a pool by
// power-of-two size class so that a message stream allocates nothing.

import { driver } from './driver.js';

/** Counters of the pool (cuda.stats, --stats). */
export interface StagingCounters {
  pinnedBytes: number;
  pageableBytes: number;
  hits: number;
  misses: number;
  /** cuMemHostAlloc refused (locked-memory limit): plain memory was used instead. */
  pinFailures: number;
}

const MIN_CLASS = 4096;

function classOf(bytes: number): number {
  let c = MIN_CLASS;
  while (c < bytes) c *= 2;
  return c;
}

export class StagingPool {
  /** Idle buffers by class size. */
  private readonly idle = new Map<number, ArrayBuffer[]>();
  private idleBytes = 0;
  private readonly keepBytes: number;
  private readonly pinnedMax: number;
  readonly counters: StagingCounters = { pinnedBytes: 0, pageableBytes: 0, hits: 0, misses: 0, pinFailures: 0 };
  /** Which buffers are page-locked (the rest are plain). */
  private readonly pinned = new WeakSet<ArrayBuffer>();

  /** keepBytes: idle memory kept for reuse; pinnedMax: larger buffers are plain memory. */
  constructor(keepBytes: number, pinnedMax: number) {
    this.keepBytes = keepBytes;
    this.pinnedMax = pinnedMax;
  }

  /** A buffer of exactly `bytes` (a view over a pooled one); give it back with release(). */
  acquire(bytes: number): Uint8Array {
    const c = classOf(bytes);
    const list = this.idle.get(c);
    const ab = list?.pop();
    if (ab !== undefined) {
      this.counters.hits++;
      this.idleBytes -= c;
      return new Uint8Array(ab, 0, bytes);
    }
    this.counters.misses++;
    return new Uint8Array(this.allocate(c), 0, bytes);
  }

  /** Whether a buffer acquire() returned is page-locked. */
  isPinned(view: Uint8Array): boolean {
    return this.pinned.has(view.buffer as ArrayBuffer);
  }

  release(view: Uint8Array): void {
    const ab = view.buffer as ArrayBuffer;
    const c = ab.byteLength;
    if (this.idleBytes + c > this.keepBytes) return; // the collector frees it (pinned: its finalizer, cuMemFreeHost)
    let list = this.idle.get(c);
    if (list === undefined) { list = []; this.idle.set(c, list); }
    list.push(ab);
    this.idleBytes += c;
  }

  private allocate(c: number): ArrayBuffer {
    if (c <= this.pinnedMax) {
      try {
        const ab = driver('staging').cudaHostAlloc(c);
        this.pinned.add(ab);
        this.counters.pinnedBytes += c;
        return ab;
      } catch {
        this.counters.pinFailures++;
      }
    }
    this.counters.pageableBytes += c;
    return new ArrayBuffer(c);
  }

  /** Drop every idle buffer (finalize). */
  clear(): void {
    this.idle.clear();
    this.idleBytes = 0;
  }
}

let pool: StagingPool | null = null;

/** This thread's pool: 256 MiB kept idle at most; page-locked up to 64 MiB a buffer. */
export function staging(): StagingPool {
  return (pool ??= new StagingPool(256 << 20, 64 << 20));
}
