// Single-copy rendezvous (the smcuda design on host memory): where a lane can
// read and write the peer's memory, the receiver reads the sender's buffer
// itself (RGET) once the peer agreed (lazy negotiation, ../ipc.ts), or maps the
// sender's registered segment; large transfers are split so both sides copy.

import type { AmHandler, RailEndpoint } from '../../rail/api.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import type { Request } from '../request.js';
import type { ProtoEndpoint } from '../endpoint.js';
import type { AmRegistry } from '../am.js';
import type { ControlSender } from '../control.js';
import { IPC_STATE_NAMES, IpcNegotiation, IpcPeer, SPLIT_MIN, splitPoint, type IpcLink } from '../ipc.js';
import {
  AM_CTS_PUT, AM_IPC_ACK, AM_IPC_REQ, AM_PUT_DONE, AM_RTS_RDMA, AM_RTS_RGET, AM_RTS_SEG, CTS_PUT_HDR, RTS_RDMA_HDR, RTS_SEG_HDR, encodeRtsSegment,
  IPC_ACK_HDR, IPC_NO, IPC_REQ_HDR, PUT_DONE_HDR, RTS_RGET_HDR,
  ctsPutAddress, ctsPutRecvId, ctsPutSendId, ctsPutSplit, encodeCtsPut, encodeIpcAck, encodeIpcReq, encodePutDone, encodeRgetAddress,
  ipcAckStatus, ipcReqAddress, ipcReqCookie, putDoneBytes, putDoneRecvId,
} from '../ipc-wire.js';
import { AM_FIN, AM_RTS, FIN_HDR, RTS_HDR, encodeU32 } from '../wire.js';
import type { Rendezvous } from './rendezvous.js';
import { SEGMENT_DEVICE, type DeviceRndv } from './device.js';
import { SEGMENT_RDMA, type RdmaRndv } from './rdma.js';
import { AM_RTS_DEV, RTS_DEV_HDR } from '../cuda-wire.js';

/** How a rendezvous send offers its data (plan's answers). */
const PLAN_RING = 0, PLAN_RGET = 1, PLAN_SEGMENT = 2, PLAN_DEVICE = 3, PLAN_RDMA = 4;

/** Header length of each announcement kind. */
export function rtsHeaderLength(am: number): number {
  return am === AM_RTS_SEG ? RTS_SEG_HDR : am === AM_RTS_RGET ? RTS_RGET_HDR : am === AM_RTS_DEV ? RTS_DEV_HDR : am === AM_RTS_RDMA ? RTS_RDMA_HDR : RTS_HDR;
}

export interface SingleCopyHost {
  /** Large messages may be read by the receiver straight from the sender's memory where a lane can. */
  readonly singleCopy?: boolean;
  peerLied(rep: RailEndpoint, why: string): void;
}

export class SingleCopy {
  private readonly host: SingleCopyHost;
  private readonly rndv: Rendezvous;
  private readonly out: ControlSender;
  /** Negotiation state per peer and how it talks to it. */
  private readonly ipc = new IpcNegotiation();
  private readonly peers = new Map<ProtoEndpoint, { peer: IpcPeer; link: IpcLink }>();
  private readonly ipcScratch = new Uint8Array(8);
  /** The registered segment plan() found for the send it planned. */
  private planned: { id: number; offset: number } | null = null;
  // Doubles from the start, as the traffic counters (core/counters.ts): they pass 2^31 in a long job.
  rgetMsgs = -0;
  rgetBytes = -0;
  /** Device memory's rendezvous (set once by the owner). */
  device: DeviceRndv | null = null;
  /** Remote reads on rails with native one-sided operations (set once by the owner). */
  rdma: RdmaRndv | null = null;

  constructor(host: SingleCopyHost, am: AmRegistry, out: ControlSender, rndv: Rendezvous) {
    this.host = host;
    this.out = out;
    this.rndv = rndv;
    am.register(AM_IPC_REQ, 'ipc-req', this.ipcReqHandler);
    am.register(AM_IPC_ACK, 'ipc-ack', this.ipcAckHandler);
    am.register(AM_CTS_PUT, 'cts-put', this.ctsPutHandler);
    am.register(AM_PUT_DONE, 'put-done', this.putDoneHandler);
  }

  // ---- sender ------------------------------------------------------------

  /**
   * How a rendezvous send to ep offers its data: the ring (CTS + DATA), RGET
   * of its buffer (the peer agreed; the first ask happens here), or its
   * registered segment (comm.alloc: the receiver maps it, no handshake).
   */
  plan(ep: ProtoEndpoint, req: Request): number {
    const lane = ep.lane!;
    this.planned = null;
    if (req.dev !== null && this.device !== null) { this.device.plan(ep, req); return PLAN_DEVICE; }
    if (this.rdma !== null && this.rdma.plan(ep, req)) return PLAN_RDMA;
    if (req.buf.length <= ep.th.zcopy || this.host.singleCopy !== true || lane.ipc == null) return PLAN_RING;
    const seg = lane.ipc.segmentOf?.(req.buf) ?? null;
    if (seg !== null) { this.planned = seg; return PLAN_SEGMENT; }
    const x = this.of(ep);
    return this.ipc.want(x.peer, x.link) ? PLAN_RGET : PLAN_RING;
  }

  /** The announcement's extra fields for plan p, after the RTS header in v; returns its AM id. */
  encodePlan(p: number, ep: ProtoEndpoint, req: Request, v: DataView): number {
    if (p === PLAN_DEVICE) { this.device!.encode(ep, req, v); return AM_RTS_DEV; }
    if (p === PLAN_RDMA) { this.rdma!.encode(v); return AM_RTS_RDMA; }
    if (p === PLAN_SEGMENT) { encodeRtsSegment(v, this.planned!.id, this.planned!.offset); this.planned = null; return AM_RTS_SEG; }
    if (p === PLAN_RGET) { encodeRgetAddress(v, ep.lane!.ipc!.addressOf(req.buf)); return AM_RTS_RGET; }
    return AM_RTS;
  }

  /** The receiver reads the first part itself and asks us to write the rest into its buffer. */
  private readonly ctsPutHandler: AmHandler = {
    recv: (rep, rx) => {
      const ep = rep.owner as ProtoEndpoint;
      const v = rx.view, o = rx.hdrOff;
      const sendId = ctsPutSendId(v, o);
      const req = this.rndv.sends.get(sendId);
      const split = ctsPutSplit(v, o);
      const recvId = ctsPutRecvId(v, o);
      if (req !== undefined && req.peerWorld === ep.rank && req.buf.byteLength !== req.bytes) { this.rndv.abandon(ep, req, recvId, true); return; }
      if (req === undefined || req.peerWorld !== ep.rank || split > req.bytes) { this.host.peerLied(rep, `write request for unknown send ${sendId} or beyond its end`); return; }
      const piece = req.buf.subarray(split);
      const w = ep.lane?.ipc?.write(piece, ctsPutAddress(v, o) + BigInt(split)) ?? -1;
      if (w === 0) {
        encodePutDone(this.out.view, recvId, piece.byteLength);
        this.out.send(ep, AM_PUT_DONE, PUT_DONE_HDR);
      } else if (w === -3) {
        this.rndv.takeSend(ep, sendId);
        req.fail(new RailcommError(ErrorCode.PEER_FAILED, `rank ${ep.rank} vanished while a message was written into it`));
      } else {
        // The kernel let it read us but not us write it: our part goes through the ring.
        this.rndv.stream(ep, req, recvId, split);
      }
    },
  };

  // ---- receiver ----------------------------------------------------------

  /**
   * Take a matched announcement's data by single copy: from the sender's
   * registered segment, or by reading its buffer (remote: its address).
   * False when this path does not apply or was refused: the ring path follows.
   */
  read(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number, remote: bigint, segment: number, finWanted = false): boolean {
    if (segment === SEGMENT_DEVICE) return this.device!.read(req, ep, sendId, size, src, tag);
    if (segment === SEGMENT_RDMA) return this.rdma!.read(req, ep, sendId, size, src, tag, finWanted);
    if (segment >= 0) return this.readSegment(req, ep, sendId, size, src, tag, segment, Number(remote));
    if (remote !== 0n) return this.rget(req, ep, sendId, size, src, tag, remote);
    return false;
  }

  /** RGET: read the sender's buffer straight into the receive buffer (one copy), then FIN. */
  private rget(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number, remote: bigint): boolean {
    const reader = ep.lane?.ipc ?? null;
    if (reader === null) return false;
    const x = this.of(ep);
    // Large: the sender writes the second part while we read the first. It may
    // write into our memory once it agreed it can read it (asked here first).
    if (size >= SPLIT_MIN && this.ipc.want(x.peer, x.link)) { this.rgetSplit(req, ep, reader, sendId, size, src, tag, remote); return true; }
    const r = reader.read(req.buf.subarray(0, size), remote);
    if (r === -3) { req.fail(vanished(ep, size)); return true; }
    if (r !== 0) { this.ipc.onReadFailed(x.peer, x.link); return false; }
    x.peer.rgets++;
    this.finish(req, ep, sendId, size, src, tag);
    return true;
  }

  /** The data is in the sender's registered segment: map it (cached) and copy once. */
  private readSegment(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number, id: number, offset: number): boolean {
    const reader = ep.lane?.ipc ?? null;
    if (reader === null || reader.readSegment === undefined) return false;
    if (reader.readSegment(req.buf.subarray(0, size), id, offset) !== 0) return false;
    this.finish(req, ep, sendId, size, src, tag);
    return true;
  }

  /** The whole message was read: count it, FIN the sender, complete. */
  private finish(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number): void {
    this.rgetMsgs++;
    this.rgetBytes += size;
    encodeU32(this.out.view, sendId);
    this.out.send(ep, AM_FIN, FIN_HDR);
    req.complete(src, tag, size);
  }

  /** Split single copy: ask the sender to write [split, size), read [0, split), FIN; PUT_DONE (or DATA) completes. */
  private rgetSplit(req: Request, ep: ProtoEndpoint, reader: NonNullable<RailEndpoint['ipc']>, sendId: number, size: number, src: number, tag: number, remote: bigint): void {
    const id = this.rndv.beginRecv(req, ep, size, src, tag);
    const split = splitPoint(size);
    encodeCtsPut(this.out.view, sendId, id, split, reader.addressOf(req.buf));
    this.out.send(ep, AM_CTS_PUT, CTS_PUT_HDR);
    const r = reader.read(req.buf.subarray(0, split), remote);
    if (r !== 0) {
      // Both sides agreed, so this cannot happen short of a dead peer or a freed buffer.
      this.rndv.dropRecv(req, ep);
      req.fail(r === -3 ? vanished(ep, size) : new RailcommError(ErrorCode.PROTOCOL, `reading ${split} bytes of a message from rank ${ep.rank} failed (errno ${-r})`));
      return;
    }
    this.rgetMsgs++;
    this.rgetBytes += size;
    this.of(ep).peer.rgets++;
    encodeU32(this.out.view, sendId);
    this.out.send(ep, AM_FIN, FIN_HDR);
    this.rndv.received(req, split);
  }

  private readonly putDoneHandler: AmHandler = {
    recv: (rep, rx) => {
      const id = putDoneRecvId(rx.view, rx.hdrOff);
      const req = this.rndv.recvOf(rep.owner as ProtoEndpoint, id);
      const n = putDoneBytes(rx.view, rx.hdrOff);
      if (req === undefined || req.progressBytes + n > req.bytes) { this.host.peerLied(rep, `write done for unknown receive ${id}`); return; }
      this.rndv.received(req, n);
    },
  };

  // ---- negotiation -------------------------------------------------------

  /** The negotiation state with a peer, and how it talks to it. */
  private of(ep: ProtoEndpoint): { peer: IpcPeer; link: IpcLink } {
    let x = this.peers.get(ep);
    if (x === undefined) {
      const out = this.out;
      const link: IpcLink = {
        get reader() { return ep.lane?.ipc ?? null; },
        sendRequest: (address, cookie, attempt) => { encodeIpcReq(out.view, address, cookie, attempt); out.send(ep, AM_IPC_REQ, IPC_REQ_HDR); },
        sendAck: (status) => { encodeIpcAck(out.view, status); out.send(ep, AM_IPC_ACK, IPC_ACK_HDR); },
      };
      x = { peer: new IpcPeer(), link };
      this.peers.set(ep, x);
    }
    return x;
  }

  private readonly ipcReqHandler: AmHandler = {
    recv: (rep, rx) => {
      const x = this.of(rep.owner as ProtoEndpoint);
      const addr = ipcReqAddress(rx.view, rx.hdrOff);
      const cookie = ipcReqCookie(rx.view, rx.hdrOff);
      // Refuse when single copy is switched off here: the peer then stops asking.
      if (this.host.singleCopy !== true) { x.link.sendAck(IPC_NO); return; }
      this.ipc.onRequest(x.peer, x.link, addr, cookie, this.ipcScratch);
    },
  };

  private readonly ipcAckHandler: AmHandler = {
    recv: (rep, rx) => {
      this.ipc.onAck(this.of(rep.owner as ProtoEndpoint).peer, ipcAckStatus(rx.view, rx.hdrOff));
    },
  };

  /** Single-copy negotiation state per peer rank (--stats): whether it reads us (tx), we read it (rx). */
  states(): Record<string, { tx: string; rx: string; tries: number; rgets: number; fallbacks: number }> {
    const out: Record<string, { tx: string; rx: string; tries: number; rgets: number; fallbacks: number }> = {};
    for (const [ep, { peer }] of this.peers) {
      out[String(ep.rank)] = { tx: IPC_STATE_NAMES[peer.tx]!, rx: IPC_STATE_NAMES[peer.rx]!, tries: peer.tries, rgets: peer.rgets, fallbacks: peer.fallbacks };
    }
    return out;
  }
}

function vanished(ep: ProtoEndpoint, size: number): RailcommError {
  return new RailcommError(ErrorCode.PEER_FAILED, `rank ${ep.rank} vanished while a ${size}-byte message was read from it`);
}
