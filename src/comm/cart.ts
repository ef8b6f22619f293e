// Cartesian process topologies (MPI_Dims_create, MPI_Cart_*): a balanced grid
// shape for n ranks, and the rank <-> coordinates arithmetic of a grid whose
// ranks are laid out in row-major order (the last dimension varies fastest).

import { RailcommError, ErrorCode } from '../core/errors.js';
import { describe } from '../core/bytes.js';
import { kindOf } from './checks.js';
import { PROC_NULL } from '../proto/matching.js';

const invalid = (m: string): RailcommError => new RailcommError(ErrorCode.INVALID_ARG, m);

/** Largest number of dimensions accepted (MPI sets none; past this the search is pointless). */
const MAX_DIMS = 64;

/**
 * A grid shape for n ranks in d dimensions, as balanced as possible, in
 * non-increasing order (MPI_Dims_create). d may instead be an array of d
 * entries: non-zero ones are kept as given, zeros are filled. Throws
 * ERR_INVALID_ARG when the fixed entries do not divide n.
 */
export function dimsCreate(n: number, d: number | readonly number[]): number[] {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) throw invalid(`dimsCreate(n, d): n must be a positive integer (the number of ranks), got ${typeof n === 'number' ? n : kindOf(n)}`);
  let given: number[];
  if (typeof d === 'number') {
    if (!Number.isSafeInteger(d) || d < 0 || d > MAX_DIMS) throw invalid(`dimsCreate(n, d): d must be an integer number of dimensions in 0..${MAX_DIMS}, got ${d}`);
    given = new Array<number>(d).fill(0);
  } else if (Array.isArray(d)) {
    if (d.length > MAX_DIMS) throw invalid(`dimsCreate(n, dims): at most ${MAX_DIMS} dimensions, got ${d.length}`);
    given = d.map((x, i) => {
      if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) throw invalid(`dimsCreate(n, dims): dims[${i}] must be 0 (to be chosen) or a positive integer (kept), got ${typeof x === 'number' ? x : kindOf(x)}`);
      return x;
    });
  } else {
    throw invalid(`dimsCreate(n, d): d must be a number of dimensions or an array of dimensions (0 = choose), got ${describe(d)}`);
  }
  const fixed = given.reduce((a, x) => (x > 0 ? a * x : a), 1);
  const free = given.filter((x) => x === 0).length;
  if (n % fixed !== 0 || (free === 0 && fixed !== n)) {
    throw invalid(`dimsCreate(${n}, [${given.join(', ')}]): the fixed dimensions multiply to ${fixed}, which ${free === 0 ? `is not ${n}` : `does not divide ${n}`}; change them or pass 0 for dimensions railcomm may choose`);
  }
  const m = n / fixed;
  const chosen = balanced(m, free, m, divisors(m));
  // balanced() always finds one: 1 x ... x m is a candidate.
  let k = 0;
  return given.map((x) => (x > 0 ? x : chosen![k++]!));
}

/**
 * The lexicographically smallest non-increasing k factors of m, each at most
 * `max`: the first factor as small as it can be, then the next, and so on,
 * which keeps them as close to each other as possible. null if none exists.
 */
function balanced(m: number, k: number, max: number, divs: readonly number[]): number[] | null {
  if (k === 0) return m === 1 ? [] : null;
  if (k === 1) return m <= max ? [m] : null;
  // Candidates are the divisors of the whole (divs, ascending), which hold m's:
  // the first (largest) factor is at least the k-th root of m.
  for (const f of divs) {
    if (f > m || f > max) break;
    if (m % f !== 0 || Math.pow(f, k) < m) continue;
    const rest = balanced(m / f, k - 1, f, divs);
    if (rest !== null) return [f, ...rest];
  }
  return null;
}

/** The divisors of m, ascending (trial division to its square root: a prime of 2^53 takes ~0.1 s, not a loop to m). */
function divisors(m: number): number[] {
  const low: number[] = [];
  const high: number[] = [];
  for (let i = 1; i * i <= m; i++) {
    if (m % i !== 0) continue;
    low.push(i);
    if (i * i !== m) high.push(m / i);
  }
  return low.concat(high.reverse());
}

/** dims and periods of a grid, checked; periods may be one boolean for every dimension. */
export function checkGrid(dims: unknown, periods: unknown, size: number, what: string): { dims: number[]; periods: boolean[] } {
  if (!Array.isArray(dims) || dims.length === 0 || dims.length > MAX_DIMS) throw invalid(`${what}: dims must be an array of 1..${MAX_DIMS} positive integers (dimsCreate(size, d) makes one), got ${Array.isArray(dims) ? `[]` : describe(dims)}`);
  const d = dims.map((x: unknown, i) => {
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 1) throw invalid(`${what}: dims[${i}] must be a positive integer, got ${typeof x === 'number' ? x : kindOf(x)}`);
    return x;
  });
  let p: boolean[];
  if (typeof periods === 'boolean') p = d.map(() => periods);
  else if (Array.isArray(periods) && periods.length === d.length && periods.every((x) => typeof x === 'boolean')) p = periods as boolean[];
  else throw invalid(`${what}: periods must be an array of ${d.length} booleans (true: that dimension wraps around) or one boolean for all, got ${Array.isArray(periods) ? `[${periods.map(String).join(', ')}]` : describe(periods)}`);
  const cells = d.reduce((a, x) => a * x, 1);
  if (cells > size) throw invalid(`${what}: the grid ${d.join(' x ')} has ${cells} cells but the communicator only ${size} ranks; use dimsCreate(${size}, ${d.length})`);
  return { dims: d, periods: p };
}

/**
 * Neighbours along one dimension: who sends to this rank, and to whom it
 * sends; PROC_NULL beyond a non-periodic edge (a send or receive naming it
 * does nothing, so a halo exchange needs no branch there).
 */
export interface Shift {
  readonly source: number;
  readonly dest: number;
}

/** The grid of a Cartesian communicator: rank r sits at coordinates coordsOf(r), row-major. */
export class CartTopology {
  readonly dims: readonly number[];
  readonly periods: readonly boolean[];
  /** Ranks in the grid (the product of dims). */
  readonly cells: number;

  constructor(dims: readonly number[], periods: readonly boolean[]) {
    this.dims = Object.freeze([...dims]);
    this.periods = Object.freeze([...periods]);
    this.cells = dims.reduce((a, x) => a * x, 1);
  }

  /** Coordinates of rank r (MPI_Cart_coords). */
  coordsOf(r: unknown): number[] {
    if (typeof r !== 'number' || !Number.isInteger(r)) throw new RailcommError(ErrorCode.RANK, `coordsOf: rank ${kindOf(r)}; pass a rank of the grid (0..${this.cells - 1})`);
    if (r < 0 || r >= this.cells) throw new RailcommError(ErrorCode.RANK, `coordsOf: rank ${r} is not in the grid (0..${this.cells - 1})`);
    const c = new Array<number>(this.dims.length);
    let rest = r;
    for (let i = this.dims.length - 1; i >= 0; i--) {
      c[i] = rest % this.dims[i]!;
      rest = Math.floor(rest / this.dims[i]!);
    }
    return c;
  }

  /**
   * Rank at coordinates (MPI_Cart_rank): periodic dimensions wrap; outside a
   * non-periodic one throws ERR_RANK.
   */
  rankOf(coords: unknown): number {
    if (!Array.isArray(coords) || coords.length !== this.dims.length) {
      throw invalid(`rankOf: coords must be an array of ${this.dims.length} integers, got ${Array.isArray(coords) ? `${coords.length} values` : describe(coords)}`);
    }
    coords.forEach((x: unknown, i) => {
      if (typeof x !== 'number' || !Number.isInteger(x)) throw invalid(`rankOf: coords[${i}] ${kindOf(x)}`);
    });
    const r = this.rankAt(coords as number[]);
    if (r === null) throw new RailcommError(ErrorCode.RANK, `rankOf: [${coords.join(', ')}] is outside the grid ${this.dims.join(' x ')} in a dimension that does not wrap around (periods [${this.periods.join(', ')}])`);
    return r;
  }

  /** rankOf without checks; null outside a non-periodic dimension. */
  rankAt(coords: readonly number[]): number | null {
    let r = 0;
    for (let i = 0; i < this.dims.length; i++) {
      const n = this.dims[i]!;
      let c = coords[i]!;
      if (c < 0 || c >= n) {
        if (!this.periods[i]) return null;
        c = ((c % n) + n) % n;
      }
      r = r * n + c;
    }
    return r;
  }

  /** MPI_Cart_shift for the rank at `coords`. */
  shift(coords: readonly number[], dim: unknown, disp: unknown): Shift {
    if (typeof dim !== 'number' || !Number.isInteger(dim) || dim < 0 || dim >= this.dims.length) {
      throw invalid(`shift(dim, disp): dim must be a dimension index 0..${this.dims.length - 1}, got ${typeof dim === 'number' ? dim : kindOf(dim)}`);
    }
    if (typeof disp !== 'number' || !Number.isSafeInteger(disp)) throw invalid(`shift(dim, disp): disp ${kindOf(disp)}; pass a displacement such as 1 or -1`);
    const at = [...coords];
    at[dim] = coords[dim]! + disp;
    const dest = this.rankAt(at) ?? PROC_NULL;
    at[dim] = coords[dim]! - disp;
    const source = this.rankAt(at) ?? PROC_NULL;
    return Object.freeze({ source, dest });
  }
}
