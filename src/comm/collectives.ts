// The collective operations of a communicator: argument checks (thrown at the
// call, before any traffic), the choice of algorithm by size and communicator
// size, and the nonblocking form (a Request that completes when the
// algorithm does). Every rank must call collectives in the same order.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { asBytes, describe, isDetached } from '../core/bytes.js';
import type { Params } from '../core/params.js';
import type { Logger } from '../core/log.js';
import { checkOp, isCommutative, isReduceArray, type ReduceOp, type ReduceArray } from './coll/ops.js';
import { barrierDissemination, type CollComm } from './coll/engine.js';
import { bcastBinomial, gatherBinomial, gatherDirect, reduceBinomial, reduceRankOrder, scatterDirect } from './coll/tree.js';
import { allreduceRecursiveDoubling, allreduceRing, reduceScatterRankOrder, reduceScatterRing } from './coll/allreduce.js';
import { countsHash, signature } from './coll/check.js';
import { kindOf } from './checks.js';
import { allgatherBruck, allgatherRing } from './coll/allgather.js';
import { alltoallv } from './coll/alltoall.js';
import { scanChain } from './coll/scan.js';
import type { SharedCollectives } from './coll/shared.js';

const invalid = (m: string): RailcommError => new RailcommError(ErrorCode.INVALID_ARG, m);

export function checkArray(v: unknown, what: string): ReduceArray {
  if (!isReduceArray(v)) throw invalid(`${what} must be a typed array (Float64Array, Int32Array, ...), got ${describe(v)}`);
  if (v.length === 0 && isDetached(v.buffer)) throw detached(what);
  return v;
}

const detached = (what: string): RailcommError => invalid(`${what} is backed by a detached ArrayBuffer (it was transferred); pass a live buffer`);

function sameType(a: ReduceArray, b: ReduceArray, what: string): void {
  if (a.constructor !== b.constructor) throw invalid(`${what}: send is ${a.constructor.name} but recv is ${b.constructor.name}; use one element type`);
}

export function checkRoot(root: unknown, size: number, what: string): number {
  if (typeof root !== 'number' || !Number.isInteger(root)) {
    throw new RailcommError(ErrorCode.RANK, `${what}: root ${kindOf(root)}; pass the root's rank as an integer (0..${size - 1})`);
  }
  if (root < 0 || root >= size) throw new RailcommError(ErrorCode.RANK, `${what}: root ${root} is not a rank of this communicator (0..${size - 1})`);
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
  /** For a shared-memory plan: what run() hands the segment's queue (the check runs it after agreeing, in the same turn). */
  step?: () => Promise<void> | null;
  /** With RAILCOMM_CHECK: what the ranks must agree on (coll/check.ts). */
  sig?: number[];
}

/** A plan through the shared segment: `step` runs in the segment's queue. */
function sharedPlan(name: string, sh: SharedCollectives, step: () => Promise<void> | null): CollPlan {
  return { name, algorithm: 'shared memory', shared: true, step, run: (c) => sh.run(c, step) };
}

export class CollectivePlanner {
  private readonly size: number;
  private readonly rank: number;
  private readonly params: Params;
  private readonly log: Logger | null;
  private readonly announced = new Set<string>();
  /** The shared-memory path, when every rank of the communicator maps one segment. */
  shared: SharedCollectives | null = null;
  /** RAILCOMM_CHECK: plans carry the signature the ranks agree on before running. */
  readonly checking: boolean;
  /** allreduceNow() never applies: the algorithm is announced, or the call is checked first. */
  readonly noFastPath: boolean;

  constructor(rank: number, size: number, params: Params, log: Logger | null) {
    this.rank = rank;
    this.size = size;
    this.params = params;
    this.log = params.protoInfo ? log : null;
    this.checking = params.check;
    this.noFastPath = this.log !== null || this.checking;
  }

  /** plan with its signature when checking (no allocation otherwise). */
  private signed(plan: CollPlan, kind: string, root: number, op: ReduceOp | null, view: ArrayBufferView | null, count: number, counts: readonly number[] | null, x1 = -1, x2 = -1): CollPlan {
    if (this.checking) plan.sig = signature(kind, root, op, view, count, counts === null ? -1 : countsHash(counts), x1, x2);
    return plan;
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
  viaShared(bytes: number): SharedCollectives | null {
    return this.shared !== null && this.size > 1 && bytes <= this.params.collSharedMax ? this.shared : null;
  }

  barrier(name = 'barrier'): CollPlan {
    const sh = this.viaShared(0);
    const plan: CollPlan = sh !== null ? sharedPlan(name, sh, () => sh.barrier()) : { name, algorithm: 'dissemination', run: barrierDissemination };
    return this.signed(plan, name, -1, null, null, -1, null);
  }

  bcast(buf: unknown, root: unknown, name = 'bcast'): CollPlan {
    // A view of any type, refused if it is none or its buffer was detached (as a send's is).
    const bytes = asBytes(buf as ArrayBufferView, `${name}: buf`);
    const view = buf as ArrayBufferView;
    const rt = checkRoot(root, this.size, name);
    const sh = this.viaShared(bytes.length);
    const plan: CollPlan = sh !== null ? sharedPlan(name, sh, () => sh.bcast(bytes, rt)) : { name, algorithm: 'binomial tree', run: (c) => bcastBinomial(c, bytes, rt) };
    // byteLength is a call on Node 20 (core/bytes.ts): only when the signature is wanted.
    return this.checking ? this.signed(plan, name, rt, null, view, isReduceArray(view) ? view.length : bytes.length, null) : plan;
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
    const out = this.rank === rt ? r : null;
    const sh = this.viaShared(s.byteLength);
    // The shared path combines in rank order whatever the root; the tree does only from rank 0.
    const plan: CollPlan = sh !== null ? sharedPlan('reduce', sh, () => sh.reduce(s, out, o, rt))
      : isCommutative(o) ? { name: 'reduce', algorithm: 'binomial tree', run: (c) => reduceBinomial(c, s, out, o, rt) }
        : { name: 'reduce', algorithm: 'binomial tree from rank 0 (op not commutative)', run: (c) => reduceRankOrder(c, s, out, o, rt) };
    return this.signed(plan, 'reduce', rt, o, s, s.length, null);
  }

  /** Argument checks of allreduce (thrown at the call); the op, checked against the element type. */
  checkAllreduce(send: unknown, recv: unknown, op: unknown, what: string): ReduceOp {
    // Messages are built only for a bad argument: a string per call was garbage on the fast path.
    const s = isReduceArray(send) && send.length !== 0 ? send : checkArray(send, `${what} send`);
    const r = isReduceArray(recv) && recv.length !== 0 ? recv : checkArray(recv, `${what} recv`);
    sameType(s, r, what);
    const o: ReduceOp = checkOp(op, s, what);
    if (r.length !== s.length) throw invalid(`${what}: recv has ${r.length} elements, send has ${s.length}; they must match`);
    return o;
  }

  /**
   * A blocking allreduce started at once through shared memory, when that
   * path applies and is idle (no plan built); undefined otherwise, with
   * RAILCOMM_PROTO_INFO (the general path says which algorithm ran) and with
   * RAILCOMM_CHECK (the call is agreed on first).
   */
  allreduceNow(send: unknown, recv: unknown, op: unknown): Promise<void> | undefined {
    const sh = this.shared;
    if (sh === null || !sh.idle || this.noFastPath) return undefined;
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
    let plan: CollPlan;
    if (sh !== null) plan = sharedPlan(what, sh, () => sh.reduce(s, r, o, -1));
    // The ring starts each block at a different rank: only for ops that may combine in any order.
    else if (bytes >= this.params.collAllreduceRing && s.length >= this.size && this.size > 1 && isCommutative(o)) {
      plan = { name: what, algorithm: 'ring reduce-scatter + ring allgather', run: (c) => allreduceRing(c, s, r, o) };
    } else plan = { name: what, algorithm: 'recursive doubling', run: (c) => allreduceRecursiveDoubling(c, s, r, o) };
    return this.signed(plan, what, -1, o, s, s.length, null);
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
    const plan: CollPlan = s.byteLength <= this.params.collGatherBinomial ? { name: 'gather', algorithm: 'binomial tree', run: (c) => gatherBinomial(c, s, r, rt) }
      : { name: 'gather', algorithm: 'direct to root', run: (c) => gatherDirect(c, s, r, rt) };
    return this.signed(plan, 'gather', rt, null, s, s.length, null);
  }

  gatherv(send: unknown, recv: unknown, counts: unknown, root: unknown, name = 'gatherv'): CollPlan {
    const s = checkArray(send, `${name} send`);
    const rt = checkRoot(root, this.size, name);
    const cnt = checkCounts(counts, this.size, name);
    if (cnt[this.rank] !== s.length) throw invalid(`${name}: counts[${this.rank}] is ${cnt[this.rank]} but this rank sends ${s.length} elements`);
    let r: ReduceArray | null = null;
    if (this.rank === rt) {
      r = checkArray(recv, `${name} recv`);
      sameType(s, r, name);
      if (r.length < sum(cnt)) throw invalid(`${name}: recv at the root has ${r.length} elements, counts add up to ${sum(cnt)}`);
    }
    return this.signed({ name, algorithm: 'direct to root', run: (c) => gatherDirect(c, s, r, rt, cnt) }, name, rt, null, s, sum(cnt), cnt);
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
    return this.signed({ name: 'scatter', algorithm: 'direct from root', run: (c) => scatterDirect(c, s, r, rt) }, 'scatter', rt, null, r, r.length, null);
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
    return this.signed({ name: 'scatterv', algorithm: 'direct from root', run: (c) => scatterDirect(c, s, mine, rt, cnt) }, 'scatterv', rt, null, r, sum(cnt), cnt);
  }

  allgather(send: unknown, recv: unknown, name = 'allgather'): CollPlan {
    const s = checkArray(send, `${name} send`);
    const r = checkArray(recv, `${name} recv`);
    sameType(s, r, name);
    if (r.length !== s.length * this.size) throw invalid(`${name}: recv needs ${s.length * this.size} elements (${this.size} x ${s.length}), has ${r.length}`);
    const sh = this.viaShared(s.byteLength);
    let plan: CollPlan;
    if (sh !== null) plan = sharedPlan(name, sh, () => sh.allgather(s, r));
    else if (r.byteLength >= this.params.collAllgatherRing) {
      const counts = new Array<number>(this.size).fill(s.length);
      plan = { name, algorithm: 'ring', run: (c) => allgatherRing(c, s, r, counts) };
    } else plan = { name, algorithm: 'Bruck', run: (c) => allgatherBruck(c, s, r) };
    return this.signed(plan, name, -1, null, s, s.length, null);
  }

  allgatherv(send: unknown, recv: unknown, counts: unknown, name = 'allgatherv'): CollPlan {
    const s = checkArray(send, `${name} send`);
    const r = checkArray(recv, `${name} recv`);
    sameType(s, r, name);
    const cnt = checkCounts(counts, this.size, name);
    if (cnt[this.rank] !== s.length) throw invalid(`${name}: counts[${this.rank}] is ${cnt[this.rank]} but this rank sends ${s.length} elements`);
    if (r.length < sum(cnt)) throw invalid(`${name}: recv has ${r.length} elements, counts add up to ${sum(cnt)}`);
    return this.signed({ name, algorithm: 'ring', run: (c) => allgatherRing(c, s, r, cnt) }, name, -1, null, s, sum(cnt), cnt);
  }

  alltoall(send: unknown, recv: unknown, name = 'alltoall'): CollPlan {
    const s = checkArray(send, `${name} send`);
    const r = checkArray(recv, `${name} recv`);
    sameType(s, r, name);
    if (s.length % this.size !== 0 || r.length !== s.length) throw invalid(`${name}: send and recv must both hold ${this.size} equal blocks (lengths ${s.length} and ${r.length})`);
    const blk = s.length / this.size;
    const counts = new Array<number>(this.size).fill(blk);
    const pairwise = blk * s.BYTES_PER_ELEMENT >= this.params.collAlltoallPairwise;
    return this.signed({ name, algorithm: pairwise ? 'pairwise exchange' : 'all exchanges at once', run: (c) => alltoallv(c, s, counts, r, counts, pairwise) }, name, -1, null, s, s.length, null);
  }

  alltoallv(send: unknown, sendCounts: unknown, recv: unknown, recvCounts: unknown, name = 'alltoallv'): CollPlan {
    const s = checkArray(send, `${name} send`);
    const r = checkArray(recv, `${name} recv`);
    sameType(s, r, name);
    const sc = checkCounts(sendCounts, this.size, `${name} sendCounts`);
    const rc = checkCounts(recvCounts, this.size, `${name} recvCounts`);
    if (s.length < sum(sc)) throw invalid(`${name}: send has ${s.length} elements, sendCounts add up to ${sum(sc)}`);
    if (r.length < sum(rc)) throw invalid(`${name}: recv has ${r.length} elements, recvCounts add up to ${sum(rc)}`);
    // The block this rank sends itself: both counts are its own, so a block that would not fit is known here.
    // (A smaller one fits, as any message in a larger receive buffer; the counts of a pair of ranks are
    // compared where they meet, or under RAILCOMM_CHECK before any data moves.)
    const me = this.rank;
    if (sc[me]! > rc[me]!) throw invalid(`${name}: sendCounts[${me}] is ${sc[me]} but recvCounts[${me}] is only ${rc[me]}: the block rank ${me} sends itself would not fit where it receives it`);
    const pairwise = Math.max(...sc) * s.BYTES_PER_ELEMENT >= this.params.collAlltoallPairwise;
    // Counts differ from rank to rank: only the element type must agree, and the totals add up.
    return this.signed({ name, algorithm: pairwise ? 'pairwise exchange' : 'all exchanges at once', run: (c) => alltoallv(c, s, sc, r, rc, pairwise) }, name, -1, null, s, -1, null, sum(sc), sum(rc));
  }

  reduceScatter(send: unknown, recv: unknown, counts: unknown, op: unknown): CollPlan {
    const s = checkArray(send, 'reduceScatter send');
    const r = checkArray(recv, 'reduceScatter recv');
    sameType(s, r, 'reduceScatter');
    const o = checkOp(op, s, 'reduceScatter');
    const cnt = checkCounts(counts, this.size, 'reduceScatter');
    if (s.length !== sum(cnt)) throw invalid(`reduceScatter: send has ${s.length} elements, counts add up to ${sum(cnt)}`);
    if (r.length < cnt[this.rank]!) throw invalid(`reduceScatter: recv has ${r.length} elements but counts[${this.rank}] is ${cnt[this.rank]}`);
    const plan: CollPlan = isCommutative(o) ? { name: 'reduceScatter', algorithm: 'ring', run: (c) => reduceScatterRing(c, s, r, cnt, o) }
      : { name: 'reduceScatter', algorithm: 'recursive doubling, then this rank\'s block (op not commutative)', run: (c) => reduceScatterRankOrder(c, s, r, cnt, o) };
    return this.signed(plan, 'reduceScatter', -1, o, s, s.length, cnt);
  }

  scan(send: unknown, recv: unknown, op: unknown, exclusive: boolean): CollPlan {
    const what = exclusive ? 'exscan' : 'scan';
    // Messages are built only for a bad argument: a string per call was garbage on the fast path.
    const s = isReduceArray(send) && send.length !== 0 ? send : checkArray(send, `${what} send`);
    const r = isReduceArray(recv) && recv.length !== 0 ? recv : checkArray(recv, `${what} recv`);
    sameType(s, r, what);
    const o = checkOp(op, s, what);
    if (r.length !== s.length) throw invalid(`${what}: recv has ${r.length} elements, send has ${s.length}; they must match`);
    return this.signed({ name: what, algorithm: 'chain', run: (c) => scanChain(c, s, r, o, exclusive) }, what, -1, o, s, s.length, null);
  }
}
