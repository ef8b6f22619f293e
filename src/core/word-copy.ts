// Small copies (a message of a few bytes into a ring, or out of one into the
// receive buffer) a 32-bit word at a time. V8's byte loop costs 8-18 ns for 8
// bytes out of shared memory here, with bounds checks on both arrays at every
// byte; copySmall, view lookups included, 3.5-9 (`node bench/node-facts.mjs`,
// "small copy").
//
// A word loop needs an Int32Array over each side's memory, and making one
// reads the view's `buffer` and `byteOffset`, which are calls of 10-20 ns on
// Node 20. So a cache keeps views of the last two arrays that came again
// before any other new one (blocking sends and receives reuse their
// buffers); an array seen once costs three comparisons and goes byte by
// byte. Each cache belongs to one ring or one peer, and holds up to three
// arrays' memory (two views and the last array seen once) until others
// replace them. The rings' own side needs no cache: a ring hands out its
// frame area as words (RxFrame.words).

/** Word views of recently seen byte arrays (one cache per kind of use: sources, destinations). */
export class WordViews {
  private k0: Uint8Array | null = null;
  private v0: Int32Array | null = null;
  private k1: Uint8Array | null = null;
  private v1: Int32Array | null = null;
  /** The last array seen without a view: a view is made when it comes again. */
  private once: Uint8Array | null = null;

  /** An Int32Array over u's first length/4 words, or null: u starts off a 4-byte boundary, or was seen only once. */
  of(u: Uint8Array): Int32Array | null {
    if (u === this.k0) return this.v0;
    if (u === this.k1) return this.v1;
    if (u !== this.once) { this.once = u; return null; }
    this.once = null;
    const off = u.byteOffset;
    const w = (off & 3) === 0 ? new Int32Array(u.buffer, off, u.length >> 2) : null;
    this.k1 = this.k0; this.v1 = this.v0;
    this.k0 = u; this.v0 = w;
    return w;
  }
}

/**
 * dst[d, d+len) = src[s, s+len) for small len, by words where both sides
 * have a word view (dw, sw over dst and src from their first byte) and both
 * offsets are 4-byte aligned; by bytes otherwise. A view that no longer
 * covers the range (its buffer was detached) falls back to bytes.
 */
export function copySmall(dst: Uint8Array, d: number, dw: Int32Array | null, src: Uint8Array, s: number, sw: Int32Array | null, len: number): void {
  if (dw !== null && sw !== null && ((d | s) & 3) === 0) {
    const n = len >> 2;
    const di = d >> 2, si = s >> 2;
    if (dw.length >= di + n && sw.length >= si + n) {
      for (let i = 0; i < n; i++) dw[di + i] = sw[si + i]!;
      for (let i = n << 2; i < len; i++) dst[d + i] = src[s + i]!;
      return;
    }
  }
  for (let i = 0; i < len; i++) dst[d + i] = src[s + i]!;
}
