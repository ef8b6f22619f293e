// Wire format of one-sided operations emulated by active messages: the origin
// names a registered region of the target and an offset; the target applies
// the operation and, where the origin waits for something, answers REPLY.

/** Active message ids (the two-sided protocol uses 1..7; rails use 0). */
export const AM_RMA_PUT = 16;
export const AM_RMA_ACC = 17;
export const AM_RMA_GET = 18;
export const AM_RMA_ATOMIC = 19;
export const AM_RMA_FLUSH = 20;
export const AM_RMA_LOCK = 21;
export const AM_RMA_UNLOCK = 22;
export const AM_RMA_REPLY = 23;
/** A chunk of GET data (a REPLY whose payload goes straight into the origin's buffer). */
export const AM_RMA_GET_DATA = 24;

/*
 * PUT (16 bytes), payload = the bytes, written straight into the region:
 *   0 region id u32 | 4 offset low u32 | 8 offset high u32 | 12 reserved u32
 *
 * ACC (16 bytes), payload = operand elements:
 *   0 region id u32 | 4 offset low u32 | 8 offset high u32
 *  12 op u8 | 13 element type u8 | 14 reserved u16
 *
 * GET (24 bytes), no payload; the target answers REPLY chunks with the bytes:
 *   0 region id u32 | 4 offset low u32 | 8 offset high u32 | 12 op id u32
 *  16 length low u32 | 20 length high u32
 *
 * ATOMIC (32 bytes), no payload; the target answers REPLY with the old value (8 bytes):
 *   0 region id u32 | 4 offset low u32 | 8 offset high u32 | 12 op id u32
 *  16 op u8 | 17 element type u8 | 18 reserved u16 | 20 reserved u32
 *  24 operand (8 bytes, little endian, width of the type) | 32 compare value (8 bytes; compare-and-swap)
 *
 * FLUSH / LOCK / UNLOCK (16 bytes), answered by REPLY once done / granted / released:
 *   0 region id u32 | 4 op id u32 | 8 mode u32 (LOCK: 1 exclusive, 2 shared) | 12 reserved u32
 *
 * REPLY and GET_DATA (16 bytes), payload = an ATOMIC's old value (REPLY) or a chunk of GET data:
 *   0 op id u32 | 4 offset low u32 | 8 offset high u32 | 12 status u32 (0 ok, else an RMA_ERR_*)
 */
export const PUT_HDR = 16;
export const ACC_HDR = 16;
export const GET_HDR = 24;
export const ATOMIC_HDR = 40;
export const CTRL_HDR = 16;
export const REPLY_HDR = 16;

export const LOCK_EXCLUSIVE = 1;
export const LOCK_SHARED = 2;

export const RMA_OK = 0;
/** The region is not registered (freed, or never was). */
export const RMA_ERR_REGION = 1;
/** Offset and length fall outside the region. */
export const RMA_ERR_RANGE = 2;
/** Unknown op or element type, or misaligned atomic. */
export const RMA_ERR_OP = 3;

const TWO32 = 4294967296;

export function encodeTarget(v: DataView, region: number, offset: number): void {
  v.setUint32(0, region, true);
  v.setUint32(4, offset % TWO32, true);
  v.setUint32(8, Math.floor(offset / TWO32), true);
}
export const tgtRegion = (v: DataView, o: number): number => v.getUint32(o, true);
export const tgtOffset = (v: DataView, o: number): number => v.getUint32(o + 4, true) + v.getUint32(o + 8, true) * TWO32;

export function encodeAcc(v: DataView, region: number, offset: number, op: number, type: number): void {
  encodeTarget(v, region, offset);
  v.setUint8(12, op);
  v.setUint8(13, type);
  v.setUint16(14, 0, true);
}
export const accOp = (v: DataView, o: number): number => v.getUint8(o + 12);
export const accType = (v: DataView, o: number): number => v.getUint8(o + 13);

export function encodeGet(v: DataView, region: number, offset: number, opId: number, length: number): void {
  encodeTarget(v, region, offset);
  v.setUint32(12, opId, true);
  v.setUint32(16, length % TWO32, true);
  v.setUint32(20, Math.floor(length / TWO32), true);
}
export const getOpId = (v: DataView, o: number): number => v.getUint32(o + 12, true);
export const getLength = (v: DataView, o: number): number => v.getUint32(o + 16, true) + v.getUint32(o + 20, true) * TWO32;

export function encodeAtomic(v: DataView, region: number, offset: number, opId: number, op: number, type: number): void {
  encodeTarget(v, region, offset);
  v.setUint32(12, opId, true);
  v.setUint8(16, op);
  v.setUint8(17, type);
  v.setUint16(18, 0, true);
  v.setUint32(20, 0, true);
}
export const atomicOpId = (v: DataView, o: number): number => v.getUint32(o + 12, true);
export const atomicOp = (v: DataView, o: number): number => v.getUint8(o + 16);
export const atomicType = (v: DataView, o: number): number => v.getUint8(o + 17);
/** Byte offsets of the two 8-byte values inside an ATOMIC header. */
export const ATOMIC_OPERAND = 24;
export const ATOMIC_COMPARE = 32;

export function encodeCtrl(v: DataView, region: number, opId: number, mode: number): void {
  v.setUint32(0, region, true);
  v.setUint32(4, opId, true);
  v.setUint32(8, mode, true);
  v.setUint32(12, 0, true);
}
export const ctrlRegion = (v: DataView, o: number): number => v.getUint32(o, true);
export const ctrlOpId = (v: DataView, o: number): number => v.getUint32(o + 4, true);
export const ctrlMode = (v: DataView, o: number): number => v.getUint32(o + 8, true);

export function encodeReply(v: DataView, opId: number, offset: number, status: number): void {
  v.setUint32(0, opId, true);
  v.setUint32(4, offset % TWO32, true);
  v.setUint32(8, Math.floor(offset / TWO32), true);
  v.setUint32(12, status, true);
}
export const replyOpId = (v: DataView, o: number): number => v.getUint32(o, true);
export const replyOffset = (v: DataView, o: number): number => v.getUint32(o + 4, true) + v.getUint32(o + 8, true) * TWO32;
export const replyStatus = (v: DataView, o: number): number => v.getUint32(o + 12, true);
