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
  private idlePinned = 0;
  private idlePageable = 0;
  private readonly keepBytes: number;
  private readonly keepPageable: number;
  private readonly pinnedMax: number;
  readonly counters: StagingCounters = { pinnedBytes: 0, pageableBytes: 0, hits: 0, misses: 0, pinFailures: 0 };
  /** Which buffers are page-locked (the rest are plain). */
  private readonly pinned = new WeakSet<ArrayBuffer>();

  /**
   * keepBytes: idle page-locked memory kept for reuse; keepPageable: idle plain
   * memory kept (a large device receive stages into it only when its data
   * comes from host memory: by IPC its pages are never touched, so keeping it
   * costs address space, and allocating one per message would cost a garbage
   * collection); pinnedMax: larger buffers are plain memory.
   */
  constructor(keepBytes: number, keepPageable: number, pinnedMax: number) {
    this.keepBytes = keepBytes;
    this.keepPageable = keepPageable;
    this.pinnedMax = pinnedMax;
  }

  /** A buffer of exactly `bytes` (a view over a pooled one); give it back with release(). */
  acquire(bytes: number): Uint8Array {
    const c = classOf(bytes);
    const list = this.idle.get(c);
    const ab = list?.pop();
    if (ab !== undefined) {
      this.counters.hits++;
      if (this.pinned.has(ab)) this.idlePinned -= c; else this.idlePageable -= c;
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
    const pinned = this.pinned.has(ab);
    // Past the limits the collector frees it (pinned: its finalizer, cuMemFreeHost).
    if (pinned ? this.idlePinned + c > this.keepBytes : this.idlePageable + c > this.keepPageable) return;
    let list = this.idle.get(c);
    if (list === undefined) { list = []; this.idle.set(c, list); }
    list.push(ab);
    if (pinned) this.idlePinned += c; else this.idlePageable += c;
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
    this.idlePinned = 0;
    this.idlePageable = 0;
  }
}

let pool: StagingPool | null = null;

/** This thread's pool: 256 MiB of idle page-locked memory kept at most, 4 GiB of plain; page-locked up to 64 MiB a buffer. */
export function staging(): StagingPool {
  return (pool ??= new StagingPool(256 << 20, 4 * 2 ** 30, 64 << 20));
}
