// The Communicator: MPI-style point-to-point and collectives on a group of
// ranks (DESIGN sections 4 and 4b). It checks arguments, translates
// communicator ranks to world ranks, and hands the work to the protocol layer
// and the collective algorithms (with RAILCOMM_CHECK, agreed on first).
// The point-to-point calls it inherits are in p2p-calls.ts.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { DeviceBuffer } from '../core/bytes.js';
import { ANY_SOURCE, ANY_TAG } from '../proto/matching.js';
import { Request, KIND_COLL, type Status } from '../proto/request.js';
import { CollectivePlanner, type CollPlan } from './collectives.js';
import { ScratchPool, type CollComm } from './coll/engine.js';
import { checkedRun } from './coll/checked.js';
import { shown } from './checks.js';
import { SIG_WORDS, refusedSignature } from './coll/check.js';
import { hash32, type ReduceArray, type ReduceOpName, type UserOp } from './coll/ops.js';
import * as objects from './objects.js';
import { CartTopology, checkGrid } from './cart.js';
import type { CartCommunicator } from './cart-comm.js';
import { abortJob, checkAbortCode } from './abort.js';
import type { World } from './world.js';
import { allocateWindow, exposeWindow, type Window } from './window.js';
import { sharedPathFor } from './coll/shared-host.js';
import { DevicePlanner } from '../cuda/coll.js';
import { SyncCalls } from './sync-calls.js';
import type { InterCommunicator } from './inter.js';
import { EMPTY, PointToPoint, type Mem } from './p2p-calls.js';

export type { RequestOptions } from './p2p-calls.js';

/**
 * A buffer of the collectives that move elements without combining them
 * (gather, scatter, allgather, alltoall and their v-forms): a typed array, or
 * a device array. Not a DataView: they count in elements of one type, and
 * refuse one at the call (checkArray); bcast, which moves bytes, takes any view.
 */
type CollMem = ReduceArray | DeviceBuffer;

/** Stands in for a CollComm a shared-memory collective will not use (its segment is attached). */
const UNUSED_COMM: CollComm = {
  rank: -1, size: 0, scratch: new ScratchPool(),
  send(): Request { throw new RailcommError(ErrorCode.PROTOCOL, 'internal: a shared-memory collective sent a message after set-up'); },
  recv(): Request { throw new RailcommError(ErrorCode.PROTOCOL, 'internal: a shared-memory collective posted a receive after set-up'); },
};

export class Communicator extends PointToPoint {
  private collSeq = 0;
  /** @internal */ readonly planner: CollectivePlanner;
  private readonly scratch = new ScratchPool();
  /** RAILCOMM_CHECK: every collective is agreed on first; the number of checked calls so far. */
  private readonly checking: boolean;
  private checkedCalls = 0;

  /** @internal */
  constructor(world: World, group: readonly number[], rank: number, p2pCtx: number, collCtx: number) {
    super(world, group, rank, p2pCtx, collCtx);
    // Device arrays are staged, or moved and combined on the GPU (src/cuda/coll.ts); host arrays as before.
    this.planner = new DevicePlanner(rank, this.size, world.ctx.params, world.ctx.log, () => this.deviceLink());
    this.planner.shared = sharedPathFor(this, group, collCtx);
    this.checking = this.planner.checking;
  }

  // ---- synchronous calls (DESIGN 4b): complete at the call, on lanes that progress without the event loop ----

  /**
   * Send buf to dest and return once buf may be reused (eager: at once;
   * large: once the receiver has the data). Only to ranks reached over self,
   * tbsm, shm or ofi (an ofi peer once one async message bound its lane);
   * elsewhere ERR_NO_RAIL. The rank runs no timers or I/O until it returns.
   */
  sendSync(buf: ArrayBufferView, dest: number, tag = 0): Status { return this.syncs().sendSync(buf, dest, tag); }
  /** Receive into buf from source (or ANY_SOURCE) with tag (or ANY_TAG), at the call. */
  recvSync(buf: ArrayBufferView, source: number = ANY_SOURCE, tag: number = ANY_TAG): Status { return this.syncs().recvSync(buf, source, tag); }
  /** sendrecv() at the call: the receive's Status. */
  sendrecvSync(sbuf: ArrayBufferView, dest: number, sendTag: number, rbuf: ArrayBufferView, source: number = ANY_SOURCE, recvTag: number = ANY_TAG): Status {
    return this.syncs().sendrecvSync(sbuf, dest, sendTag, rbuf, source, recvTag);
  }
  barrierSync(): void { this.syncs().coll.barrier(); }
  bcastSync(buf: ArrayBufferView, root: number): void { this.syncs().coll.bcast(buf, root); }
  allreduceSync<T extends ReduceArray>(send: T, recv: T, op: ReduceOpName | UserOp<T>): void { this.syncs().coll.allreduce(send, recv, op); }
  /** recv matters at the root only (others may pass null). */
  reduceSync<T extends ReduceArray>(send: T, recv: T | null, op: ReduceOpName | UserOp<T>, root: number): void { this.syncs().coll.reduce(send, recv, op, root); }
  /** Typed arrays of one element type, as allgather() (not a DataView). */
  allgatherSync<T extends ReduceArray>(send: T, recv: T): void { this.syncs().coll.allgather(send, recv); }

  private syncCalls: SyncCalls | null = null;
  private syncs(): SyncCalls {
    return (this.syncCalls ??= new SyncCalls({
      comm: this, group: this.group, p2pCtx: this.p2pCtx, collCtx: this.collCtx, scratch: this.scratch, checking: this.checking,
      startSend: (b, d, t, c) => this.startSend(b, d, t, c, null),
      startRecv: (b, src, t, c) => this.startRecv(b, src, t, c, null),
      nextTag: () => { const t = this.collSeq; this.collSeq = (t + 1) & 0x7fffffff; return t; },
      nextCheckedCall: () => ++this.checkedCalls,
      collsInFlight: () => this.collsInFlight,
    }));
  }

  // ---- collectives ---------------------------------------------------------
  // Every rank calls them in the same order. Each call takes the next
  // collective sequence number, its tag in the communicator's collective
  // context, so overlapping collectives and user messages never cross.

  /** Point-to-point for one collective call (its own tag). */
  private collComm(): CollComm {
    const tag = this.collSeq;
    this.collSeq = (this.collSeq + 1) & 0x7fffffff;
    return this.collCommAt(tag);
  }

  private collCommAt(tag: number): CollComm {
    return {
      rank: this.rank,
      size: this.size,
      scratch: this.scratch,
      tag,
      send: (b, peer) => this.startSend(b, peer, tag, this.collCtx, null),
      recv: (b, peer) => this.startRecv(b, peer, tag, this.collCtx, null),
    };
  }

  private startColl(what: string, plan: () => CollPlan): Request {
    this.world.check(what);
    const p = this.planOrRefuse(what, plan);
    const r = new Request(KIND_COLL, EMPTY);
    this.world.track(r);
    // One through the shared segment is finished by a synchronous call that comes first (coll/pending-steps.ts).
    if (p.shared !== true) {
      this.collsInFlight++;
      r.onSettled(this.collSettled);
    }
    this.planner.announce(p);
    (this.checking ? this.checkedRun(p) : p.run(this.collComm())).then(
      () => r.complete(this.rank, 0, 0),
      (e: unknown) => r.fail(e instanceof RailcommError ? e : new RailcommError(ErrorCode.PROTOCOL, `${what} failed: ${(e as Error)?.message ?? String(e)}`, { cause: e })),
    );
    return r;
  }

  private async done(r: Request): Promise<void> { await r.wait(); }

  /** Nonblocking collectives over point-to-point started and not settled: a synchronous collective cannot run past them. */
  private collsInFlight = 0;
  private readonly collSettled = (): void => { this.collsInFlight--; };

  /** A blocking collective: through shared memory directly, otherwise as its nonblocking twin. */
  private coll(what: string, plan: () => CollPlan): Promise<void> {
    this.world.check(what);
    const p = this.planOrRefuse(what, plan);
    if (p.shared !== true) return this.done(this.startColl(what, () => p));
    // No Request counts it: starting one tells the hang report the last one completed.
    this.world.ctx.progress.completedAtOnce();
    this.planner.announce(p);
    if (this.checking) return this.checkedRun(p);
    // Once the segment is attached the point-to-point half of a CollComm is never
    // used: skip building one (an object and two closures per call).
    if (this.planner.shared?.attached === true) {
      this.collSeq = (this.collSeq + 1) & 0x7fffffff;
      return p.run(UNUSED_COMM);
    }
    return p.run(this.collComm());
  }

  /** plan(); when it throws (this rank's arguments are wrong), the call is refused (refuse()) and the error thrown. */
  private planOrRefuse(what: string, plan: () => CollPlan): CollPlan {
    try {
      return plan();
    } catch (e) {
      this.refuse(what, e);
      throw e;
    }
  }

  /**
   * A collective this rank refused at the call still takes its place in the
   * sequence, so that later collectives match theirs on every rank (a root
   * whose receive buffer is too small must not take the others' data of this
   * call for its next one). With RAILCOMM_CHECK it also joins the agreement,
   * saying it refused: every other rank fails the call (ERR_COLLECTIVE_MISMATCH)
   * instead of waiting in it. Without the check, ranks whose arguments passed
   * go on into the call and wait there (the hang report names it).
   */
  private refuse(what: string, e: unknown): void {
    if (!(e instanceof RailcommError)) return;
    if (!this.checking) {
      this.collSeq = (this.collSeq + 1) & 0x7fffffff;
      return;
    }
    const refused: CollPlan = { name: what, algorithm: 'refused', run: () => Promise.reject(e), sig: refusedSignature(what, e.code) };
    // Settles with the mismatch (or, were every rank to refuse, with e): thrown at the call already.
    checkedRun(this, refused, ++this.checkedCalls).catch(() => {});
  }

  /** @internal A blocking collective for the object collectives (objects.ts). */
  runCollective(what: string, plan: () => CollPlan): Promise<void> {
    return this.coll(what, plan);
  }

  /** With RAILCOMM_CHECK: agree on p's signature, then run it (coll/checked.ts). */
  private checkedRun(p: CollPlan): Promise<void> {
    return checkedRun(this, p, ++this.checkedCalls);
  }

  /** @internal RAILCOMM_CHECK's agreements through the shared segment (one at a time: the segment's queue). */
  get agreeBuffer(): Float64Array {
    return (this.agreeAll ??= new Float64Array(SIG_WORDS * this.size));
  }
  private agreeAll: Float64Array | null = null;

  /** @internal The next collective tag, as a CollComm (null: the segment is attached and none is needed). */
  takeTag(needed: boolean): CollComm {
    if (needed) return this.collComm();
    this.collSeq = (this.collSeq + 1) & 0x7fffffff;
    return UNUSED_COMM;
  }

  ibarrier(): Request { return this.startColl('barrier', () => this.planner.barrier()); }
  ibcast(buf: Mem, root: number): Request { return this.startColl('bcast', () => this.planner.bcast(buf, root)); }
  ireduce<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer | null, op: ReduceOpName | UserOp<T>, root: number): Request { return this.startColl('reduce', () => this.planner.reduce(send, recv, op, root)); }
  iallreduce<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer, op: ReduceOpName | UserOp<T>): Request { return this.startColl('allreduce', () => this.planner.allreduce(send, recv, op)); }
  igather(send: CollMem, recv: CollMem | null, root: number): Request { return this.startColl('gather', () => this.planner.gather(send, recv, root)); }
  igatherv(send: CollMem, recv: CollMem | null, counts: ArrayLike<number>, root: number): Request { return this.startColl('gatherv', () => this.planner.gatherv(send, recv, counts, root)); }
  iscatter(send: CollMem | null, recv: CollMem, root: number): Request { return this.startColl('scatter', () => this.planner.scatter(send, recv, root)); }
  iscatterv(send: CollMem | null, counts: ArrayLike<number>, recv: CollMem, root: number): Request { return this.startColl('scatterv', () => this.planner.scatterv(send, counts, recv, root)); }
  iallgather(send: CollMem, recv: CollMem): Request { return this.startColl('allgather', () => this.planner.allgather(send, recv)); }
  iallgatherv(send: CollMem, recv: CollMem, counts: ArrayLike<number>): Request { return this.startColl('allgatherv', () => this.planner.allgatherv(send, recv, counts)); }
  ialltoall(send: CollMem, recv: CollMem): Request { return this.startColl('alltoall', () => this.planner.alltoall(send, recv)); }
  ialltoallv(send: CollMem, sendCounts: ArrayLike<number>, recv: CollMem, recvCounts: ArrayLike<number>): Request { return this.startColl('alltoallv', () => this.planner.alltoallv(send, sendCounts, recv, recvCounts)); }
  ireduceScatter<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer, counts: ArrayLike<number>, op: ReduceOpName | UserOp<T>): Request { return this.startColl('reduceScatter', () => this.planner.reduceScatter(send, recv, counts, op)); }
  iscan<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer, op: ReduceOpName | UserOp<T>): Request { return this.startColl('scan', () => this.planner.scan(send, recv, op, false)); }
  iexscan<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer, op: ReduceOpName | UserOp<T>): Request { return this.startColl('exscan', () => this.planner.scan(send, recv, op, true)); }

  /** Every rank waits until all ranks of the communicator have entered. */
  barrier(): Promise<void> { return this.coll('barrier', () => this.planner.barrier()); }
  bcast(buf: Mem, root: number): Promise<void> { return this.coll('bcast', () => this.planner.bcast(buf, root)); }
  /** recv matters at the root only (others may pass null). */
  reduce<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer | null, op: ReduceOpName | UserOp<T>, root: number): Promise<void> { return this.coll('reduce', () => this.planner.reduce(send, recv, op, root)); }
  allreduce<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer, op: ReduceOpName | UserOp<T>): Promise<void> {
    this.world.check('allreduce');
    // The most frequent collective, through shared memory: no plan, no closures.
    // (Device arrays never take it: they are staged, or reduced on the GPU by the plan.)
    let now: Promise<void> | undefined;
    try {
      now = send instanceof DeviceBuffer || recv instanceof DeviceBuffer ? undefined : this.planner.allreduceNow(send, recv, op);
    } catch (e) {
      this.refuse('allreduce', e);
      throw e;
    }
    if (now !== undefined) {
      this.collSeq = (this.collSeq + 1) & 0x7fffffff;
      return now;
    }
    return this.allreduceByPlan(send, recv, op);
  }

  /** Apart from allreduce(): its closure would cost a context on every call, fast path included. */
  private allreduceByPlan(send: ReduceArray | DeviceBuffer, recv: ReduceArray | DeviceBuffer, op: unknown): Promise<void> {
    return this.coll('allreduce', () => this.planner.allreduce(send, recv, op));
  }
  gather(send: CollMem, recv: CollMem | null, root: number): Promise<void> { return this.done(this.igather(send, recv, root)); }
  gatherv(send: CollMem, recv: CollMem | null, counts: ArrayLike<number>, root: number): Promise<void> { return this.done(this.igatherv(send, recv, counts, root)); }
  scatter(send: CollMem | null, recv: CollMem, root: number): Promise<void> { return this.done(this.iscatter(send, recv, root)); }
  scatterv(send: CollMem | null, counts: ArrayLike<number>, recv: CollMem, root: number): Promise<void> { return this.done(this.iscatterv(send, counts, recv, root)); }
  allgather(send: CollMem, recv: CollMem): Promise<void> { return this.coll('allgather', () => this.planner.allgather(send, recv)); }
  allgatherv(send: CollMem, recv: CollMem, counts: ArrayLike<number>): Promise<void> { return this.done(this.iallgatherv(send, recv, counts)); }
  alltoall(send: CollMem, recv: CollMem): Promise<void> { return this.done(this.ialltoall(send, recv)); }
  alltoallv(send: CollMem, sendCounts: ArrayLike<number>, recv: CollMem, recvCounts: ArrayLike<number>): Promise<void> { return this.done(this.ialltoallv(send, sendCounts, recv, recvCounts)); }
  reduceScatter<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer, counts: ArrayLike<number>, op: ReduceOpName | UserOp<T>): Promise<void> { return this.done(this.ireduceScatter(send, recv, counts, op)); }
  /** Inclusive prefix reduction over ranks 0..rank. */
  scan<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer, op: ReduceOpName | UserOp<T>): Promise<void> { return this.done(this.iscan(send, recv, op)); }
  /** Exclusive prefix reduction over ranks 0..rank-1 (rank 0's recv is left as it is). */
  exscan<T extends ReduceArray>(send: T | DeviceBuffer, recv: T | DeviceBuffer, op: ReduceOpName | UserOp<T>): Promise<void> { return this.done(this.iexscan(send, recv, op)); }

  // ---- collectives on JavaScript values (objects.ts) ---------------------

  /** root's value on every rank (structured clone; the root gets its own value back). */
  bcastObject<T>(value: T, root: number): Promise<T> {
    this.world.check('bcastObject');
    return objects.bcastObject(this, value, root);
  }

  /** Every rank's value in rank order at root; null on the other ranks. */
  gatherObject<T>(value: T, root: number): Promise<T[] | null> {
    this.world.check('gatherObject');
    return objects.gatherObject(this, value, root);
  }

  /** Every rank's value in rank order, on every rank. */
  allgatherObject<T>(value: T): Promise<T[]> {
    this.world.check('allgatherObject');
    return objects.allgatherObject(this, value);
  }

  /** values[j] goes to rank j; resolves with the values every rank sent this one, in rank order. */
  alltoallObject<T>(values: readonly T[]): Promise<T[]> {
    this.world.check('alltoallObject');
    return objects.alltoallObject(this, values);
  }

  /** fn(fn(v0, v1), v2) ... over every rank's value, in rank order, at root; null on the other ranks. */
  reduceObject<T>(value: T, fn: (a: T, b: T) => T, root: number): Promise<T | null> {
    this.world.check('reduceObject');
    return objects.reduceObject(this, value, fn, root);
  }

  /** fn(fn(v0, v1), v2) ... over every rank's value, in rank order, on every rank. */
  allreduceObject<T>(value: T, fn: (a: T, b: T) => T): Promise<T> {
    this.world.check('allreduceObject');
    return objects.allreduceObject(this, value, fn);
  }

  /**
   * End every rank of the job with exit code `code` (1..255), as MPI_Abort.
   * The promise never settles: this rank exits (a thread rank: its thread).
   */
  abort(code = 1): Promise<never> {
    return abortJob(this.world, this.world.ctx.worldRank, checkAbortCode(code));
  }

  // ---- communicators -------------------------------------------------------

  /**
   * Split into communicators of the ranks that pass the same color, ordered by
   * key (then by rank here). A negative color returns null on that rank.
   * Collective over this communicator.
   */
  split(color: number, key: number): Promise<Communicator | null> {
    this.world.check('split');
    if (!Number.isSafeInteger(color)) throw new RailcommError(ErrorCode.INVALID_ARG, `split: color must be an integer (negative for none), got ${shown(color)}`);
    if (!Number.isSafeInteger(key)) throw new RailcommError(ErrorCode.INVALID_ARG, `split: key must be an integer, got ${shown(key)}`);
    return this.splitWith('split', color, key, 0, (group, rank, ctx) => new Communicator(this.world, group, rank, ctx, ctx + 1));
  }

  /**
   * split's agreement; `same` must be equal on every rank (a hash of
   * arguments that must agree), else every rank throws ERR_INVALID_ARG.
   */
  private splitWith<C extends Communicator>(what: string, color: number, key: number, same: number, make: (group: number[], rank: number, ctx: number) => C): Promise<C | null> {
    return this.world.serialContext(async () => {
      const all = new Float64Array(4 * this.size);
      await this.allgather(new Float64Array([color < 0 ? -1 : color, key, this.world.nextContextId, same]), all);
      const ctx = this.agreeContext(all, 4, 2);
      const odd: number[] = [];
      for (let i = 0; i < this.size; i++) if (all[4 * i + 3] !== all[3]) odd.push(i);
      if (odd.length > 0) throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: rank${odd.length > 1 ? 's' : ''} ${odd.join(', ')} passed other arguments than rank 0; every rank must pass the same`);
      if (color < 0) return null;
      const members: number[] = [];
      for (let i = 0; i < this.size; i++) if (all[4 * i] === color) members.push(i);
      members.sort((a, b) => all[4 * a + 1]! - all[4 * b + 1]! || a - b);
      return make(members.map((i) => this.group[i]!), members.indexOf(this.rank), ctx);
    });
  }

  /** A communicator with the same ranks and its own matching space. Collective. */
  dup(): Promise<Communicator> {
    this.world.check('dup');
    return this.world.serialContext(async () => {
      const all = new Float64Array(this.size);
      await this.allgather(new Float64Array([this.world.nextContextId]), all);
      const ctx = this.agreeContext(all, 1, 0);
      return this.twin(ctx);
    });
  }

  /** @internal This communicator's ranks on context ids ctx, ctx + 1 (a Cartesian one keeps its grid). */
  protected twin(ctx: number): Communicator {
    return new Communicator(this.world, this.group, this.rank, ctx, ctx + 1);
  }

  /**
   * A Cartesian communicator over the first dims[0] x dims[1] x ... ranks
   * (MPI_Cart_create), laid out in row-major order; ranks beyond the grid get
   * null. periods: per dimension (or one boolean for all), whether it wraps
   * around. reorder is accepted and ignored (ranks keep their order).
   * Collective: every rank passes the same arguments.
   */
  cartCreate(dims: readonly number[], periods: boolean | readonly boolean[] = false, reorder = false): Promise<CartCommunicator | null> {
    this.world.check('cartCreate');
    const g = checkGrid(dims, periods, this.size, 'cartCreate');
    if (typeof reorder !== 'boolean') throw new RailcommError(ErrorCode.INVALID_ARG, `cartCreate: reorder must be true or false, got ${shown(reorder)}`);
    return this.cartOf(new CartTopology(g.dims, g.periods));
  }

  private async cartOf(topo: CartTopology): Promise<CartCommunicator | null> {
    const same = hash32(`${topo.dims.join('x')}/${topo.periods.join(',')}`);
    // Imported here: cart-comm.ts extends this module's class, so a static import would be a cycle.
    const { CartCommunicator: Cart } = await import('./cart-comm.js');
    return this.splitWith('cartCreate', this.rank < topo.cells ? 0 : -1, this.rank, same, (group, rank, ctx) => new Cart(this.world, group, rank, ctx, ctx + 1, topo));
  }

  /**
   * Context ids are agreed as the largest "next free id" among the members,
   * so no member has used it for anything else; every member then moves past it.
   */
  private agreeContext(all: Float64Array, stride: number, at: number): number {
    let ctx = 0;
    for (let i = 0; i < this.size; i++) ctx = Math.max(ctx, all[stride * i + at]!);
    this.world.nextContextId = Math.max(this.world.nextContextId, ctx + 2);
    return ctx;
  }

  /** Complete outstanding sends, close every rail, release every handle. Idempotent. */
  finalize(): Promise<void> {
    return this.world.finalize();
  }

  // ---- one-sided ------------------------------------------------------------

  /** Expose buf to one-sided operations of every rank. Collective. */
  window(buf: ArrayBufferView): Promise<Window> {
    return exposeWindow(this, buf);
  }

  /** A window of `bytes` zero-filled bytes railcomm allocates (shared memory where ranks share a host). Collective. */
  allocWindow(bytes: number): Promise<Window> {
    return allocateWindow(this, bytes);
  }

  /** @internal World ranks of this communicator's ranks. */
  protected groupOf(): readonly number[] {
    return this.group;
  }

  /** @internal World rank of a rank of this communicator. */
  worldRankOf(r: number): number {
    return this.group[r]!;
  }

  /** Counters per rail and per peer. */
  stats(): Record<string, unknown> {
    return this.world.ctx.stats();
  }

  // ---- other jobs (MPI dynamic processes: inter.ts, ports.ts, spawn.ts) ----

  /** A port another job can connect to (a string to hand it: file, environment, argv); valid until closePort. Local to this rank. */
  async openPort(): Promise<string> {
    return (await import('./inter.js')).openPort(this.world);
  }

  /** Close a port this rank opened: accepts waiting on it fail, connects to it fail at once. */
  async closePort(port: string): Promise<void> {
    return (await import('./inter.js')).closePort(this.world, port);
  }

  /** Wait for another job to connect to `port` (opened by `root`). Collective over this communicator. */
  async accept(port: string, root = 0): Promise<InterCommunicator> {
    return (await import('./inter.js')).interConnect(this, 'accept', port, root);
  }

  /** Connect to a port another job opened (significant at `root`). Collective over this communicator. */
  async connect(port: string, root = 0): Promise<InterCommunicator> {
    return (await import('./inter.js')).interConnect(this, 'connect', port, root);
  }

  /**
   * Start n ranks of `script` as a new job (under railcomm run, which starts
   * them) and return the inter-communicator to them; in the children,
   * comm.parent is its other end. Collective over this communicator; script,
   * args and n matter at root.
   */
  async spawn(script: string, args: readonly string[] = [], n = 1, root = 0): Promise<InterCommunicator> {
    return (await import('./spawn.js')).spawnJob(this, script, args, n, root);
  }

  /** In a job started by spawn(): the inter-communicator to the job that spawned it; null otherwise. */
  get parent(): InterCommunicator | null {
    return this.world.parent;
  }
}
