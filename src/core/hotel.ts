// The timer 'hotel': a timing wheel for retransmission timeouts. Guests (sent
// segments) check in with a due time and check out when ACKed, both O(1),
// through links stored in the guest itself (no allocation per check-in).

/** Intrusive links a guest carries; a guest is in at most one list at a time. */
export interface Guest {
  gNext: Guest | null;
  gPrev: Guest | null;
  /** The list the guest is in, or null. */
  gList: GuestList | null;
  /** Due time, in wheel ticks (hotel guests only). */
  gDue: number;
}

/** A doubly-linked list over the guests' own links: O(1) push, remove, shift. */
export class GuestList {
  /** Who owns the list (the hotel for its slots), so check-out knows where a guest is. */
  readonly tag: unknown;
  head: Guest | null = null;
  tail: Guest | null = null;
  size = 0;

  constructor(tag: unknown = null) {
    this.tag = tag;
  }

  push(g: Guest): void {
    g.gList = this;
    g.gNext = null;
    g.gPrev = this.tail;
    if (this.tail !== null) this.tail.gNext = g; else this.head = g;
    this.tail = g;
    this.size++;
  }

  remove(g: Guest): void {
    if (g.gList !== this) return;
    if (g.gPrev !== null) g.gPrev.gNext = g.gNext; else this.head = g.gNext;
    if (g.gNext !== null) g.gNext.gPrev = g.gPrev; else this.tail = g.gPrev;
    g.gNext = g.gPrev = null;
    g.gList = null;
    this.size--;
  }

  shift(): Guest | null {
    const g = this.head;
    if (g !== null) this.remove(g);
    return g;
  }
}

/** Receives the guests whose time has come, one call each. */
export interface Checkout {
  expired(g: Guest): void;
}

export class Hotel {
  /** Milliseconds per slot. */
  readonly tickMs: number;
  private readonly slots: GuestList[];
  private readonly mask: number;
  /** The last tick processed. */
  private tick: number;
  guests = 0;

  /** slots: a power of two; timeouts longer than slots*tickMs wrap around and wait extra rounds. */
  constructor(nowMs: number, tickMs = 1, slots = 4096) {
    if (slots <= 0 || (slots & (slots - 1)) !== 0) throw new RangeError('hotel slots must be a power of two');
    this.tickMs = tickMs;
    this.mask = slots - 1;
    this.slots = Array.from({ length: slots }, () => new GuestList(this));
    this.tick = Math.floor(nowMs / tickMs);
  }

  /** Due at dueMs (never earlier than the next tick). */
  checkIn(g: Guest, dueMs: number): void {
    const l = g.gList;
    if (l !== null) {
      l.remove(g);
      if (l.tag === this) this.guests--;
    }
    let due = Math.ceil(dueMs / this.tickMs);
    if (due <= this.tick) due = this.tick + 1;
    g.gDue = due;
    this.slots[due & this.mask]!.push(g);
    this.guests++;
  }

  /** Leave early (ACKed). A guest not in the hotel is left alone. */
  checkOut(g: Guest): boolean {
    const l = g.gList;
    if (l === null || l.tag !== this) return false;
    l.remove(g);
    this.guests--;
    return true;
  }

  /** Hand every guest due by nowMs to `out`. Cost: the ticks passed plus the guests expired. */
  advance(nowMs: number, out: Checkout): void {
    const now = Math.floor(nowMs / this.tickMs);
    if (now <= this.tick) return;
    // After a long pause (more than a whole turn of the wheel) visit each slot once.
    const from = now - this.tick > this.mask ? now - this.mask : this.tick + 1;
    for (let t = from; t <= now && this.guests > 0; t++) {
      const slot = this.slots[t & this.mask]!;
      let g = slot.head;
      while (g !== null) {
        const next = g.gNext;
        if (g.gDue <= now) {
          slot.remove(g);
          this.guests--;
          out.expired(g);
        }
        g = next;
      }
    }
    this.tick = now;
  }
}
