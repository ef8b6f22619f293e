// Tag matching for one communicator context: the posted-receive queue and the
// unexpected-message queue, with MPI's rules: messages from one source match
// in arrival order, receives match in posting order, ANY_SOURCE and ANY_TAG
// are wildcards. Queues are split per source so a match scans one short list.

import { List, type Linked } from './list.js';

export const ANY_SOURCE = -1;
export const ANY_TAG = -1;
/** MPI_PROC_NULL: a peer that is no one; a send or receive naming it completes at once, moving nothing. */
export const PROC_NULL = -2;

/** A posted receive (or waiting probe). */
export interface Posted extends Linked {
  matchSrc: number;
  matchTag: number;
  /** Posting order, to choose between the per-source and the wildcard list. */
  postSeq: number;
}

/** A message that arrived before any receive matched it. */
export interface Arrived extends Linked {
  src: number;
  tag: number;
  /** Arrival order across sources, for ANY_SOURCE receives. */
  arrival: number;
}

const tagMatches = (want: number, tag: number): boolean => want === ANY_TAG || want === tag;

export class MatchQueues<P extends Posted, A extends Arrived> {
  private readonly postedBySrc: Array<List<P> | undefined> = [];
  private readonly postedAny = new List<P>();
  private readonly arrivedBySrc: Array<List<A> | undefined> = [];
  private postSeq = 0;
  private arrivalSeq = 0;
  postedCount = 0;
  arrivedCount = 0;

  /**
   * A receive is posted: returns the earliest matching unexpected message
   * (removed from the queue), or null after queueing the receive.
   */
  post(r: P): A | null {
    const m = this.findArrived(r.matchSrc, r.matchTag);
    if (m !== null) {
      this.removeArrived(m);
      return m;
    }
    r.postSeq = this.postSeq++;
    if (r.matchSrc === ANY_SOURCE) this.postedAny.push(r);
    else (this.postedBySrc[r.matchSrc] ??= new List<P>()).push(r);
    this.postedCount++;
    return null;
  }

  /** A message arrives: returns the receive it matches (removed), or null. */
  matchPosted(src: number, tag: number): P | null {
    // Most arrivals find no receive posted (it waits at the call, or comes later).
    if (this.postedCount === 0) return null;
    let best: P | null = null;
    const l = this.postedBySrc[src];
    if (l !== undefined) {
      for (let x = l.head; x !== null; x = x.next as P | null) {
        if (tagMatches(x.matchTag, tag)) { best = x; break; }
      }
    }
    for (let x = this.postedAny.head; x !== null; x = x.next as P | null) {
      if (best !== null && x.postSeq > best.postSeq) break;
      if (tagMatches(x.matchTag, tag)) { best = x; break; }
    }
    if (best !== null) this.removePosted(best);
    return best;
  }

  /** Queue a message no receive matched. */
  pushArrived(m: A): void {
    m.arrival = this.arrivalSeq++;
    (this.arrivedBySrc[m.src] ??= new List<A>()).push(m);
    this.arrivedCount++;
  }

  /** The earliest unexpected message a receive (src, tag) would match, left in place. */
  findArrived(src: number, tag: number): A | null {
    if (src !== ANY_SOURCE) {
      const l = this.arrivedBySrc[src];
      if (l === undefined) return null;
      for (let x = l.head; x !== null; x = x.next as A | null) if (tagMatches(tag, x.tag)) return x;
      return null;
    }
    let best: A | null = null;
    for (const l of this.arrivedBySrc) {
      if (l === undefined) continue;
      for (let x = l.head; x !== null; x = x.next as A | null) {
        if (best !== null && x.arrival > best.arrival) break;
        if (tagMatches(tag, x.tag)) { best = x; break; }
      }
    }
    return best;
  }

  removeArrived(m: A): void {
    const l = this.arrivedBySrc[m.src];
    if (l !== undefined && m.list === (l as unknown as List<Linked>)) { l.remove(m); this.arrivedCount--; }
  }

  /** Remove a posted receive (cancel); false if it was no longer queued. */
  removePosted(r: P): boolean {
    const l = r.matchSrc === ANY_SOURCE ? this.postedAny : this.postedBySrc[r.matchSrc];
    if (l === undefined || r.list !== (l as unknown as List<Linked>)) return false;
    l.remove(r);
    this.postedCount--;
    return true;
  }

  /** Posted receives naming `src`, plus the wildcard ones when `withAny`. */
  postedFor(src: number, withAny: boolean): P[] {
    const out: P[] = [];
    const l = this.postedBySrc[src];
    if (l !== undefined) for (const x of l) out.push(x);
    if (withAny) for (const x of this.postedAny) out.push(x);
    return out;
  }

  *allPosted(): IterableIterator<P> {
    for (const l of this.postedBySrc) if (l !== undefined) yield* l;
    yield* this.postedAny;
  }

  *allArrived(): IterableIterator<A> {
    for (const l of this.arrivedBySrc) if (l !== undefined) yield* l;
  }
}
