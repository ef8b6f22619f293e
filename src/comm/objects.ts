// Collectives on JavaScript values (mpi4py's lowercase bcast, gather, allgather,
// alltoall, reduce, allreduce): each value travels as its v8 serialisation,
// lengths first, then the bytes through the typed-array collectives. Reductions
// gather the values and fold them with the user's function in rank order.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { describe } from '../core/bytes.js';
import { deserialize, serialize } from './world.js';
import { checkRoot, type CollectivePlanner, type CollPlan } from './collectives.js';

/** What the object collectives need from their communicator. */
export interface ObjectHost {
  readonly rank: number;
  readonly size: number;
  /** @internal */ readonly planner: CollectivePlanner;
  /** @internal Run a blocking collective (checked, when RAILCOMM_CHECK is on, under the plan's name). */
  runCollective(what: string, plan: () => CollPlan): Promise<void>;
}

export type Combine<T> = (a: T, b: T) => T;

function pack(value: unknown, what: string): Uint8Array {
  try {
    const b = serialize(value);
    // A Buffer: as a plain Uint8Array, the element type every rank's receive buffer has.
    return new Uint8Array(b.buffer, b.byteOffset, b.length);
  } catch (e) {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: the value cannot be serialised (${(e as Error).message}); pass plain data, typed arrays, Maps, Sets, Dates (no functions, symbols or class instances with private state)`, { cause: e });
  }
}

function unpack<T>(bytes: Uint8Array): T {
  return deserialize(bytes, () => `an object collective's ${bytes.length}-byte value`) as T;
}

function checkFn(fn: unknown, what: string): void {
  if (typeof fn !== 'function') throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: fn must be a function (a, b) => combined, applied in rank order, got ${describe(fn)}`);
}

/** The values of `all` (rank order) folded left with fn: fn(fn(v0, v1), v2) ... */
function fold<T>(all: T[], fn: Combine<T>): T {
  let acc = all[0] as T;
  for (let i = 1; i < all.length; i++) acc = fn(acc, all[i] as T);
  return acc;
}

/** root's value on every rank (root gets its own value back, not a copy). Arguments are checked at the call. */
export function bcastObject<T>(h: ObjectHost, value: T, root: number): Promise<T> {
  const what = 'bcastObject';
  const rt = checkRoot(root, h.size, what);
  const bytes = h.rank === rt ? pack(value, what) : null;
  return bcastRest(h, value, rt, bytes);
}

async function bcastRest<T>(h: ObjectHost, value: T, root: number, mine: Uint8Array | null): Promise<T> {
  const what = 'bcastObject';
  const len = new Float64Array([mine?.length ?? 0]);
  await h.runCollective(what, () => h.planner.bcast(len, root, what));
  const bytes = mine ?? new Uint8Array(len[0]!);
  await h.runCollective(what, () => h.planner.bcast(bytes, root, what));
  return h.rank === root ? value : unpack<T>(bytes);
}

/** Every rank's value, in rank order, at root (copies, its own included); null elsewhere. */
export function gatherObject<T>(h: ObjectHost, value: T, root: number, what = 'gatherObject'): Promise<T[] | null> {
  const rt = checkRoot(root, h.size, what);
  return gatherRest<T>(h, pack(value, what), rt, what);
}

async function gatherRest<T>(h: ObjectHost, mine: Uint8Array, root: number, what: string): Promise<T[] | null> {
  // Every rank learns every length (gatherv takes the counts on every rank).
  const lens = await allLengths(h, mine.length, what);
  const all = h.rank === root ? new Uint8Array(sum(lens)) : null;
  await h.runCollective(what, () => h.planner.gatherv(mine, all, lens, root, what));
  return all === null ? null : split<T>(all, lens);
}

/** Every rank's value, in rank order, on every rank (copies). */
export function allgatherObject<T>(h: ObjectHost, value: T, what = 'allgatherObject'): Promise<T[]> {
  return allgatherRest<T>(h, pack(value, what), what);
}

async function allgatherRest<T>(h: ObjectHost, mine: Uint8Array, what: string): Promise<T[]> {
  const lens = await allLengths(h, mine.length, what);
  const all = new Uint8Array(sum(lens));
  await h.runCollective(what, () => h.planner.allgatherv(mine, all, lens, what));
  return split<T>(all, lens);
}

/** values[j] goes to rank j; resolves with what each rank sent this one, in rank order. */
export function alltoallObject<T>(h: ObjectHost, values: readonly T[]): Promise<T[]> {
  const what = 'alltoallObject';
  if (!Array.isArray(values) || values.length !== h.size) {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: values must be an array of ${h.size} values (one per rank), got ${Array.isArray(values) ? `${values.length} values` : describe(values)}`);
  }
  const parts = values.map((v, j) => pack(v, `${what} (values[${j}])`));
  return alltoallRest<T>(h, parts);
}

async function alltoallRest<T>(h: ObjectHost, parts: Uint8Array[]): Promise<T[]> {
  const what = 'alltoallObject';
  const sendLens = new Float64Array(parts.map((b) => b.length));
  const recvLens = new Float64Array(h.size);
  await h.runCollective(what, () => h.planner.alltoall(sendLens, recvLens, what));
  const send = new Uint8Array(sum(sendLens));
  let at = 0;
  for (const b of parts) { send.set(b, at); at += b.length; }
  const recv = new Uint8Array(sum(recvLens));
  await h.runCollective(what, () => h.planner.alltoallv(send, sendLens, recv, recvLens, what));
  return split<T>(recv, recvLens);
}

/** fn folded over every rank's value in rank order, at root; null elsewhere. */
export function reduceObject<T>(h: ObjectHost, value: T, fn: Combine<T>, root: number): Promise<T | null> {
  const what = 'reduceObject';
  checkFn(fn, what);
  const rt = checkRoot(root, h.size, what);
  return gatherRest<T>(h, pack(value, what), rt, what).then((all) => (all === null ? null : fold(all, fn)));
}

/** fn folded over every rank's value in rank order, on every rank (each folds the same values in the same order). */
export function allreduceObject<T>(h: ObjectHost, value: T, fn: Combine<T>): Promise<T> {
  const what = 'allreduceObject';
  checkFn(fn, what);
  return allgatherRest<T>(h, pack(value, what), what).then((all) => fold(all, fn));
}

async function allLengths(h: ObjectHost, mine: number, what: string): Promise<Float64Array> {
  const lens = new Float64Array(h.size);
  await h.runCollective(what, () => h.planner.allgather(new Float64Array([mine]), lens, what));
  return lens;
}

function sum(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i]!;
  return s;
}

/** Deserialise consecutive pieces of `all` with the given lengths. */
function split<T>(all: Uint8Array, lens: ArrayLike<number>): T[] {
  const out: T[] = [];
  let at = 0;
  for (let i = 0; i < lens.length; i++) {
    const n = lens[i]!;
    out.push(unpack<T>(all.subarray(at, at + n)));
    at += n;
  }
  return out;
}
