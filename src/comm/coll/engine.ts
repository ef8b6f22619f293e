// What collective algorithms need from a communicator: its rank and size, and
// point-to-point in the collective matching space of one collective call (its
// own tag, from the communicator's collective sequence number). Helpers for
// element-range views and send-receive pairs.

import type { Request } from '../../proto/request.js';
import type { ReduceArray } from './ops.js';

export interface CollComm {
  readonly rank: number;
  readonly size: number;
  /** Send bytes to a rank of the communicator, on this collective's tag. */
  send(bytes: Uint8Array, peer: number): Request;
  /** Receive bytes from a rank of the communicator, on this collective's tag. */
  recv(bytes: Uint8Array, peer: number): Request;
}

/** The bytes of elements [start, start + count) of a typed array. */
export function bytesOf(a: ArrayBufferView, start = 0, count?: number): Uint8Array {
  const el = (a as ReduceArray).BYTES_PER_ELEMENT ?? 1;
  const n = count ?? ((a.byteLength / el) - start);
  return new Uint8Array(a.buffer, a.byteOffset + start * el, n * el);
}

/** Exchange: send `out` to `to` while receiving `into` from `from`. */
export async function sendrecv(c: CollComm, out: Uint8Array, to: number, into: Uint8Array, from: number): Promise<void> {
  const r = c.recv(into, from);
  const s = c.send(out, to);
  await s.wait();
  await r.wait();
}

/** Prefix sums: displacement of each rank's block, in elements. */
export function displacements(counts: readonly number[]): number[] {
  const d = new Array<number>(counts.length);
  let acc = 0;
  for (let i = 0; i < counts.length; i++) { d[i] = acc; acc += counts[i]!; }
  return d;
}

/** Split n elements into p nearly equal blocks: [start, count] of block i. */
export function block(n: number, p: number, i: number): [number, number] {
  const base = Math.floor(n / p);
  const extra = n % p;
  return [i * base + Math.min(i, extra), base + (i < extra ? 1 : 0)];
}

export const mod = (a: number, p: number): number => ((a % p) + p) % p;
