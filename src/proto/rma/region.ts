// Memory registration for one-sided operations: a registered region gets an
// id and a packed remote key (rkey) that tells a peer how to reach it: always
// by region id and offset through active messages, and directly when the peer
// can map the memory itself (threads of one process share the buffer; processes
// of one host map the region's named shared-memory segment).

import { RailcommError, ErrorCode } from '../../core/errors.js';

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

export class Region {
  readonly id: number;
  readonly bytes: Uint8Array;
  readonly share: number;
  /** Segment name while other processes may still need to map it. */
  segment: string | null;

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
}

/*
 * rkey (at most RKEY_MAX bytes):
 *   0 version u8 | 1 share kind u8 | 2 base alignment u8 | 3 reserved u8
 *   4 region id u32 | 8 length low u32 | 12 length high u32 | 16 owner pid u32
 *  20 text length u16 | 22 text (utf-8): "<host key>\n<segment name>" for SHARE_HOST
 */
export const RKEY_MAX = 256;
const RKEY_VERSION = 1;
const TWO32 = 4294967296;

export function packRkey(r: Region, hostKey: string): Uint8Array {
  const text = r.share === SHARE_HOST && r.segment !== null ? `${hostKey}\n${r.segment}` : '';
  const t = Buffer.from(text, 'utf8');
  if (22 + t.length > RKEY_MAX) throw new RailcommError(ErrorCode.INVALID_ARG, `remote key too long (${t.length} bytes of names)`);
  const out = new Uint8Array(22 + t.length);
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
}

export function unpackRkey(b: Uint8Array): UnpackedRkey {
  if (b.byteLength < 22) throw new RailcommError(ErrorCode.PROTOCOL, `remote key of ${b.byteLength} bytes is too short`);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (v.getUint8(0) !== RKEY_VERSION) throw new RailcommError(ErrorCode.PROTOCOL, `remote key version ${v.getUint8(0)} is not ${RKEY_VERSION}: mixed railcomm versions in one job`);
  const tl = v.getUint16(20, true);
  if (22 + tl > b.byteLength) throw new RailcommError(ErrorCode.PROTOCOL, 'remote key text runs past its end');
  const text = Buffer.from(b.buffer, b.byteOffset + 22, tl).toString('utf8');
  const nl = text.indexOf('\n');
  return {
    share: v.getUint8(1),
    align: v.getUint8(2),
    id: v.getUint32(4, true),
    length: v.getUint32(8, true) + v.getUint32(12, true) * TWO32,
    pid: v.getUint32(16, true),
    hostKey: nl < 0 ? '' : text.slice(0, nl),
    segment: nl < 0 ? '' : text.slice(nl + 1),
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

  register(bytes: Uint8Array, share: number, segment: string | null): Region {
    const r = new Region(this.nextId++, bytes, share, segment);
    this.byId.set(r.id, r);
    return r;
  }

  deregister(r: Region): void {
    this.byId.delete(r.id);
  }

  get(id: number): Region | undefined {
    return this.byId.get(id);
  }
}
