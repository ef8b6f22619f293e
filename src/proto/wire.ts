// Protocol-layer active messages: ids and header layouts for tagged
// point-to-point (eager, rendezvous RTS/CTS/DATA/FIN) and flow control.
// Headers are little endian; nothing outside this file reads raw offsets.

/** Active message ids (0 is reserved for rails' own control frames). */
export const AM_EAGER = 1;
export const AM_RTS = 2;
export const AM_CTS = 3;
export const AM_DATA = 4;
export const AM_CREDIT = 5;
export const AM_FIN = 6;
export const AM_BYE = 7;
export const AM_REVOKE = 8;
/** A sender gives up a large message it announced (its buffer was detached): after the ids 9-31 in use elsewhere. */
export const AM_ABANDON = 32;
export const AM_MAX = 40;

/*
 * EAGER (20 bytes), payload = the message
 *   0 context id u32 | 4 source rank in that communicator u32 | 8 tag i32
 *  12 sequence number per peer u32 | 16 eager credits returned u32
 *
 * RTS (32 bytes), no payload: the first 20 bytes as EAGER, then
 *  20 send request id u32 | 24 message size low u32 | 28 size high u32
 *
 * CTS (16 bytes): 0 send request id u32 | 4 receive request id u32
 *   8 flags u32 (CTS_DISCARD: too small a buffer; CTS_REFUSED_*: no receive will
 *   ever match it) | 12 credits u32
 *
 * DATA (12 bytes), payload = one chunk, written straight into the receive buffer:
 *   0 receive request id u32 | 4 offset low u32 | 8 offset high u32
 *
 * CREDIT (4 bytes): 0 eager credits returned u32
 * FIN (4 bytes): 0 send request id u32 (the receiver fetched the data itself)
 *
 * BYE (4 bytes): 0 sequence number per peer u32. The sender called finalize():
 *   it starts no message after this one (it takes a sequence number, so it is
 *   handled after every message sent before it).
 * REVOKE (8 bytes): 0 context id u32 | 4 world rank that failed u32. A member
 *   of a collective context saw that rank fail: no collective on it can finish.
 * ABANDON (4 bytes): 0 receive request id u32. The sender cannot send the data
 *   of the large message that receive asked for (the user detached or shrank
 *   its buffer after the announcement): the receive fails, nothing more comes.
 */
export const EAGER_HDR = 20;
export const RTS_HDR = 32;
export const CTS_HDR = 16;
export const DATA_HDR = 12;
export const CREDIT_HDR = 4;
export const FIN_HDR = 4;
export const BYE_HDR = 4;
export const REVOKE_HDR = 8;
export const ABANDON_HDR = 4;
/** CTS flags: the receiver's buffer is too small (it reports truncation; the send succeeds). */
export const CTS_DISCARD = 1;
/** The receiver finalized without matching the message: the send fails. */
export const CTS_REFUSED_FINALIZED = 2;
/** The message was for a collective that broke at the receiver (a member failed): the send fails. */
export const CTS_REFUSED_BROKEN = 4;

/** Bytes of eager credit a message costs beyond its payload (queue entry overhead). */
export const EAGER_OVERHEAD = 64;

const TWO32 = 4294967296;

export function encodeMatchHeader(v: DataView, ctx: number, src: number, tag: number, seq: number, credits: number): void {
  v.setUint32(0, ctx, true);
  v.setUint32(4, src, true);
  v.setInt32(8, tag, true);
  v.setUint32(12, seq, true);
  v.setUint32(16, credits, true);
}

export function encodeRts(v: DataView, ctx: number, src: number, tag: number, seq: number, credits: number, sendId: number, size: number): void {
  encodeMatchHeader(v, ctx, src, tag, seq, credits);
  v.setUint32(20, sendId, true);
  v.setUint32(24, size % TWO32, true);
  v.setUint32(28, Math.floor(size / TWO32), true);
}

export const hdrCtx = (v: DataView, o: number): number => v.getUint32(o, true);
export const hdrSrc = (v: DataView, o: number): number => v.getUint32(o + 4, true);
export const hdrTag = (v: DataView, o: number): number => v.getInt32(o + 8, true);
export const hdrSeq = (v: DataView, o: number): number => v.getUint32(o + 12, true);
export const hdrCredits = (v: DataView, o: number): number => v.getUint32(o + 16, true);
export const rtsSendId = (v: DataView, o: number): number => v.getUint32(o + 20, true);
export const rtsSize = (v: DataView, o: number): number => v.getUint32(o + 24, true) + v.getUint32(o + 28, true) * TWO32;

export function encodeCts(v: DataView, sendId: number, recvId: number, flags: number, credits: number): void {
  v.setUint32(0, sendId, true);
  v.setUint32(4, recvId, true);
  v.setUint32(8, flags, true);
  v.setUint32(12, credits, true);
}
export const ctsSendId = (v: DataView, o: number): number => v.getUint32(o, true);
export const ctsRecvId = (v: DataView, o: number): number => v.getUint32(o + 4, true);
export const ctsFlags = (v: DataView, o: number): number => v.getUint32(o + 8, true);
export const ctsCredits = (v: DataView, o: number): number => v.getUint32(o + 12, true);

export function encodeData(v: DataView, recvId: number, offset: number): void {
  v.setUint32(0, recvId, true);
  v.setUint32(4, offset % TWO32, true);
  v.setUint32(8, Math.floor(offset / TWO32), true);
}
export const dataRecvId = (v: DataView, o: number): number => v.getUint32(o, true);
export const dataOffset = (v: DataView, o: number): number => v.getUint32(o + 4, true) + v.getUint32(o + 8, true) * TWO32;

export function encodeU32(v: DataView, x: number): void {
  v.setUint32(0, x, true);
}

export function encodeRevoke(v: DataView, ctx: number, failedWorld: number): void {
  v.setUint32(0, ctx, true);
  v.setUint32(4, failedWorld, true);
}
export const revokeCtx = (v: DataView, o: number): number => v.getUint32(o, true);
export const revokeFailed = (v: DataView, o: number): number => v.getUint32(o + 4, true);
export const readU32 = (v: DataView, o: number): number => v.getUint32(o, true);
