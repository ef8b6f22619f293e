// Collectives through shared memory, for a communicator whose ranks all map
// one segment (worker threads of one process, or processes of one host). Each
// rank has two slots, and a flag on its own cache line beside two boxes for
// tiny reductions. A round (one slot-sized piece of one collective) uses the
// slots (or boxes) of its parity, in one or two phases (shared-phase.ts: every
// rank raises its flag, then waits for all). Round k+2 reuses round k's
// slots, and nobody writes them before passing a phase of round k+1, which
// every rank enters only after it finished reading round k: two slots suffice
// and no extra handshake is needed between calls. Reductions combine operands
// in rank order with one kernel, or each block is reduced by one rank only and
// copied by the others: every rank gets the same bits. With more ranks than
// RAILCOMM_COLL_SHARED_FLAT (leader phases), a small reduction is combined
// once, by rank 0 between gathering and releasing the phase, and the others
// copy its result: each rank reads one line or slot instead of p. The
// synchronous calls (barrierSync, ...) run the same rounds with phases that
// block at the call. Whose turn it is (one collective at a time, the queue,
// attaching, synchronous calls) is shared-turns.ts.

import { RailcommError, ErrorCode } from '../../core/errors.js';
import { builtInOf, kernelOf, type ReduceOp, type ReduceArray } from './ops.js';
import { copyInto, type Kernel } from '../../native/kernels.js';
import { copyElements } from '../../native/copy.js';
import { LINE } from './shared-phase.js';
import { SharedTurns } from './shared-turns.js';

export type { SharedHost } from './shared-host-api.js';

/**
 * Reductions of up to this many bytes travel in the sender's flag line (two
 * boxes, one per round parity, after the 8-byte flag word): a peer reading the
 * flag has the data in the same cache-line transfer. Saves one cross-core miss
 * of the three an 8-byte allreduce costs (about 0.1 us of 0.5).
 */
const BOX = 24;
const BOX_OFF = 8;

const DONE = Promise.resolve();

export class SharedCollectives extends SharedTurns {
  /** Rounds so far: the parity of the next one picks the slots. */
  private round = 0;

  /**
   * run(c, () => reduce(send, recv, op, -1)) for an idle communicator,
   * without the closures: a blocking allreduce's whole path (the plan and its
   * closures were a third of an 8-byte allreduce, 0.15 of 0.45 us).
   */
  allreduceNow(send: ReduceArray, recv: ReduceArray, op: ReduceOp): Promise<void> {
    let w: Promise<void> | null;
    try { w = this.reduce(send, recv, op, -1); } catch (e) { return Promise.reject(e); }
    return w === null ? DONE : this.hold(w);
  }

  /** Byte offset in the segment of rank r's slot for round k. */
  private slotOffset(r: number, k: number): number {
    return this.dataOff + ((k & 1) * this.size + r) * this.host.slotBytes;
  }

  /** The same in the segment's buffer (for views over it). */
  private slot(r: number, k: number): number {
    return this.seg!.byteOffset + this.slotOffset(r, k);
  }

  private nextRound(): number {
    return (this.round = (this.round + 1) | 0);
  }

  /** Views of every slot, then of every box, for one element type, made once (4 * size of them). */
  private readonly views = new Map<unknown, ReduceArray[]>();
  /** The last type's views: a program reduces one type again and again (a Map lookup was 1/5 of an 8-byte call). */
  private lastCtor: unknown = null;
  private lastViews: ReduceArray[] = [];

  /** Rank r's slot (or box) for round k, as elements like `like` (all of it; use the first n). */
  private view(like: ReduceArray, r: number, k: number, box = false): ReduceArray {
    const v = like.constructor === this.lastCtor ? this.lastViews : this.viewsOf(like);
    return v[(box ? 2 * this.size : 0) + (k & 1) * this.size + r]!;
  }

  /** Where the leader leaves a small reduction's result for round k: its release box, or its own slot (combined in place). */
  private resultView(like: ReduceArray, k: number, box: boolean): ReduceArray {
    if (!box) return this.view(like, 0, k);
    const v = like.constructor === this.lastCtor ? this.lastViews : this.viewsOf(like);
    return v[4 * this.size + (k & 1)]!;
  }

  private viewsOf(like: ReduceArray): ReduceArray[] {
    const C = builtInOf(like);
    let v = this.views.get(C);
    if (v === undefined) {
      v = [];
      const el = like.BYTES_PER_ELEMENT, buf = this.seg!.buffer, base = this.seg!.byteOffset;
      for (let ph = 0; ph < 2; ph++) for (let q = 0; q < this.size; q++) v.push(new C(buf, this.slot(q, ph), Math.floor(this.host.slotBytes / el)));
      for (let ph = 0; ph < 2; ph++) for (let q = 0; q < this.size; q++) v.push(new C(buf, base + (q + 1) * LINE + BOX_OFF + ph * BOX, BOX / el));
      // The release line's two boxes (leader phases: rank 0's result of a small reduction).
      for (let ph = 0; ph < 2; ph++) v.push(new C(buf, base + (this.size + 1) * LINE + BOX_OFF + ph * BOX, BOX / el));
      this.views.set(C, v);
    }
    this.lastCtor = like.constructor;
    this.lastViews = v;
    return v;
  }

  /** One phase with nothing to exchange. */
  barrier(): Promise<void> | null {
    return this.phases!.next();
  }

  /** root's bytes to everyone, a slot at a time; null when no phase had to wait. */
  bcast(bytes: Uint8Array, root: number): Promise<void> | null {
    return this.bcastFrom(bytes, root, 0);
  }

  private bcastFrom(bytes: Uint8Array, root: number, off: number): Promise<void> | null {
    const slot = this.host.slotBytes;
    // length, not byteLength (a call on Node 20, core/bytes.ts).
    const len = bytes.length;
    for (; off < len || off === 0; off += slot) {
      const n = Math.min(slot, len - off);
      const k = this.nextRound();
      // No view per round, and the addon's memmove for long pieces (native/copy.ts).
      const at = this.slotOffset(root, k);
      if (this.rank === root) copyElements(this.seg!, at, bytes, off, n);
      const w = this.phases!.next();
      if (w !== null) return this.bcastAfter(w, bytes, root, off, at, n);
      if (this.rank !== root) copyElements(bytes, off, this.seg!, at, n);
      if (len === 0) break;
    }
    return null;
  }

  private bcastAfter(w: Promise<void>, bytes: Uint8Array, root: number, off: number, at: number, n: number): Promise<void> {
    return this.steps.after(w, () => {
      if (this.rank !== root) copyElements(bytes, off, this.seg!, at, n);
      return bytes.length === 0 ? null : this.bcastFrom(bytes, root, off + this.host.slotBytes);
    });
  }

  /** Reduce send into recv on every rank (allreduce) or on root only (reduce, root >= 0). */
  reduce(send: ReduceArray, recv: ReduceArray | null, op: ReduceOp, root: number): Promise<void> | null {
    const per = Math.max(1, Math.floor(this.host.slotBytes / send.BYTES_PER_ELEMENT));
    const total = send.length;
    const out = root < 0 || root === this.rank ? recv : null;
    const k = kernelOf(op, send);
    // Every rank takes the same branch: it depends only on the call's arguments and parameters.
    const split = total * send.BYTES_PER_ELEMENT >= this.host.splitBytes;
    if (!split && total <= per) return this.reduceWhole(k, send, out, 0, total);
    return this.rounds(k, send, out, per, split, 0);
  }

  /**
   * The rounds from element `at` on, without a promise while no phase has to
   * wait (each async step allocates, and young-generation collections every
   * few hundred calls stalled both ranks for milliseconds).
   */
  private rounds(k: Kernel, send: ReduceArray, out: ReduceArray | null, per: number, split: boolean, at: number): Promise<void> | null {
    const total = send.length;
    for (; at < total || at === 0; at += per) {
      const n = Math.min(per, total - at);
      const w = split ? this.reduceSplit(k, send, out, at, n) : this.reduceWhole(k, send, out, at, n);
      if (w !== null) return this.roundsAfter(w, k, send, out, per, split, at);
      if (total === 0) break;
    }
    return null;
  }

  private roundsAfter(w: Promise<void>, k: Kernel, send: ReduceArray, out: ReduceArray | null, per: number, split: boolean, at: number): Promise<void> {
    return this.steps.after(w, () => (send.length === 0 ? null : this.rounds(k, send, out, per, split, at + per)));
  }

  /**
   * One round: every rank publishes its elements [at, at+n), then reduces all
   * of them in rank order. One phase; for small vectors, where a second phase
   * would cost more than the duplicated arithmetic.
   */
  private reduceWhole(k: Kernel, send: ReduceArray, out: ReduceArray | null, at: number, n: number): Promise<void> | null {
    const round = this.nextRound();
    const box = n * send.BYTES_PER_ELEMENT <= BOX;
    copyInto(this.view(send, this.rank, round, box), 0, send, at, n);
    const phases = this.phases!;
    if (!phases.flat) return this.reduceByLeader(k, send, out, at, n, round, box);
    const w = phases.next();
    if (w !== null) return this.combineAfter(w, k, send, out, at, n, round, box);
    this.combineAll(k, send, out, at, n, round, box);
    return null;
  }

  /**
   * reduceWhole with leader phases: rank 0, once all arrived, combines every
   * operand in rank order into its result area (the release box, or its own
   * slot in place) and releases; the others copy the result. Each rank reads
   * one line or slot, rank 0 reads p. Reuse is safe as in the flat case: rank
   * 0 writes round k+2's result only once all arrived at k+2, after they read k.
   */
  private reduceByLeader(k: Kernel, send: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number, box: boolean): Promise<void> | null {
    const phases = this.phases!;
    const s = phases.arrive();
    if (this.rank === 0) {
      const w = phases.gather(s);
      if (w !== null) return this.leaderAfter(w, k, send, out, at, n, round, box, s);
      this.leaderCombine(k, send, out, at, n, round, box, s);
      return null;
    }
    const w = phases.released(s);
    if (w !== null) return this.followerAfter(w, send, out, at, n, round, box);
    if (out !== null) copyInto(out, at, this.resultView(send, round, box), 0, n);
    return null;
  }

  private leaderAfter(w: Promise<void>, k: Kernel, like: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number, box: boolean, s: number): Promise<void> {
    return this.steps.after(w, () => { this.leaderCombine(k, like, out, at, n, round, box, s); return null; });
  }

  private leaderCombine(k: Kernel, like: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number, box: boolean, s: number): void {
    const res = this.resultView(like, round, box);
    if (n > 0) {
      k(res, 0, this.view(like, 0, round, box), 0, this.view(like, 1, round, box), 0, n);
      for (let r = 2; r < this.size; r++) k(res, 0, res, 0, this.view(like, r, round, box), 0, n);
    }
    this.phases!.release(s);
    if (out !== null) copyInto(out, at, res, 0, n);
  }

  private followerAfter(w: Promise<void>, like: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number, box: boolean): Promise<void> {
    return this.steps.after(w, () => {
      if (out !== null) copyInto(out, at, this.resultView(like, round, box), 0, n);
      return null;
    });
  }

  /** Not a closure in reduceWhole: V8 would allocate its context on every call, waiting or not. */
  private combineAfter(w: Promise<void>, k: Kernel, like: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number, box: boolean): Promise<void> {
    return this.steps.after(w, () => { this.combineAll(k, like, out, at, n, round, box); return null; });
  }

  private combineAll(k: Kernel, like: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number, box: boolean): void {
    if (out === null || n === 0) return;
    // Operands all come from the slots, never from send: send may be recv itself.
    k(out, at, this.view(like, 0, round, box), 0, this.view(like, 1, round, box), 0, n);
    for (let r = 2; r < this.size; r++) k(out, at, out, at, this.view(like, r, round, box), 0, n);
  }

  /**
   * One round in two phases: every rank publishes its elements [at, at+n)
   * except its own block, reduces its block (its own operand straight from
   * send) into that block of its slot, and after the second phase copies
   * every block out. Each rank does 1/p of the arithmetic. Rank r's block
   * starts at r*q + min(r, e) and holds q (+1 for r < e) elements, q = n/p, e = n%p.
   * Null when neither phase had to wait.
   */
  private reduceSplit(k: Kernel, send: ReduceArray, out: ReduceArray | null, at: number, n: number): Promise<void> | null {
    const round = this.nextRound(), me = this.rank, p = this.size;
    const q = Math.floor(n / p), e = n % p;
    const b0 = me * q + Math.min(me, e), bn = q + (me < e ? 1 : 0);
    const mine = this.view(send, me, round);
    copyInto(mine, 0, send, at, b0);
    copyInto(mine, b0 + bn, send, at + b0 + bn, n - b0 - bn);
    const w = this.phases!.next();
    if (w !== null) return this.splitAfter(w, k, send, out, at, n, round);
    return this.splitBlock(k, send, out, at, n, round);
  }

  private splitAfter(w: Promise<void>, k: Kernel, send: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number): Promise<void> {
    return this.steps.after(w, () => this.splitBlock(k, send, out, at, n, round));
  }

  /** Second half of a split round: reduce this rank's block, second phase, copy out. */
  private splitBlock(k: Kernel, send: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number): Promise<void> | null {
    const me = this.rank, p = this.size;
    const q = Math.floor(n / p), e = n % p;
    const b0 = me * q + Math.min(me, e), bn = q + (me < e ? 1 : 0);
    const mine = this.view(send, me, round);
    if (bn > 0) {
      // Rank 0's operand first, then each rank's in order; this rank's own straight from send.
      if (me === 0) k(mine, b0, send, at + b0, this.view(send, 1, round), b0, bn);
      else k(mine, b0, this.view(send, 0, round), b0, me === 1 ? send : this.view(send, 1, round), me === 1 ? at + b0 : b0, bn);
      for (let r = 2; r < p; r++) k(mine, b0, mine, b0, r === me ? send : this.view(send, r, round), r === me ? at + b0 : b0, bn);
    }
    // Send is not read after this phase, so recv may alias it.
    const w = this.phases!.next();
    if (w !== null) return this.copyOutAfter(w, send, out, at, n, round);
    this.copyOut(send, out, at, n, round);
    return null;
  }

  private copyOutAfter(w: Promise<void>, like: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number): Promise<void> {
    return this.steps.after(w, () => { this.copyOut(like, out, at, n, round); return null; });
  }

  private copyOut(like: ReduceArray, out: ReduceArray | null, at: number, n: number, round: number): void {
    if (out === null) return;
    const p = this.size, q = Math.floor(n / p), e = n % p;
    for (let r = 0; r < p; r++) {
      const c0 = r * q + Math.min(r, e);
      copyInto(out, at + c0, this.view(like, r, round), c0, q + (r < e ? 1 : 0));
    }
  }

  /**
   * Every rank's few numbers (words.length doubles, within a slot) into
   * `all` in rank order, without a promise while the phase need not wait:
   * RAILCOMM_CHECK's agreement runs before every collective.
   */
  exchangeWords(words: readonly number[], all: Float64Array): Promise<void> | null {
    const n = words.length;
    const k = this.nextRound();
    const mine = this.view(all, this.rank, k);
    for (let i = 0; i < n; i++) mine[i] = words[i]!;
    const w = this.phases!.next();
    if (w !== null) return this.wordsAfter(w, all, n, k);
    this.wordsOut(all, n, k);
    return null;
  }

  private wordsAfter(w: Promise<void>, all: Float64Array, n: number, k: number): Promise<void> {
    return this.steps.after(w, () => { this.wordsOut(all, n, k); return null; });
  }

  private wordsOut(all: Float64Array, n: number, k: number): void {
    for (let r = 0; r < this.size; r++) copyInto(all, r * n, this.view(all, r, k), 0, n);
  }

  /** Every rank's send (equal lengths) into recv in rank order; null when no phase had to wait. */
  allgather(send: ReduceArray, recv: ReduceArray): Promise<void> | null {
    return this.allgatherFrom(send, recv, 0);
  }

  private allgatherFrom(send: ReduceArray, recv: ReduceArray, at: number): Promise<void> | null {
    const per = Math.max(1, Math.floor(this.host.slotBytes / send.BYTES_PER_ELEMENT));
    const len = send.length;
    for (; at < len || at === 0; at += per) {
      const n = Math.min(per, len - at);
      const k = this.nextRound();
      copyInto(this.view(send, this.rank, k), 0, send, at, n);
      const w = this.phases!.next();
      if (w !== null) return this.allgatherAfter(w, send, recv, at, n, k);
      this.gatherOut(send, recv, at, n, k);
      if (len === 0) break;
    }
    return null;
  }

  private allgatherAfter(w: Promise<void>, send: ReduceArray, recv: ReduceArray, at: number, n: number, k: number): Promise<void> {
    return this.steps.after(w, () => {
      this.gatherOut(send, recv, at, n, k);
      if (send.length === 0) return null;
      const per = Math.max(1, Math.floor(this.host.slotBytes / send.BYTES_PER_ELEMENT));
      return this.allgatherFrom(send, recv, at + per);
    });
  }

  private gatherOut(like: ReduceArray, recv: ReduceArray, at: number, n: number, k: number): void {
    const len = like.length;
    for (let r = 0; r < this.size; r++) copyInto(recv, r * len + at, this.view(like, r, k), 0, n);
  }
}

export function peerFailedError(rank: number, cause: RailcommError): RailcommError {
  return new RailcommError(ErrorCode.PEER_FAILED, `a shared-memory collective cannot finish: rank ${rank} failed`, { cause });
}
