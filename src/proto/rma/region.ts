// Memory registration for one-sided operations: a registered region gets an
// id and a packed remote key (rkey) that tells a peer how to reach it: always
// by region id and offset through active messages, and directly when the peer
// can map the memory itself (threads of one process share the buffer; processes
// of one host map the region's named shared-memory segment).

import { RailcommError, ErrorCode } from '../../core/errors.js';
import type { RailRemoteKey } from '../../rail/api.js';

/** Named shared-memory segments (the native addon); null where it is not built. */
export interface SharedSegments {
  shmCreate(name: string, bytes: number): SharedArrayBuffer;
  shmOpen(name: string): SharedArrayBuffer;
  shmUnlink(name: string): void;
}

export const SHARE_NONE = 0;
/** A SharedArrayBuffer the other threads of this process can be handed. */
export const SHARE_THREADS = 1;
/** A /dev/shm segment other processes of this host can map by name. */
export const SHARE_HOST = 2;

/** A rail's registration of a region (native one-sided operations): its part of the rkey. */
export interface RailKey {
  readonly rail: string;
  readonly packed: Uint8Array;
}

export class Region {
  readonly id: number;
  readonly bytes: Uint8Array;
  readonly share: number;
  /** Segment name while other processes may still need to map it. */
  segment: string | null;
  /** Rails that registered it (ofi), and how to release each registration. */
  readonly rails: Array<RailKey & { release(): void }> = [];

  constructor(id: number, bytes: Uint8Array, share: number, segment: string | null) {
    this.id = id; this.bytes = bytes; this.share = share; this.segment = segment;
  }
}

/** What a peer knows of a region once it unpacked the rkey. */
export interface RemoteRegion {
  /** The owner's rank in the job. */
  readonly world: number;
  readonly id: number;
  readonly length: number;
  /** byteOffset of the region modulo 8 (atomics need aligned elements). */
  readonly align: number;
  /** The region's memory when this rank can touch it directly; null: go through the target. */
  local: Uint8Array | null;
  /** Rails that reach it natively (the owner's registrations), and the one key unpacked for this rank's lane. */
  rails?: readonly RailKey[];
  native?: { rail: string; key: RailRemoteKey | null };
}

/*
 * rkey (at most RKEY_MAX bytes):
 *   0 version u8 | 1 share kind u8 | 2 base alignment u8 | 3 reserved u8
 *   4 region id u32 | 8 length low u32 | 12 length high u32 | 16 owner pid u32
 *  20 text length u16 | 22 text (utf-8): "<host key>\n<segment name>" for SHARE_HOST
 *  then rail keys (native one-sided operations): count u8, and per key
 *     name length u8 | rail name (utf-8) | key length u8 | the rail's packed key
 *  (count 0, or the zero padding of a fixed-size slot, or the end: none)
 */
export const RKEY_MAX = 256;
const RKEY_VERSION = 1;
const TWO32 = 4294967296;

export function packRkey(r: Region, hostKey: string): Uint8Array {
  const text = r.share === SHARE_HOST && r.segment !== null ? `${hostKey}\n${r.segment}` : '';
  const t = Buffer.from(text, 'utf8');
  if (22 + t.length > RKEY_MAX) throw new RailcommError(ErrorCode.INVALID_ARG, `remote key too long (${t.length} bytes of names)`);
  // Rail keys that fit; one that does not leaves its rail emulating (never an error).
  const keys: Uint8Array[] = [];
  let room = RKEY_MAX - 22 - t.length - 1;
  for (const k of r.rails) {
    const name = Buffer.from(k.rail, 'utf8');
    const need = 2 + name.length + k.packed.length;
    if (name.length > 255 || k.packed.length > 255 || need > room || keys.length === 255) continue;
    const e = new Uint8Array(need);
    e[0] = name.length; e.set(name, 1); e[1 + name.length] = k.packed.length; e.set(k.packed, 2 + name.length);
    keys.push(e);
    room -= need;
  }
  const keyBytes = keys.reduce((n, k) => n + k.length, 0);
  const out = new Uint8Array(22 + t.length + (keys.length > 0 ? 1 + keyBytes : 0));
  const v = new DataView(out.buffer);
  v.setUint8(0, RKEY_VERSION);
  v.setUint8(1, r.share);
  v.setUint8(2, r.bytes.byteOffset & 7);
  v.setUint32(4, r.id, true);
  v.setUint32(8, r.bytes.byteLength % TWO32, true);
  v.setUint32(12, Math.floor(r.bytes.byteLength / TWO32), true);
  v.setUint32(16, process.pid, true);
  v.setUint16(20, t.length, true);
  out.set(t, 22);
  if (keys.length > 0) {
    let o = 22 + t.length;
    out[o++] = keys.length;
    for (const k of keys) { out.set(k, o); o += k.length; }
  }
  return out;
}

export interface UnpackedRkey {
  share: number;
  align: number;
  id: number;
  length: number;
  pid: number;
  hostKey: string;
  segment: string;
  rails: RailKey[];
}

export function unpackRkey(b: Uint8Array): UnpackedRkey {
  if (b.byteLength < 22) throw new RailcommError(ErrorCode.PROTOCOL, `remote key of ${b.byteLength} bytes is too short`);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (v.getUint8(0) !== RKEY_VERSION) throw new RailcommError(ErrorCode.PROTOCOL, `remote key version ${v.getUint8(0)} is not ${RKEY_VERSION}: mixed railcomm versions in one job`);
  const tl = v.getUint16(20, true);
  if (22 + tl > b.byteLength) throw new RailcommError(ErrorCode.PROTOCOL, 'remote key text runs past its end');
  const text = Buffer.from(b.buffer, b.byteOffset + 22, tl).toString('utf8');
  const nl = text.indexOf('\n');
  const rails: RailKey[] = [];
  let o = 22 + tl;
  const count = o < b.byteLength ? b[o++]! : 0;
  for (let i = 0; i < count; i++) {
    if (o >= b.byteLength) throw new RailcommError(ErrorCode.PROTOCOL, 'remote key: rail keys run past its end');
    const nameLen = b[o]!;
    if (o + 1 + nameLen >= b.byteLength) throw new RailcommError(ErrorCode.PROTOCOL, 'remote key: rail keys run past its end');
    const rail = Buffer.from(b.buffer, b.byteOffset + o + 1, nameLen).toString('utf8');
    const keyLen = b[o + 1 + nameLen]!;
    const at = o + 2 + nameLen;
    if (at + keyLen > b.byteLength) throw new RailcommError(ErrorCode.PROTOCOL, 'remote key: rail keys run past its end');
    rails.push({ rail, packed: b.slice(at, at + keyLen) });
    o = at + keyLen;
  }
  return {
    share: v.getUint8(1),
    align: v.getUint8(2),
    id: v.getUint32(4, true),
    length: v.getUint32(8, true) + v.getUint32(12, true) * TWO32,
    pid: v.getUint32(16, true),
    hostKey: nl < 0 ? '' : text.slice(0, nl),
    segment: nl < 0 ? '' : text.slice(nl + 1),
    rails,
  };
}

/**
 * This rank's registered regions. Each registration is a region of its own,
 * also over bytes registered before: a region is a window's identity at the
 * target (its locks, what freeing it answers), and MPI windows over the same
 * memory are still separate windows. Registering costs only an id here (no
 * memory is pinned), so nothing is saved by sharing one. Ids are never
 * reused, so a peer holding a key to a freed region gets an error, never
 * other memory.
 */
export class RegionTable {
  private readonly byId = new Map<number, Region>();
  private nextId = 1;
  /** Registers a new region with the rails that run one-sided operations natively (set by the engine). */
  onRegister: ((r: Region) => void) | null = null;

  register(bytes: Uint8Array, share: number, segment: string | null): Region {
    const r = new Region(this.nextId++, bytes, share, segment);
    this.byId.set(r.id, r);
    this.onRegister?.(r);
    return r;
  }

  deregister(r: Region): void {
    this.byId.delete(r.id);
    for (const k of r.rails.splice(0)) k.release();
  }

  get(id: number): Region | undefined {
    return this.byId.get(id);
  }
}
