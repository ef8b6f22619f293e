// A single-producer single-consumer ring of frames in a SharedArrayBuffer,
// between two threads of one process (tbsm) or two processes that map the
// same /dev/shm segment (shm). Positions run freely (modulo 2^30). The
// producer publishes a frame with a release store of its length word, last;
// the consumer finds it by reading the length word at its own position (no
// shared tail to read first: a small frame costs the consumer one cache line
// from the producer's core, not two, as Open MPI's vader fast boxes). So that
// a length word is never stale, the producer zeroes the word after each frame
// before it publishes the frame: the consumer's next position reads 0 until the
// next frame is there. The consumer hands space back with a release store of the
// head (at its next look at the ring), on a line of its own (PLAIN_SYNC: plain
// stores on x86). Frames never wrap: one that does not fit before the end
// leaves a skip marker, published after the frame it skips to.

/*
 * Layout: bytes 0..127 control, then `capacity` bytes of frames.
 *   control Int32 [0]  head (consumer's position)       byte 0
 *           Int32 [8]  producer waiting for room (0/1)  byte 32 (the head's line: the
 *                      consumer reads it at every hand-back, the producer writes it rarely)
 *           Int32 [16] tail (producer's position: for a producer that attaches; the
 *                      consumer does not read it)       byte 64
 *           Int32 [28] magic, [29] version, [30] producer pid  bytes 112-123
 *             (stamped by the shm rail; tbsm leaves them zero)
 * Frame (whole 64-byte lines, frameBytes), at position & (capacity - 1):
 *   0 frame bytes u32 (0: no frame yet; SKIP: the rest of the buffer is unused)
 *   4 payload bytes u32 | 8 am id u8 | 9 zero u8 | 10 header bytes u16 | 12 zero u32
 *   16 header, padding to 8, then payload, then padding to the line
 *
 * The payload starts 8-byte aligned: V8 copies to and from shared memory at a
 * misaligned offset far slower (3.5-3.7 GB/s here against 23-29 aligned,
 * bench/node-facts.mjs).
 */
import { WordViews, copySmall } from '../../core/word-copy.js';

export const CONTROL_BYTES = 128;
export const FRAME_HEAD = 16;
const HEAD = 0;
const TAIL = 16;
const WAITING = 8;
const MAGIC = 28;
const VERSION = 29;
const OWNER = 30;
/** A frame length word that says the rest of the buffer is unused (0xffffffff as an Int32). */
const SKIP = -1;
/**
 * Positions run modulo 2^30, so that they are always small integers (V8's
 * Smis) in every build: past 2^31 a position becomes a heap number, and every
 * function that did arithmetic on it is deoptimized at once (a stall of
 * milliseconds after the first 2 GiB through a ring, bench RESULTS) and runs
 * on doubles from then on.
 */
const POS_MASK = 0x3fffffff;
/** The largest capacity: positions modulo 2^30 tell a full ring from an empty one up to half their range. */
export const RING_MAX = 2 ** 29;

/**
 * Whether plain reads and writes of shared words order themselves: on x86
 * every load is an acquire load and every store a release store (the
 * processor keeps loads in order with later loads and stores, and stores in
 * order with earlier ones), so a plain read or write does the job there. It
 * costs about 1 ns, against 5-15 for Atomics.load and Atomics.store, which
 * Node 20's V8 runs as builtin calls, Atomics.store with a locked exchange
 * (`node bench/node-facts.mjs`). V8 reads a typed-array element again each
 * time the code does (the V8 of Node 20 to 26 never hoists one out of a loop;
 * test/unit/ring.test.mjs spins on one in optimized code), which a spinning
 * consumer relies on. Other processors (arm64) reorder plain accesses, so
 * there these are the Atomics operations.
 *
 * What x86 does reorder is a store followed by a load of another word, and
 * both sleep protocols have that shape: a producer publishes a frame, then
 * reads whether the consumer sleeps (Doorbell.ring); a consumer hands back
 * its head, then reads whether the producer waits for room. A side may
 * therefore read "awake" or "not waiting" while its own store is still on
 * its way, just as the other side announces it sleeps and looks a last time.
 * The store becomes visible within nanoseconds, so a rail that goes to sleep
 * looks at its rings once more about SLEEP_RECHECK_MS later (Sleeper in
 * poll.ts; sooner when an earlier sleep's look is still pending, later on a
 * busy event loop): a wake-up can be late by that much, in that rare race,
 * but is never lost.
 */
const PLAIN_SYNC = plainSync(process.env['RAILCOMM_PLAIN_SYNC']);

/**
 * On by default on x86 under the Node versions CI runs the spinning test on
 * (test/unit/ring.test.mjs; V8 11.3, 12.4, 13.6 and 14.6 in Node 20, 22, 24
 * and 26 all read the element again on every turn of an optimized loop; a
 * plain read costs 1-1.7 ns there, Atomics.load 11-13: bench/plain-read-probe.mjs).
 * A later compiler may hoist a plain load out of a loop that stores nothing
 * to that array, as the memory model allows, so a Node not yet tested gets
 * Atomics. RAILCOMM_PLAIN_SYNC=0 or 1 decides instead (read once, when this module loads).
 */
function plainSync(setting: string | undefined): boolean {
  if (setting === '0') return false;
  if (setting === '1') return true;
  return (process.arch === 'x64' || process.arch === 'ia32') && ['20', '22', '24', '26'].includes(process.versions.node.split('.')[0]!);
}

/** An acquire load of a[i] (see PLAIN_SYNC). */
export const loadAcquire: (a: Int32Array, i: number) => number = PLAIN_SYNC ? (a, i) => a[i]! : (a, i) => Atomics.load(a, i);

/** A release store of v to a[i] (see PLAIN_SYNC): not a fence, a later load may pass it. */
const storeRelease: (a: Int32Array, i: number, v: number) => void = PLAIN_SYNC ? (a, i, v) => { a[i] = v; } : (a, i, v) => { Atomics.store(a, i, v); };

/** About how long after announcing sleep a ring rail looks at its rings again (ms; see PLAIN_SYNC). */
export const SLEEP_RECHECK_MS = 1;

const align8 = (n: number): number => (n + 7) & ~7;

/**
 * A frame's size in the ring: whole cache lines (64 bytes), so that a small
 * frame never straddles two lines (the consumer's read of it pulls one line
 * from the producer's core, not two: an 8-byte message's frame is 48 bytes,
 * and at 8-byte alignment every other one crossed a line).
 */
const frameBytes = (hdrLen: number, payLen: number): number => (FRAME_HEAD + align8(hdrLen) + payLen + 63) & ~63;

/** Where a frame's payload starts, given the frame's offset and its header length. */
export const payloadOffset = (off: number, hdrLen: number): number => off + FRAME_HEAD + align8(hdrLen);

export class Ring {
  readonly sab: SharedArrayBuffer;
  readonly capacity: number;
  private readonly ctl: Int32Array;
  /** The frame area, as a Buffer (for handlers) and a DataView. */
  readonly data: Buffer;
  readonly view: DataView;
  /** The frame area as 32-bit words: frame heads, headers and small payloads are written and read a word at a time. */
  readonly words: Int32Array;
  private readonly mask: number;
  /**
   * Each side's own position, kept here rather than read back from shared
   * memory, and the other side's as last seen: the producer looks at the
   * consumer's head again only when the ring seems full (each Atomics
   * operation costs 5 ns or more here, and reading the consumer's line pulls
   * it over from the other core). Only the producer writes the tail and only
   * the consumer the head (single producer, single consumer).
   */
  private tail: number;
  private headSeen: number;
  private head: number;
  /**
   * The head as last stored for the producer. The consumer stores it at its
   * next look at the ring (drain, peek, hasData or settle), not right after the frames it
   * freed, unless a quarter of the ring waits to be handed back: in a
   * ping-pong that store, and the look at whether the producer waits for
   * room, come after the reply is sent instead of before.
   */
  private published: number;
  /** Run when room handed back finds the producer waiting for it (its rail rings the producer). */
  onRoom: (() => void) | null = null;
  /** Word views of the buffers small payloads come from (core/word-copy.ts). */
  private readonly payloadViews = new WordViews();
  /** Word views of the header buffers frames are written from. */
  private readonly headerViews = new WordViews();

  constructor(sabOrCapacity: SharedArrayBuffer | number) {
    this.sab = typeof sabOrCapacity === 'number' ? new SharedArrayBuffer(CONTROL_BYTES + sabOrCapacity) : sabOrCapacity;
    this.capacity = this.sab.byteLength - CONTROL_BYTES;
    if (this.capacity <= 0 || (this.capacity & (this.capacity - 1)) !== 0 || this.capacity > RING_MAX) throw new Error(`ring capacity ${this.capacity} is not a power of two up to 512 MiB`);
    this.mask = this.capacity - 1;
    this.ctl = new Int32Array(this.sab, 0, 32);
    this.data = Buffer.from(this.sab, CONTROL_BYTES, this.capacity);
    this.view = new DataView(this.sab, CONTROL_BYTES, this.capacity);
    this.words = new Int32Array(this.sab, CONTROL_BYTES, this.capacity >> 2);
    this.tail = Atomics.load(this.ctl, TAIL) & POS_MASK;
    this.head = Atomics.load(this.ctl, HEAD) & POS_MASK;
    this.headSeen = this.head;
    this.published = this.head;
  }

  /** Producer, once, before announcing the ring: who wrote it and in which format. */
  stamp(magic: number, version: number, pid: number): void {
    this.ctl[OWNER] = pid;
    this.ctl[VERSION] = version;
    Atomics.store(this.ctl, MAGIC, magic);
  }

  /** Consumer: the stamp the producer wrote. */
  stampOf(): { magic: number; version: number; pid: number } {
    return { magic: Atomics.load(this.ctl, MAGIC) >>> 0, version: this.ctl[VERSION]!, pid: this.ctl[OWNER]! };
  }

  /** Producer: append a frame; false when there is no room (nothing written). */
  write(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): boolean {
    const payLen = payload === null ? 0 : payload.length;
    const need = frameBytes(hdrLen, payLen);
    let tail = this.tail;
    let off = tail & this.mask;
    const contiguous = this.capacity - off;
    if (!this.roomFor(need, this.headSeen)) {
      this.headSeen = loadAcquire(this.ctl, HEAD);
      if (!this.roomFor(need, this.headSeen)) return false;
    }
    const w = this.words;
    let skip = -1;
    if (need > contiguous) {
      skip = off >> 2;
      tail = (tail + contiguous) & POS_MASK;
      off = 0;
    }
    const f = off >> 2;
    const next = (tail + need) & POS_MASK;
    // The next frame's length word says "nothing yet" before this frame is published.
    w[(next & this.mask) >> 2] = 0;
    w[f + 1] = payLen;
    w[f + 2] = am | (hdrLen << 16);
    w[f + 3] = 0;
    if (hdrLen > 0) this.copyHeader(hdr, hdrLen, f + 4);
    if (payload !== null) {
      const p = payloadOffset(off, hdrLen);
      if (payLen <= 64) copySmall(this.data, p, w, payload, 0, payLen >= 4 ? this.payloadViews.of(payload) : null, payLen);
      else this.data.set(payload, p);
    }
    storeRelease(w, f, need);
    // The consumer, waiting at the end of the buffer, goes to the start once it reads the marker.
    if (skip >= 0) storeRelease(w, skip, SKIP);
    this.tail = next;
    storeRelease(this.ctl, TAIL, next);
    return true;
  }

  /**
   * The header into the frame at word `at`, by words (copySmall) from a
   * view of hdr: the protocol layers write every header into reusable
   * scratch buffers, which headerViews keeps views of. By bytes otherwise (a
   * header copied for a queued send, or a misaligned one).
   */
  private copyHeader(hdr: Uint8Array, hdrLen: number, at: number): void {
    copySmall(this.data, at << 2, this.words, hdr, 0, this.headerViews.of(hdr), hdrLen);
  }

  /** Producer: whether a frame with this header and payload size would be written now. */
  fits(hdrLen: number, payLen: number): boolean {
    return this.roomFor(frameBytes(hdrLen, payLen), loadAcquire(this.ctl, HEAD));
  }

  /**
   * Producer: whether a frame of `need` bytes fits at the tail with the
   * consumer at `head`: the frame, the end of the buffer it skips if it does
   * not fit there, and the word after it, which write() zeroes.
   */
  private roomFor(need: number, head: number): boolean {
    const tail = this.tail;
    const contiguous = this.capacity - (tail & this.mask);
    const total = (need > contiguous ? contiguous + need : need) + 8;
    return ((tail - head) & POS_MASK) + total <= this.capacity;
  }

  /**
   * Producer, blocked: ask the consumer to ring us once it frees space. Then
   * look again (the consumer may have freed space just before): true when
   * there is room after all (and the request is withdrawn).
   */
  waitForRoom(hdrLen: number, payLen: number): boolean {
    Atomics.store(this.ctl, WAITING, 1);
    if (this.fits(hdrLen, payLen)) { Atomics.store(this.ctl, WAITING, 0); return true; }
    return false;
  }

  /** Consumer: true when a frame is waiting (room freed before is handed back first). */
  hasData(): boolean {
    this.settle();
    return loadAcquire(this.words, (this.head & this.mask) >> 2) !== 0;
  }

  /** Consumer: hand back at once what was consumed (before this side stops looking at the ring for a while). */
  settle(): void {
    if (this.head !== this.published) this.handBack();
  }

  /**
   * Consumer: store the head, then ring the producer if it waits for room.
   * The producer stores its request (a full fence) before it looks at the
   * head, and we store the head before we look at the request. Our look may
   * pass our store on x86 (PLAIN_SYNC), so both of us may miss the other for
   * a moment; the producer's rail then finds the room when it looks again
   * before sleeping for good (Sleeper, poll.ts).
   */
  private handBack(): void {
    this.published = this.head;
    storeRelease(this.ctl, HEAD, this.head);
    if (loadAcquire(this.ctl, WAITING) !== 0) {
      Atomics.store(this.ctl, WAITING, 0);
      if (this.onRoom !== null) this.onRoom();
    }
  }

  /**
   * Consumer: the frame at the head, without taking it: its offset into
   * `data` (read its parts with frameAm, frameHeaderLength,
   * framePayloadLength), or -1 when none waits. Throws on a corrupt frame, as drain does.
   */
  peek(): number {
    this.settle();
    const w = this.words;
    for (;;) {
      const head = this.head;
      const off = head & this.mask;
      const len = loadAcquire(w, off >> 2);
      if (len === 0) return -1;
      if (len === SKIP) { this.head = (head + (this.capacity - off)) & POS_MASK; continue; }
      if (len < FRAME_HEAD || (len & 7) !== 0 || len > this.capacity - off) {
        throw new Error(`corrupt ring frame: length ${len >>> 0} at offset ${off}`);
      }
      return off;
    }
  }

  frameAm(off: number): number { return this.words[(off >> 2) + 2]! & 0xff; }
  frameHeaderLength(off: number): number { return this.words[(off >> 2) + 2]! >>> 16; }
  framePayloadLength(off: number): number { return this.words[(off >> 2) + 1]! >>> 0; }

  /** Consumer: free the frame peek returned (the caller consumed it). */
  take(off: number): void {
    const head = (this.head + this.words[off >> 2]!) & POS_MASK;
    this.head = head;
    if (((head - this.published) & POS_MASK) >= this.capacity >>> 2) this.handBack();
  }

  /**
   * Consumer: call visit(am, offset, hdrLen, payLen) for each waiting frame
   * (offsets into `data`), freeing each after the visit; returns how many.
   * `max` bounds one call so that a busy ring cannot starve the others.
   */
  drain(visit: (am: number, off: number, hdrLen: number, payLen: number) => void, max = 64): number {
    this.settle();
    let head = this.head;
    const w = this.words;
    let n = 0;
    while (n < max) {
      const off = head & this.mask;
      const f = off >> 2;
      const len = loadAcquire(w, f);
      if (len === 0) break;
      if (len === SKIP) { head = (head + (this.capacity - off)) & POS_MASK; continue; }
      if (len < FRAME_HEAD || (len & 7) !== 0 || len > this.capacity - off) {
        throw new Error(`corrupt ring frame: length ${len >>> 0} at offset ${off}`);
      }
      const amAndHdr = w[f + 2]!;
      visit(amAndHdr & 0xff, off, amAndHdr >>> 16, w[f + 1]! >>> 0);
      head = (head + len) & POS_MASK;
      this.head = head;
      n++;
    }
    this.head = head;
    if (((head - this.published) & POS_MASK) >= this.capacity >>> 2) this.handBack();
    return n;
  }
}

/**
 * A rank's doorbell: [0] rings, [1] asleep. A sender rings only when the
 * receiver said it sleeps; the receiver says so (a full fence), then looks at
 * its rings once more before waiting, and again a moment later (SLEEP_RECHECK_MS): the
 * sender's read of [1] may pass its store of the frame's length word (PLAIN_SYNC),
 * so a frame written just then can be missed by the first look, never by
 * the second. Across processes Atomics.notify reaches nobody, so
 * the shm rail passes `notify` (a futex wake through the addon) and waits
 * with its own waiter instead of waitAsync.
 */
export class Doorbell {
  readonly sab: SharedArrayBuffer;
  readonly byteOffset: number;
  private readonly a: Int32Array;
  private readonly notify: ((sab: SharedArrayBuffer, byteOffset: number) => unknown) | null;

  constructor(sab?: SharedArrayBuffer, byteOffset = 0, notify: ((sab: SharedArrayBuffer, byteOffset: number) => unknown) | null = null) {
    this.sab = sab ?? new SharedArrayBuffer(64);
    this.byteOffset = byteOffset;
    this.a = new Int32Array(this.sab, byteOffset, 2);
    this.notify = notify;
  }

  /** Sender side, after writing a frame. */
  ring(): void {
    // (This read may pass the caller's store of its frame: see PLAIN_SYNC.)
    if (loadAcquire(this.a, 1) !== 0) {
      Atomics.store(this.a, 1, 0);
      Atomics.add(this.a, 0, 1);
      if (this.notify !== null) this.notify(this.sab, this.byteOffset);
      else Atomics.notify(this.a, 0);
    }
  }

  /** Receiver side: announce sleep; returns the ring count to wait on. */
  prepareSleep(): number {
    Atomics.store(this.a, 1, 1);
    return Atomics.load(this.a, 0);
  }

  cancelSleep(): void {
    Atomics.store(this.a, 1, 0);
  }

  /** Resolves when rung (or at once if it already was since `seen`); threads of one process only. */
  waitAsync(seen: number): Promise<unknown> {
    const r = Atomics.waitAsync(this.a, 0, seen);
    return r.async ? r.value : Promise.resolve(r.value);
  }
}
