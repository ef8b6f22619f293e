// The ofi rail's wire format: one frame per libfabric message (a frame head,
// the AM header, the payload), the rail's own control frames (HELLO carrying
// the sender's address and proof of the job key, BYE), and the rail address
// peers find through wire-up.

import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * Frame (one fi_send; the receiver's slot holds it whole):
 *   byte 0  am u8            active message id (0: the rail's own control frame)
 *        1  flags u8         control frames: F_HELLO, F_BYE, F_PING
 *        2  hdrLen u16       AM header bytes
 *        4  payLen u32       payload bytes
 *        8  src rank u32     the sender's rank ...
 *       12  src job u32      ... and job: its endpoint id
 *       16  seq u32          frames from one sender, numbered from 0 (its HELLO)
 *       20  AM header (hdrLen bytes), then the payload (payLen bytes)
 *
 * Providers match receives in the order sent (FI_ORDER_SAS) but may complete
 * them out of order (tcp;ofi_rxm finishes a large message, read by
 * rendezvous, after small ones sent behind it): the receiver delivers by seq,
 * keeping a frame that came early in its receive slot until its turn.
 *
 * HELLO (am 0, F_HELLO), the first frame to each peer:
 *   header  = MAC (16 bytes): HMAC-SHA256(job key, "<from>><to>|<address>") truncated
 *   payload = the sender's rail address (utf-8), for replies to a peer not looked up yet
 * BYE (am 0, F_BYE): the sender finalized; nothing follows.
 * PING (am 0, F_PING): nothing; sent so that the sender's provider reports a
 *   connection its peer's death broke (a synchronous wait's liveness check).
 */
export const FRAME_HEAD = 20;
/** Largest AM header a frame carries. */
export const HEADER_MAX = 256;
/** Largest payload copied at send (a large transmit entry holds head, header and payload). */
export const COPY_MAX = 65536;
/** A payload up to this size is copied behind the header in the rail's frame head and sent with sendHead (no typed-array lookups in the binding). */
export const HEAD_PAYLOAD_MAX = 256;
export const AM_CONTROL = 0;
export const F_HELLO = 1;
export const F_BYE = 2;
export const F_PING = 3;
export const MAC_BYTES = 16;

export function encodeHead(v: DataView, am: number, flags: number, hdrLen: number, payLen: number, rank: number, job: number, seq: number): void {
  v.setUint8(0, am);
  v.setUint8(1, flags);
  v.setUint16(2, hdrLen, true);
  v.setUint32(4, payLen, true);
  v.setUint32(8, rank, true);
  v.setUint32(12, job, true);
  v.setUint32(16, seq, true);
}

export const headAm = (v: DataView, o: number): number => v.getUint8(o);
export const headFlags = (v: DataView, o: number): number => v.getUint8(o + 1);
export const headHdrLen = (v: DataView, o: number): number => v.getUint16(o + 2, true);
export const headPayLen = (v: DataView, o: number): number => v.getUint32(o + 4, true);
export const headRank = (v: DataView, o: number): number => v.getUint32(o + 8, true);
export const headJob = (v: DataView, o: number): number => v.getUint32(o + 12, true);
export const headSeq = (v: DataView, o: number): number => v.getUint32(o + 16, true);

/** The HELLO's proof that its sender holds the job key, bound to both ends and the sender's address. */
export function helloMac(jobKey: string, from: bigint, to: bigint, address: string): Buffer {
  return createHmac('sha256', jobKey).update(`${from}>${to}|${address}`).digest().subarray(0, MAC_BYTES);
}

export function checkMac(expected: Buffer, got: Uint8Array): boolean {
  return got.byteLength === expected.byteLength && timingSafeEqual(expected, got);
}

/**
 * A rail address: `ofi1|<provider>|<domain>|<host key>|<pid>|<fi_getname, base64url>`,
 * then `|<context>` for a context of a scalable endpoint (the name is the
 * scalable endpoint's, shared by the thread ranks of one process).
 */
export interface OfiAddress {
  provider: string;
  domain: string;
  host: string;
  pid: number;
  name: Buffer;
  /** Receive context of a scalable endpoint; -1: a plain endpoint. */
  ctx: number;
}

const TAG = 'ofi1';

export function encodeAddress(a: OfiAddress): string {
  const p = [TAG, a.provider, a.domain, a.host, String(a.pid), a.name.toString('base64url')];
  if (a.ctx >= 0) p.push(String(a.ctx));
  return p.join('|');
}

export function decodeAddress(text: string): OfiAddress | null {
  const p = text.split('|');
  if ((p.length !== 6 && p.length !== 7) || p[0] !== TAG) return null;
  const pid = Number(p[4]);
  if (!Number.isSafeInteger(pid) || pid <= 0 || p[1] === '' || !/^[A-Za-z0-9_-]+$/.test(p[5]!)) return null;
  const name = Buffer.from(p[5]!, 'base64url');
  if (name.length === 0 || name.length > 512) return null;
  const ctx = p.length === 7 ? Number(p[6]) : -1;
  if (p.length === 7 && !(/^\d{1,3}$/.test(p[6]!) && ctx < 256)) return null;
  return { provider: p[1]!, domain: p[2]!, host: p[3]!, pid, name, ctx };
}
