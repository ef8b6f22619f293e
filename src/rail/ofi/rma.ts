// The ofi rail's native one-sided parts that are plain data: the rail's part
// of a window's rkey (its provider key and base address), the engine's element
// types and ops as libfabric's, which atomics run natively, and the estimates
// that rank the rail among the others.

import type { Device, RailRemoteKey } from '../api.js';
import { isFloatType, OP_CSWAP, OP_LAND, OP_LOR, OP_MAX, OP_MIN } from '../../proto/rma/apply.js';

/** The engine's element types (apply.ts T_*) as libfabric datatypes. */
export const FI_TYPE = [0, 1, 2, 3, 4, 5, 8, 9, 6, 7];
/** The engine's op codes (apply.ts OP_*, OP_CSWAP) as libfabric ops. */
export const FI_OP = [2, 3, 0, 1, 7, 6, 9, 5, 4, 11, 10, 12];

/** Latency (us) and bandwidth (MB/s) estimates by provider, to rank rails (measured on loopback, bench/ofi). */
export function estimates(provider: string, kind: Device['kind']): { latencyUs: number; bandwidthMBps: number } {
  if (provider === 'shm') return { latencyUs: 1.5, bandwidthMBps: 8000 };
  if (provider.startsWith('tcp')) return { latencyUs: kind === 'loopback' ? 12 : 20, bandwidthMBps: 2000 };
  if (provider.startsWith('udp')) return { latencyUs: 25, bandwidthMBps: 500 };
  if (provider === 'sockets') return { latencyUs: 30, bandwidthMBps: 1000 };
  return { latencyUs: 5, bandwidthMBps: 10000 };
}

/** A peer's registration as this rail reaches it: an index into the binding's table of keys. */
export interface OfiRemoteKey extends RailRemoteKey {
  readonly index: number;
  /** The registration's address in its owner's process. */
  readonly base: number;
}

/*
 * The rail's part of a packed rkey (24 bytes):
 *   0 version u8 (1) | 1 flags u8 (bit 0: addressed by virtual address) | 2 reserved (6)
 *   8 base address f64 (exact: user addresses are below 2^53) | 16 key u64
 */
const KEY_BYTES = 24;
const KEY_VERSION = 1;

export function packKey(base: number, key: bigint, virtAddr: boolean): Uint8Array {
  const packed = new Uint8Array(KEY_BYTES);
  const v = new DataView(packed.buffer);
  v.setUint8(0, KEY_VERSION);
  v.setUint8(1, virtAddr ? 1 : 0);
  v.setFloat64(8, base, true);
  v.setBigUint64(16, key, true);
  return packed;
}

/** The base and key of a packed rail key; null when malformed. */
export function unpackKey(packed: Uint8Array): { base: number; key: bigint } | null {
  if (packed.byteLength !== KEY_BYTES) return null;
  const v = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  if (v.getUint8(0) !== KEY_VERSION) return null;
  return { base: v.getFloat64(8, true), key: v.getBigUint64(16, true) };
}

/**
 * Max elements of one native atomic for the engine's type and op (0: emulate),
 * from the domain's fi_query_atomic table (native/ofi: [(datatype * 13 + op) * 3 + plain|fetch|compare]).
 */
export function nativeAtomicCount(table: Int32Array, type: number, op: number, fetch: boolean): number {
  // JavaScript's semantics differ from C's for these: NaN in min/max, truthiness in land/lor, bit patterns in cswap.
  if (isFloatType(type) && (op === OP_MIN || op === OP_MAX || op === OP_LAND || op === OP_LOR || op === OP_CSWAP)) return 0;
  const dt = FI_TYPE[type];
  const fop = FI_OP[op];
  if (dt === undefined || fop === undefined) return 0;
  const col = op === OP_CSWAP ? 2 : fetch ? 1 : 0;
  return table[(dt * 13 + fop) * 3 + col]!;
}

