// The collective mismatch check (RAILCOMM_CHECK=1, init({ check: true })): before
// a collective runs, every rank of the communicator contributes a fixed-size
// signature of its call (which collective, root, op, element type, counts) and
// all compare them, as MPICH's collective checking does. A mismatch fails the
// call on every rank, before any of its traffic, so the communicator stays usable.

import { RailcommError, ErrorCode } from '../../core/errors.js';
import { hash32, OPS, type ReduceOp } from './ops.js';

/** Doubles per signature: kind, root, op, element type, count, counts hash, then two per-rank extras. */
export const SIG_WORDS = 8;
/** Words 0 .. AGREE-1 must be equal on every rank; the extras are compared per collective. */
const AGREE = 6;

/** Collective kinds, by name; the index is the signature's first word. */
const KINDS = [
  'barrier', 'bcast', 'reduce', 'allreduce', 'gather', 'gatherv', 'scatter', 'scatterv',
  'allgather', 'allgatherv', 'alltoall', 'alltoallv', 'reduceScatter', 'scan', 'exscan',
  'bcastObject', 'gatherObject', 'allgatherObject', 'alltoallObject', 'reduceObject', 'allreduceObject',
  'refused',
] as const;

/** Element types, by the view's toStringTag; the index + 1 is the signature's type word (0: none). */
const TYPES = [
  'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array',
  'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array', 'DataView',
];

/** User-defined ops are 2^32 + their hash; built-in ones their index in OPS. */
const USER_OP = 2 ** 32;

/** A 32-bit hash of a counts list (its length included). */
export function countsHash(counts: readonly number[]): number {
  return hash32(counts.join(','));
}

/**
 * The signature of one call. root, count, counts and the extras are -1 where
 * the collective has none; `view` gives the element type (null: none).
 */
export function signature(kind: string, root: number, op: ReduceOp | null, view: ArrayBufferView | null, count: number, counts: number, x1 = -1, x2 = -1): number[] {
  // A plain array: a typed array per call (an ArrayBuffer each) cost more than the rest of the check.
  return [
    KIND_INDEX.get(kind) ?? -1,
    root,
    op === null ? -1 : typeof op === 'string' ? OPS.indexOf(op) : USER_OP + op.hash,
    view === null ? 0 : (TYPE_INDEX.get((view as { [Symbol.toStringTag]?: string })[Symbol.toStringTag] ?? 'DataView') ?? 0),
    count,
    counts,
    x1,
    x2,
  ];
}

const KIND_INDEX = new Map<string, number>(KINDS.map((k, i) => [k, i]));
const TYPE_INDEX = new Map<string, number>(TYPES.map((t, i) => [t, i + 1]));

/** What a signature says, for the error message: allreduce(5 x Float64Array, op sum). */
export function describeSignature(all: Float64Array, r: number): string {
  const w = (i: number): number => all[r * SIG_WORDS + i]!;
  const kind = KINDS[w(0)] ?? `collective #${w(0)}`;
  if (kind === 'refused') return `${KINDS[w(1)] ?? 'a collective'} with arguments it refused (it threw ${REFUSED_CODES[w(2)] ?? 'an error'} at the call)`;
  const parts: string[] = [];
  const type = w(3) > 0 ? TYPES[w(3) - 1] ?? 'typed array' : null;
  if (w(4) >= 0) parts.push(type !== null ? `${w(4)} x ${type}` : `${w(4)} elements`);
  else if (type !== null) parts.push(type);
  if (w(5) >= 0) parts.push(`counts #${w(5).toString(16).padStart(8, '0')}`);
  if (w(2) >= 0) parts.push(w(2) >= USER_OP ? `user op #${(w(2) - USER_OP).toString(16).padStart(8, '0')}` : `op ${OPS[w(2)] ?? w(2)}`);
  if (w(1) >= 0) parts.push(`root ${w(1)}`);
  if (w(6) >= 0 && kind === 'alltoallv') parts.push(`sending ${w(6)}, receiving ${w(7)} elements`);
  return `${kind}(${parts.join(', ')})`;
}

/** "rank 3", "ranks 0-2, 5". */
function rankList(ranks: readonly number[]): string {
  const runs: string[] = [];
  for (let i = 0; i < ranks.length;) {
    let j = i;
    while (j + 1 < ranks.length && ranks[j + 1] === ranks[j]! + 1) j++;
    runs.push(j === i ? `${ranks[i]}` : `${ranks[i]}-${ranks[j]}`);
    i = j + 1;
  }
  return `${ranks.length === 1 ? 'rank' : 'ranks'} ${runs.join(', ')}`;
}

/**
 * Compare every rank's signature (all: size x SIG_WORDS); throws
 * ERR_COLLECTIVE_MISMATCH naming who called what. Every rank sees the same
 * signatures, so every rank throws the same error, or none does.
 */
export function verifySignatures(all: Float64Array, size: number, call: number): void {
  // The common case, every rank alike, compares numbers only.
  let alike = true;
  for (let r = 1; r < size && alike; r++) for (let i = 0; i < AGREE; i++) if (all[r * SIG_WORDS + i] !== all[i]) { alike = false; break; }
  if (alike && KINDS[all[0]!] !== 'alltoallv') return;
  const groups = new Map<string, number[]>();
  for (let r = 0; r < size; r++) {
    const key = Array.from(all.subarray(r * SIG_WORDS, r * SIG_WORDS + AGREE)).join(',');
    const g = groups.get(key);
    if (g === undefined) groups.set(key, [r]); else g.push(r);
  }
  const lead = `collective mismatch at call ${call} on a communicator of ${size} ranks:`;
  const advice = 'every rank must call the same collectives in the same order with the same root, op, element type and counts. RAILCOMM_CHECK found it before any data moved, so the communicator is still usable';
  if (groups.size > 1) {
    const said = [...groups.values()].map((ranks) => `${rankList(ranks)} called ${describeSignature(all, ranks[0]!)}`);
    throw new RailcommError(ErrorCode.COLLECTIVE_MISMATCH, `${lead} ${said.join('; ')}; ${advice}`);
  }
  // alltoallv: what all ranks send must be what all ranks expect to receive.
  if (KINDS[all[0]!] === 'alltoallv') {
    let sent = 0, expected = 0;
    for (let r = 0; r < size; r++) { sent += all[r * SIG_WORDS + 6]!; expected += all[r * SIG_WORDS + 7]!; }
    if (sent !== expected) {
      const each = Array.from({ length: size }, (_, r) => `rank ${r} sends ${all[r * SIG_WORDS + 6]} and receives ${all[r * SIG_WORDS + 7]}`);
      throw new RailcommError(ErrorCode.COLLECTIVE_MISMATCH, `${lead} alltoallv's send counts add up to ${sent} elements over all ranks but its receive counts to ${expected} (${each.join(', ')}); ${advice}`);
    }
  }
}

/** Error codes a refusing rank names in its signature. */
const REFUSED_CODES = [ErrorCode.INVALID_ARG, ErrorCode.RANK, ErrorCode.TAG, ErrorCode.TRUNCATE, ErrorCode.CUDA];

/**
 * The signature of a call this rank refused at the call (its arguments were
 * wrong here): it never matches a call that ran, so every rank fails it.
 */
export function refusedSignature(kind: string, code: string): number[] {
  return [KIND_INDEX.get('refused')!, KIND_INDEX.get(kind) ?? -1, REFUSED_CODES.indexOf(code as (typeof REFUSED_CODES)[number]), 0, -1, -1, -1, -1];
}
