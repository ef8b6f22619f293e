// The collective operations of a communicator: argument checks (thrown at the
// call, before any traffic), the choice of algorithm by size and communicator
// size, and the nonblocking form (a Request that completes when the
// algorithm does). Every rank must call collectives in the same order.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { describe } from '../core/bytes.js';
import type { Params } from '../core/params.js';
import type { Logger } from '../core/log.js';
import { checkOp, isReduceArray, type Op, type ReduceArray } from './coll/ops.js';
import { barrierDissemination, type CollComm } from './coll/engine.js';
import { bcastBinomial, gatherBinomial, gatherDirect, reduceBinomial, scatterDirect } from './coll/tree.js';
import { allreduceRecursiveDoubling, allreduceRing, reduceScatterRing } from './coll/allreduce.js';
import { allgatherBruck, allgatherRing } from './coll/allgather.js';
import { alltoallv } from './coll/alltoall.js';
import { scanChain } from './coll/scan.js';
import type { SharedCollectives } from './coll/shared.js';

const invalid = (m: string): RailcommError => new RailcommError(ErrorCode.INVALID_ARG, m);

export function checkArray(v: unknown, what: string): ReduceArray {
  if (!isReduceArray(v)) throw invalid(`${what} must be a typed array (Float64Array, Int32Array, ...), got ${describe(v)}`);
  return v;
}

function sameType(a: ReduceArray, b: ReduceArray, what: string): void {
  if (a.constructor !== b.constructor) throw invalid(`${what}: send is ${a.constructor.name} but recv is ${b.constructor.name}; use one element type`);
}

function checkRoot(root: unknown, size: number, what: string): number {
  if (typeof root !== 'number' || !Number.isInteger(root) || root < 0 || root >= size) {
    throw new RailcommError(ErrorCode.RANK, `${what}: root ${String(root)} is not a rank of this communicator (0..${size - 1})`);
  }
  return root;
}

export function checkCounts(counts: unknown, size: number, what: string): number[] {
  if (!Array.isArray(counts) && !ArrayBuffer.isView(counts)) throw invalid(`${what}: counts must be an array of ${size} element counts`);
  const list = Array.from(counts as ArrayLike<number>);
  if (list.length !== size || list.some((x) => typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0)) {
    throw invalid(`${what}: counts must hold ${size} non-negative integers (one per rank), got [${list.join(', ')}]`);
  }
  return list;
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

/** One collective algorithm run, with what PROTO_INFO prints. */
export interface CollPlan {
  name: string;
  algorithm: string;
  run: (c: CollComm) => Promise<void>;
  /** Runs through shared memory: a blocking call needs no Request (and no progress passes). */
  shared?: boolean;
}

export class CollectivePlanner {
  private readonly size: number;
  private readonly rank: number;
  private readonly params: Params;
  private readonly log: Logger | null;
  private readonly announced = new Set<string>();
  /** The shared-memory path, when every rank of the communicator maps one segment. */
  shared: SharedCollectives | null = null;

  constructor(rank: number, size: number, params: Params, log: Logger | null) {
    this.rank = rank;
    this.size = size;
    this.params = params;
    this.log = params.protoInfo ? log : null;
  }

  /** With RAILCOMM_PROTO_INFO, say once per collective which algorithm ran. */
  announce(plan: CollPlan): void {
    if (this.log === null) return;
    const k = `${plan.name}/${plan.algorithm}`;
    if (this.announced.has(k)) return;
    this.announced.add(k);
    process.stderr.write(`[railcomm ${this.rank}] ${plan.name} on ${this.size} ranks: ${plan.algorithm}\n`);
  }

  /** The shared path for a collective moving `bytes` per rank, if it applies. */
  private viaShared(bytes: number): SharedCollectives | null {
    return this.shared !== null && this.size > 1 && bytes <= this.params.collSharedMax ? this.shared : null;
  }

  barrier(): CollPlan {
    const sh = this.viaShared(0);
    if (sh !== null) return { name: 'barrier', algorithm: 'shared memory', shared: true, run: (c) => sh.run(c, () => sh.barrier()) };
    return { name: 'barrier', algorithm: 'dissemination', run: barrierDissemination };
  }


  bcast(buf: unknown, root: unknown): CollPlan {
    if (!ArrayBuffer.isView(buf)) throw invalid(`bcast: buf must be an ArrayBufferView, got ${describe(buf)}`);
    const rt = checkRoot(root, this.size, 'bcast');
    const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    const sh = this.viaShared(bytes.length);
    if (sh !== null) return { name: 'bcast', algorithm: 'shared memory', shared: true, run: (c) => sh.run(c, () => sh.bcast(bytes, rt)) };
    return { name: 'bcast', algorithm: 'binomial tree', run: (c) => bcastBinomial(c, bytes, rt) };
  }

  reduce(send: unknown, recv: unknown, op: unknown, root: unknown): CollPlan {
    const s = checkArray(send, 'reduce send');
    const rt = checkRoot(root, this.size, 'reduce');
    const o = checkOp(op, s, 'reduce');
    let r: ReduceArray | null = null;
    if (this.rank === rt || (recv !== null && recv !== undefined)) {
      r = checkArray(recv, 'reduce recv');
      sameType(s, r, 'reduce');
      if (r.length !== s.length) throw invalid(`reduce: recv has ${r.length} elements, send has ${s.length}; they must match`);
    }
    const sh = this.viaShared(s.byteLength);
    if (sh !== null) return { name: 'reduce', algorithm: 'shared memory', shared: true, run: (c) => sh.run(c, () => sh.reduce(s, this.rank === rt ? r : null, o, rt)) };
    return { name: 'reduce', algorithm: 'binomial tree', run: (c) => reduceBinomial(c, s, this.rank === rt ? r : null, o, rt) };
  }

  /** Argument checks of allreduce (thrown at the call); the op, checked against the element type. */
  private checkAllreduce(send: unknown, recv: unknown, op: unknown, what: string): Op {
    // Messages are built only for a bad argument: a string per call was garbage on the fast path.
    const s = isReduceArray(send) ? send : checkArray(send, `${what} send`);
    const r = isReduceArray(recv) ? recv : checkArray(recv, `${what} recv`);
    sameType(s, r, what);
    const o: Op = checkOp(op, s, what);
    if (r.length !== s.length) throw invalid(`${what}: recv has ${r.length} elements, send has ${s.length}; they must match`);
    return o;
  }

  /**
   * A blocking allreduce started at once through shared memory, when that
   * path applies and is idle (no plan built); undefined otherwise, and with
   * RAILCOMM_PROTO_INFO (the general path says which algorithm ran).
   */
  allreduceNow(send: unknown, recv: unknown, op: unknown): Promise<void> | undefined {
    const sh = this.shared;
    if (sh === null || !sh.idle || this.log !== null) return undefined;
    const o = this.checkAllreduce(send, recv, op, 'allreduce');
    const s = send as ReduceArray;
    // length * element size: byteLength is a call of 10-20 ns on Node 20 (core/bytes.ts).
    if (this.viaShared(s.length * s.BYTES_PER_ELEMENT) === null) return undefined;
    return sh.allreduceNow(s, recv as ReduceArray, o);
  }

  allreduce(send: unknown, recv: unknown, op: unknown, what = 'allreduce'): CollPlan {
    const o = this.checkAllreduce(send, recv, op, what);
    const s = send as ReduceArray, r = recv as ReduceArray;
    const bytes = s.length * s.BYTES_PER_ELEMENT;
    const sh = this.viaShared(bytes);
    if (sh !== null) return { name: what, algorithm: 'shared memory', shared: true, run: (c) => sh.run(c, () => sh.reduce(s, r, o, -1)) };
    if (bytes >= this.params.collAllreduceRing && s.length >= this.size && this.size > 1) {
      return { name: what, algorithm: 'ring reduce-scatter + ring allgather', run: (c) => allreduceRing(c, s, r, o) };
    }
    return { name: what, algorithm: 'recursive doubling', run: (c) => allreduceRecursiveDoubling(c, s, r, o) };
  }

  gather(send: unknown, recv: unknown, root: unknown): CollPlan {
    const s = checkArray(send, 'gather send');
    const rt = checkRoot(root, this.size, 'gather');
    let r: ReduceArray | null = null;
    if (this.rank === rt) {
      r = checkArray(recv, 'gather recv');
      sameType(s, r, 'gather');
      if (r.length !== s.length * this.size) throw invalid(`gather: recv at the root needs ${s.length * this.size} elements (${this.size} x ${s.length}), has ${r.length}`);
    }
    if (s.byteLength <= this.params.collGatherBinomial) return { name: 'gather', algorithm: 'binomial tree', run: (c) => gatherBinomial(c, s, r, rt) };
    return { name: 'gather', algorithm: 'direct to root', run: (c) => gatherDirect(c, s, r, rt) };
  }

  gatherv(send: unknown, recv: unknown, counts: unknown, root: unknown): CollPlan {
    const s = checkArray(send, 'gatherv send');
    const rt = checkRoot(root, this.size, 'gatherv');
    const cnt = checkCounts(counts, this.size, 'gatherv');
    if (cnt[this.rank] !== s.length) throw invalid(`gatherv: counts[${this.rank}] is ${cnt[this.rank]} but this rank sends ${s.length} elements`);
    let r: ReduceArray | null = null;
    if (this.rank === rt) {
      r = checkArray(recv, 'gatherv recv');
      sameType(s, r, 'gatherv');
      if (r.length < sum(cnt)) throw invalid(`gatherv: recv at the root has ${r.length} elements, counts add up to ${sum(cnt)}`);
    }
    return { name: 'gatherv', algorithm: 'direct to root', run: (c) => gatherDirect(c, s, r, rt, cnt) };
  }

  scatter(send: unknown, recv: unknown, root: unknown): CollPlan {
    const r = checkArray(recv, 'scatter recv');
    const rt = checkRoot(root, this.size, 'scatter');
    let s: ReduceArray | null = null;
    if (this.rank === rt) {
      s = checkArray(send, 'scatter send');
      sameType(s, r, 'scatter');
      if (s.length !== r.length * this.size) throw invalid(`scatter: send at the root needs ${r.length * this.size} elements (${this.size} x ${r.length}), has ${s.length}`);
    }
    return { name: 'scatter', algorithm: 'direct from root', run: (c) => scatterDirect(c, s, r, rt) };
  }

  scatterv(send: unknown, counts: unknown, recv: unknown, root: unknown): CollPlan {
    const r = checkArray(recv, 'scatterv recv');
    const rt = checkRoot(root, this.size, 'scatterv');
    const cnt = checkCounts(counts, this.size, 'scatterv');
    if (r.length < cnt[this.rank]!) throw invalid(`scatterv: recv has ${r.length} elements but counts[${this.rank}] is ${cnt[this.rank]}`);
    let s: ReduceArray | null = null;
    if (this.rank === rt) {
      s = checkArray(send, 'scatterv send');
      sameType(s, r, 'scatterv');
      if (s.length < sum(cnt)) throw invalid(`scatterv: send at the root has ${s.length} elements, counts add up to ${sum(cnt)}`);
    }
    const mine = r.subarray(0, cnt[this.rank]!) as ReduceArray;
    return { name: 'scatterv', algorithm: 'direct from root', run: (c) => scatterDirect(c, s, mine, rt, cnt) };
  }

  allgather(send: unknown, recv: unknown): CollPlan {
    const s = checkArray(send, 'allgather send');
    const r = checkArray(recv, 'allgather recv');
    sameType(s, r, 'allgather');
    if (r.length !== s.length * this.size) throw invalid(`allgather: recv needs ${s.length * this.size} elements (${this.size} x ${s.length}), has ${r.length}`);
    const sh = this.viaShared(s.byteLength);
    if (sh !== null) return { name: 'allgather', algorithm: 'shared memory', shared: true, run: (c) => sh.run(c, () => sh.allgather(s, r)) };
    if (r.byteLength >= this.params.collAllgatherRing) {
      const counts = new Array<number>(this.size).fill(s.length);
      return { name: 'allgather', algorithm: 'ring', run: (c) => allgatherRing(c, s, r, counts) };
    }
    return { name: 'allgather', algorithm: 'Bruck', run: (c) => allgatherBruck(c, s, r) };
  }

  allgatherv(send: unknown, recv: unknown, counts: unknown): CollPlan {
    const s = checkArray(send, 'allgatherv send');
    const r = checkArray(recv, 'allgatherv recv');
    sameType(s, r, 'allgatherv');
    const cnt = checkCounts(counts, this.size, 'allgatherv');
    if (cnt[this.rank] !== s.length) throw invalid(`allgatherv: counts[${this.rank}] is ${cnt[this.rank]} but this rank sends ${s.length} elements`);
    if (r.length < sum(cnt)) throw invalid(`allgatherv: recv has ${r.length} elements, counts add up to ${sum(cnt)}`);
    return { name: 'allgatherv', algorithm: 'ring', run: (c) => allgatherRing(c, s, r, cnt) };
  }

  alltoall(send: unknown, recv: unknown): CollPlan {
    const s = checkArray(send, 'alltoall send');
    const r = checkArray(recv, 'alltoall recv');
    sameType(s, r, 'alltoall');
    if (s.length % this.size !== 0 || r.length !== s.length) throw invalid(`alltoall: send and recv must both hold ${this.size} equal blocks (lengths ${s.length} and ${r.length})`);
    const blk = s.length / this.size;
    const counts = new Array<number>(this.size).fill(blk);
    const pairwise = blk * s.BYTES_PER_ELEMENT >= this.params.collAlltoallPairwise;
    return { name: 'alltoall', algorithm: pairwise ? 'pairwise exchange' : 'all exchanges at once', run: (c) => alltoallv(c, s, counts, r, counts, pairwise) };
  }

  alltoallv(send: unknown, sendCounts: unknown, recv: unknown, recvCounts: unknown): CollPlan {
    const s = checkArray(send, 'alltoallv send');
    const r = checkArray(recv, 'alltoallv recv');
    sameType(s, r, 'alltoallv');
    const sc = checkCounts(sendCounts, this.size, 'alltoallv sendCounts');
    const rc = checkCounts(recvCounts, this.size, 'alltoallv recvCounts');
    if (s.length < sum(sc)) throw invalid(`alltoallv: send has ${s.length} elements, sendCounts add up to ${sum(sc)}`);
    if (r.length < sum(rc)) throw invalid(`alltoallv: recv has ${r.length} elements, recvCounts add up to ${sum(rc)}`);
    const pairwise = Math.max(...sc) * s.BYTES_PER_ELEMENT >= this.params.collAlltoallPairwise;
    return { name: 'alltoallv', algorithm: pairwise ? 'pairwise exchange' : 'all exchanges at once', run: (c) => alltoallv(c, s, sc, r, rc, pairwise) };
  }

  reduceScatter(send: unknown, recv: unknown, counts: unknown, op: unknown): CollPlan {
    const s = checkArray(send, 'reduceScatter send');
    const r = checkArray(recv, 'reduceScatter recv');
    sameType(s, r, 'reduceScatter');
    const o = checkOp(op, s, 'reduceScatter');
    const cnt = checkCounts(counts, this.size, 'reduceScatter');
    if (s.length !== sum(cnt)) throw invalid(`reduceScatter: send has ${s.length} elements, counts add up to ${sum(cnt)}`);
    if (r.length < cnt[this.rank]!) throw invalid(`reduceScatter: recv has ${r.length} elements but counts[${this.rank}] is ${cnt[this.rank]}`);
    return { name: 'reduceScatter', algorithm: 'ring', run: (c) => reduceScatterRing(c, s, r, cnt, o) };
  }

  scan(send: unknown, recv: unknown, op: unknown, exclusive: boolean): CollPlan {
    const what = exclusive ? 'exscan' : 'scan';
    // Messages are built only for a bad argument: a string per call was garbage on the fast path.
    const s = isReduceArray(send) ? send : checkArray(send, `${what} send`);
    const r = isReduceArray(recv) ? recv : checkArray(recv, `${what} recv`);
    sameType(s, r, what);
    const o = checkOp(op, s, what);
    if (r.length !== s.length) throw invalid(`${what}: recv has ${r.length} elements, send has ${s.length}; they must match`);
    return { name: what, algorithm: 'chain', run: (c) => scanChain(c, s, r, o, exclusive) };
  }
}
