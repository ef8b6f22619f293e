// What collective algorithms need from a communicator: its rank and size, and
// point-to-point in the collective matching space of one collective call (its
// own tag, from the communicator's collective sequence number). Helpers for
// element-range views and send-receive pairs.

import type { Request } from '../../proto/request.js';
import type { ReduceArray } from './ops.js';

export interface CollComm {
  readonly rank: number;
  readonly size: number;
  /** Scratch buffers of this communicator. */
  readonly scratch: ScratchPool;
  /** This call's tag in the collective context (the device collectives send device messages on it). */
  readonly tag?: number;
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
  await waitAllOrCancel([c.recv(into, from), c.send(out, to)]);
}

/**
 * Wait for every request; if one fails, cancel the receives still posted
 * (they must not write into the user's buffers after the collective failed).
 */
export async function waitAllOrCancel(reqs: readonly Request[]): Promise<void> {
  try {
    for (const q of reqs) await q.wait();
  } catch (e) {
    for (const q of reqs) q.cancel();
    throw e;
  }
}

/** Every rank has entered: dissemination over point-to-point, ceil(log2 p) rounds. */
export async function barrierDissemination(c: CollComm): Promise<void> {
  const token = new Uint8Array(0);
  for (let k = 1; k < c.size; k <<= 1) {
    const r = c.recv(token, (c.rank - k + c.size) % c.size);
    const s = c.send(token, (c.rank + k) % c.size);
    await s.wait();
    await r.wait();
  }
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

/**
 * Scratch buffers for collectives, reused across calls: a new typed array
 * per call means a new ArrayBuffer (an external allocation the GC must track),
 * which dominated small collectives. Buffers are taken and given back, so
 * overlapping nonblocking collectives never share one.
 */
export class ScratchPool {
  private readonly free = new Map<number, ArrayBuffer[]>();

  /** A zero-based typed array like `like` with n elements, over a pooled buffer. */
  take<T extends ReduceArray>(like: T, n: number): T {
    const bytes = Math.max(8, n * like.BYTES_PER_ELEMENT);
    let cls = 8;
    while (cls < bytes) cls *= 2;
    const list = this.free.get(cls);
    const buf = list !== undefined && list.length > 0 ? list.pop()! : new ArrayBuffer(cls);
    const C = like.constructor as new (b: ArrayBuffer, o: number, n: number) => T;
    return new C(buf, 0, n);
  }

  give(a: ReduceArray): void {
    const buf = a.buffer as ArrayBuffer;
    const list = this.free.get(buf.byteLength) ?? [];
    if (list.length < 8 && buf.byteLength <= 1 << 22) { list.push(buf); this.free.set(buf.byteLength, list); }
  }
}
