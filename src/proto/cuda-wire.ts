// Wire formats of the device (GPU memory) datapaths: the device rendezvous
// announcement RTS_DEV and the control message DEV_CTRL (CUDA IPC negotiation,
// clear-to-send for staged data, and freeing). Little endian; nothing else
// reads these offsets.

import { RTS_HDR } from './wire.js';

/*
 * RTS_DEV (128 bytes), no payload: an RTS (proto/wire.ts, 32 bytes), then
 *  32 mode u32 (DEV_DIRECT, DEV_IPC, DEV_STAGED) | 36 sender's process id u32
 *  40 DEV_DIRECT: the sender's device address u64; DEV_IPC: the data's offset in its allocation u64
 *  48 DEV_IPC: the allocation's buffer id u64 (what the receiver caches the opened handle under)
 *  56 DEV_IPC: the allocation's size u64 (the receiver checks offset + message size against it)
 *  64 DEV_IPC: the allocation's CUDA IPC handle, 64 bytes
 * The receiver copies from the sender's memory (DIRECT, IPC) and answers FIN,
 * or answers DEV_CTRL CTS (STAGED, or an IPC it could not open) and the sender
 * streams pinned host chunks as rendezvous DATA.
 *
 * DEV_CTRL, first 4 bytes: kind u32, then
 *  DEV_IPC_REQ (32): 4 attempt u32 | 8 pid u32 | 12 PCI domain u32 | 16 PCI bus u32 | 20 PCI slot u32 | 24 host id u64
 *    "may you open my device memory's IPC handles?" (my device, by its PCI place; my host)
 *  DEV_IPC_ACK (8): 4 status u32 (ipc-wire.ts: IPC_YES, IPC_NO never, IPC_LATER ask again)
 *  DEV_CTS (12): 4 send id u32 | 8 receive id u32: stream the data (pinned chunks, DATA)
 *  DEV_FREE (16): 8 buffer id u64: the owner frees that allocation: close it
 *  DEV_FREE_ACK (16): 8 buffer id u64: closed (or never open)
 */
export const AM_RTS_DEV = 9;
export const AM_DEV_CTRL = 10;

export const RTS_DEV_HDR = RTS_HDR + 96;
export const DEV_DIRECT = 1;
export const DEV_IPC = 2;
export const DEV_STAGED = 3;
export const IPC_HANDLE_BYTES = 64;

export const DEV_IPC_REQ = 1;
export const DEV_IPC_ACK = 2;
export const DEV_CTS = 3;
export const DEV_FREE = 4;
export const DEV_FREE_ACK = 5;
/** Header length of each DEV_CTRL kind (index: kind). */
export const DEV_CTRL_HDR: readonly number[] = [0, 32, 8, 12, 16, 16];

const TWO32 = 4294967296;

/** The RTS_DEV fields after an RTS already encoded in v (handle: 64 bytes, or null). */
export function encodeRtsDev(v: DataView, mode: number, pid: number, address: bigint, bufferId: bigint, allocBytes: number, handle: Uint8Array | null): void {
  v.setUint32(RTS_HDR, mode, true);
  v.setUint32(RTS_HDR + 4, pid, true);
  v.setBigUint64(RTS_HDR + 8, address, true);
  v.setBigUint64(RTS_HDR + 16, bufferId, true);
  v.setUint32(RTS_HDR + 24, allocBytes % TWO32, true);
  v.setUint32(RTS_HDR + 28, Math.floor(allocBytes / TWO32), true);
  const dst = new Uint8Array(v.buffer, v.byteOffset + RTS_HDR + 32, IPC_HANDLE_BYTES);
  if (handle !== null) dst.set(handle.subarray(0, IPC_HANDLE_BYTES));
  else dst.fill(0);
}

/** An arrived RTS_DEV's fields (copied out: the frame is reused). */
export interface RtsDev {
  mode: number;
  pid: number;
  address: bigint;
  bufferId: bigint;
  allocBytes: number;
  handle: Uint8Array;
}

export function decodeRtsDev(v: DataView, o: number): RtsDev {
  const handle = new Uint8Array(IPC_HANDLE_BYTES);
  handle.set(new Uint8Array(v.buffer, v.byteOffset + o + RTS_HDR + 32, IPC_HANDLE_BYTES));
  return {
    mode: v.getUint32(o + RTS_HDR, true),
    pid: v.getUint32(o + RTS_HDR + 4, true),
    address: v.getBigUint64(o + RTS_HDR + 8, true),
    bufferId: v.getBigUint64(o + RTS_HDR + 16, true),
    allocBytes: v.getUint32(o + RTS_HDR + 24, true) + v.getUint32(o + RTS_HDR + 28, true) * TWO32,
    handle,
  };
}

export const ctrlKind = (v: DataView, o: number): number => v.getUint32(o, true);

/** Where a device is: the same GPU has the same PCI place in every process of a host. */
export interface DevicePlace {
  domain: number;
  bus: number;
  slot: number;
}

export function encodeIpcReq(v: DataView, attempt: number, pid: number, place: DevicePlace, hostId: bigint): void {
  v.setUint32(0, DEV_IPC_REQ, true);
  v.setUint32(4, attempt, true);
  v.setUint32(8, pid, true);
  v.setUint32(12, place.domain, true);
  v.setUint32(16, place.bus, true);
  v.setUint32(20, place.slot, true);
  v.setBigUint64(24, hostId, true);
}

export interface IpcReq {
  attempt: number;
  pid: number;
  place: DevicePlace;
  hostId: bigint;
}

export function decodeIpcReq(v: DataView, o: number): IpcReq {
  return {
    attempt: v.getUint32(o + 4, true),
    pid: v.getUint32(o + 8, true),
    place: { domain: v.getUint32(o + 12, true), bus: v.getUint32(o + 16, true), slot: v.getUint32(o + 20, true) },
    hostId: v.getBigUint64(o + 24, true),
  };
}

export function encodeIpcAck(v: DataView, status: number): void {
  v.setUint32(0, DEV_IPC_ACK, true);
  v.setUint32(4, status, true);
}
export const ipcAckStatus = (v: DataView, o: number): number => v.getUint32(o + 4, true);

export function encodeDevCts(v: DataView, sendId: number, recvId: number): void {
  v.setUint32(0, DEV_CTS, true);
  v.setUint32(4, sendId, true);
  v.setUint32(8, recvId, true);
}
export const devCtsSendId = (v: DataView, o: number): number => v.getUint32(o + 4, true);
export const devCtsRecvId = (v: DataView, o: number): number => v.getUint32(o + 8, true);

/** DEV_FREE or DEV_FREE_ACK. */
export function encodeDevFree(v: DataView, kind: number, bufferId: bigint): void {
  v.setUint32(0, kind, true);
  v.setUint32(4, 0, true);
  v.setBigUint64(8, bufferId, true);
}
export const devFreeBufferId = (v: DataView, o: number): bigint => v.getBigUint64(o + 8, true);
