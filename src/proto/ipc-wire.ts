// Wire formats of single-copy rendezvous (RGET) and its lazy negotiation:
// the RTS that carries the sender's buffer address, FIN, and the IPC
// request/answer pair. Little endian; nothing else reads these offsets.

import { RTS_HDR } from './wire.js';

/*
 * Ids from the top of the AM space, away from the ones the protocol grows upwards.
 *
 * RTS_RGET (40 bytes), no payload: an RTS (proto/wire.ts, 32 bytes), then
 *  32 address of the sender's buffer in the sender's process u64
 *
 * RTS_SEG (44 bytes), no payload: an RTS, then the sender's buffer as a place in
 * one of its registered shared segments (comm.alloc), which the receiver maps:
 *  32 segment id u32 | 36 offset low u32 | 40 offset high u32
 *
 * RTS_RDMA (56 bytes), no payload: an RTS, then the rail's packed key of the sender's
 * buffer, registered for remote reads (rails with native one-sided operations: ofi):
 *  32 packed key (24 bytes; rail/ofi/rma.ts: version, flags, base address, provider key)
 *
 * FIN (proto/wire.ts AM_FIN, 4 bytes): 0 send request id u32 (the receiver read the data itself)
 *
 * IPC_REQ (16 bytes): may you read my memory? Read 4 bytes here and compare.
 *   0 cookie address u64 | 8 cookie u32 | 12 attempt u32
 *
 * IPC_ACK (4 bytes): 0 status u32 (IPC_YES, IPC_NO: never, IPC_LATER: not ready, ask again)
 *
 * CTS_PUT (24 bytes), receiver -> sender, instead of CTS for a large RTS_RGET:
 * "I read [0, split) myself; write [split, size) into my buffer here" (both copy at once)
 *   0 send request id u32 | 4 receive request id u32 | 8 split low u32 | 12 split high u32
 *  16 address of the receive buffer in the receiver's process u64
 *
 * PUT_DONE (12 bytes), sender -> receiver: wrote its part
 *   0 receive request id u32 | 4 bytes written low u32 | 8 high u32
 */
export const AM_IPC_REQ = 28;
export const AM_IPC_ACK = 29;
export const AM_RTS_RGET = 30;
export const AM_RTS_SEG = 26;
export const AM_RTS_RDMA = 25;
/** Bytes of a rail's packed key in RTS_RDMA (the ofi rail's; a rail with another size does not take this path). */
export const RDMA_KEY_BYTES = 24;
export const RTS_RDMA_HDR = RTS_HDR + RDMA_KEY_BYTES;
export const RTS_SEG_HDR = RTS_HDR + 12;
export const AM_CTS_PUT = 31;
export const AM_PUT_DONE = 27;
export const CTS_PUT_HDR = 24;
export const PUT_DONE_HDR = 12;
export const RTS_RGET_HDR = RTS_HDR + 8;
export const IPC_REQ_HDR = 16;
export const IPC_ACK_HDR = 4;
export const IPC_YES = 1;
export const IPC_NO = 2;
export const IPC_LATER = 3;

export const encodeRgetAddress = (v: DataView, address: bigint): void => v.setBigUint64(RTS_HDR, address, true);
export const rgetAddress = (v: DataView, o: number): bigint => v.getBigUint64(o + RTS_HDR, true);

export function encodeIpcReq(v: DataView, address: bigint, cookie: number, attempt: number): void {
  v.setBigUint64(0, address, true);
  v.setUint32(8, cookie, true);
  v.setUint32(12, attempt, true);
}
export const ipcReqAddress = (v: DataView, o: number): bigint => v.getBigUint64(o, true);
export const ipcReqCookie = (v: DataView, o: number): number => v.getUint32(o + 8, true);
export const encodeIpcAck = (v: DataView, status: number): void => v.setUint32(0, status, true);
export const ipcAckStatus = (v: DataView, o: number): number => v.getUint32(o, true);

const TWO32 = 4294967296;

export function encodeCtsPut(v: DataView, sendId: number, recvId: number, split: number, address: bigint): void {
  v.setUint32(0, sendId, true);
  v.setUint32(4, recvId, true);
  v.setUint32(8, split % TWO32, true);
  v.setUint32(12, Math.floor(split / TWO32), true);
  v.setBigUint64(16, address, true);
}
export const ctsPutSendId = (v: DataView, o: number): number => v.getUint32(o, true);
export const ctsPutRecvId = (v: DataView, o: number): number => v.getUint32(o + 4, true);
export const ctsPutSplit = (v: DataView, o: number): number => v.getUint32(o + 8, true) + v.getUint32(o + 12, true) * TWO32;
export const ctsPutAddress = (v: DataView, o: number): bigint => v.getBigUint64(o + 16, true);

export function encodePutDone(v: DataView, recvId: number, bytes: number): void {
  v.setUint32(0, recvId, true);
  v.setUint32(4, bytes % TWO32, true);
  v.setUint32(8, Math.floor(bytes / TWO32), true);
}
export const putDoneRecvId = (v: DataView, o: number): number => v.getUint32(o, true);
export const putDoneBytes = (v: DataView, o: number): number => v.getUint32(o + 4, true) + v.getUint32(o + 8, true) * TWO32;

export function encodeRtsSegment(v: DataView, id: number, offset: number): void {
  v.setUint32(RTS_HDR, id, true);
  v.setUint32(RTS_HDR + 4, offset % TWO32, true);
  v.setUint32(RTS_HDR + 8, Math.floor(offset / TWO32), true);
}
export const rtsSegmentId = (v: DataView, o: number): number => v.getUint32(o + RTS_HDR, true);
export const rtsSegmentOffset = (v: DataView, o: number): number => v.getUint32(o + RTS_HDR + 4, true) + v.getUint32(o + RTS_HDR + 8, true) * TWO32;
