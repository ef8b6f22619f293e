// Rendezvous for messages above a lane's zero-copy range: the sender announces
// (RTS), the matched receiver asks for the data (CTS) or reads it itself
// (single copy, ./single-copy.ts), the data streams in pipelined chunks
// straight into the receive buffer, and FIN or the last chunk completes both sides.

import type { AmHandler, RailEndpoint } from '../../rail/api.js';
import { NO_RESOURCE } from '../../rail/api.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { isDetached } from '../../core/bytes.js';
import { Request, PENDING } from '../request.js';
import { ProtoEndpoint, type PendingOp } from '../endpoint.js';
import type { AmRegistry } from '../am.js';
import type { ControlSender } from '../control.js';
import { rtsHeaderLength, type SingleCopy } from './single-copy.js';
import {
  ABANDON_HDR, AM_ABANDON, AM_CTS, AM_DATA, AM_FIN, CTS_DISCARD, CTS_HDR, CTS_REFUSED_BROKEN, CTS_REFUSED_FINALIZED, DATA_HDR, FIN_HDR,
  ctsCredits, ctsFlags, ctsRecvId, ctsSendId, dataOffset, dataRecvId, encodeCts, encodeData, encodeRts, encodeU32, readU32,
} from '../wire.js';

/** What the rendezvous needs from the point-to-point layer. */
export interface RndvHost {
  endpointFor(world: number): ProtoEndpoint;
  /** A peer sent something that cannot be true: count it and drop its connection. */
  peerLied(rep: RailEndpoint, why: string): void;
}

export class Rendezvous {
  /** Our sends waiting for the receiver (CTS, FIN), by send id. */
  readonly sends = new Map<number, Request>();
  /** Our receives being filled (DATA, PUT_DONE), by receive id. */
  readonly recvs = new Map<number, Request>();
  /** Sends given up after the receiver read part of them (abandon): their FIN is still to come. */
  private readonly abandoned = new Set<number>();
  private nextSendId = 1;
  private nextRecvId = 1;
  private readonly host: RndvHost;
  private readonly out: ControlSender;
  /** Set once by the owner (the two reference each other). */
  singleCopy!: SingleCopy;

  constructor(host: RndvHost, am: AmRegistry, out: ControlSender) {
    this.host = host;
    this.out = out;
    am.register(AM_CTS, 'cts', this.ctsHandler);
    am.register(AM_DATA, 'data', this.dataHandler);
    am.register(AM_FIN, 'fin', this.finHandler);
    am.register(AM_ABANDON, 'abandon', this.abandonHandler);
  }

  // ---- sender ------------------------------------------------------------

  /**
   * Announce req (sequence number seq already taken) to ep: RTS, or its
   * single-copy variants. Returns the op that found no resource, if any.
   */
  announce(ep: ProtoEndpoint, req: Request, seq: number): PendingOp | null {
    // First, as it may send a negotiation request through the scratch header.
    const plan = this.singleCopy.plan(ep, req);
    const id = this.nextSendId;
    this.nextSendId = (id + 1) >>> 0 || 1;
    req.rndvId = id;
    req.finWanted = ep.multi;
    this.sends.set(id, req);
    ep.sendsActive.add(req);
    const v = this.out.view;
    // req.bytes: the size at the call (p2p.isend), what the send completes with and its buffer must still hold.
    encodeRts(v, req.ctx, req.source, req.tag, seq, ep.takeOwed(), id, req.bytes);
    const am = this.singleCopy.encodePlan(plan, ep, req, v);
    const hdrLen = rtsHeaderLength(am);
    if (ep.lane!.sendCopy(am, this.out.scratch, hdrLen, null) === NO_RESOURCE) return ProtoEndpoint.op(am, this.out.scratch, hdrLen, null, false, null);
    return null;
  }

  /** The send with this id, if it is ep's; left in place. */
  private sendOf(ep: ProtoEndpoint, sendId: number): Request | undefined {
    const req = this.sends.get(sendId);
    return req !== undefined && req.peerWorld === ep.rank ? req : undefined;
  }

  /** The send with this id, if it is ep's and waits for the receiver; removed from waiting. */
  takeSend(ep: ProtoEndpoint, sendId: number): Request | undefined {
    const req = this.sends.get(sendId);
    if (req === undefined || req.peerWorld !== ep.rank) return undefined;
    this.sends.delete(sendId);
    ep.sendsActive.delete(req);
    return req;
  }

  /** Rendezvous data: pipelined chunks from the user's buffer, straight into the receiver's. */
  stream(ep: ProtoEndpoint, req: Request, recvId: number, from = 0): void {
    const lane = ep.lane!;
    const buf = req.buf;
    const size = buf.byteLength;
    if (size !== req.bytes) { this.abandon(ep, req, recvId); return; }
    const chunk = ep.th.chunk;
    if (size === 0) { req.complete(req.source, req.tag, 0); return; }
    const v = this.out.view;
    for (let off = from; off < size; off += chunk) {
      const piece = buf.subarray(off, Math.min(size, off + chunk));
      encodeData(v, recvId, off);
      req.railPending++;
      req.progressBytes += piece.byteLength;
      if (ep.hasPending || lane.sendZcopy(AM_DATA, this.out.scratch, DATA_HDR, piece, req) === NO_RESOURCE) {
        ep.pushOp(ProtoEndpoint.op(AM_DATA, this.out.scratch, DATA_HDR, piece, true, req));
      }
      if (req.state !== PENDING) return;
    }
  }

  /**
   * The user detached or shrank a send's buffer after it was announced
   * (DESIGN 4: detected, ERR_INVALID_ARG): the send fails, and the receive that
   * asked for the data (recvId) is told, so that it fails too instead of waiting.
   */
  abandon(ep: ProtoEndpoint, req: Request, recvId: number, finFollows = false): void {
    this.takeSend(ep, req.rndvId);
    // A receiver that read part of it itself sends its FIN before it learns this: expected, not a lie.
    if (finFollows) this.abandoned.add(req.rndvId);
    encodeU32(this.out.view, recvId);
    this.out.send(ep, AM_ABANDON, ABANDON_HDR);
    req.fail(new RailcommError(ErrorCode.INVALID_ARG, `the send buffer was detached or resized while its ${req.bytes}-byte message (tag ${req.tag}) to world rank ${ep.rank} waited for the receiver; the receive there fails too`));
  }

  private readonly abandonHandler: AmHandler = {
    recv: (rep, rx) => {
      const ep = rep.owner as ProtoEndpoint;
      const id = readU32(rx.view, rx.hdrOff);
      const req = this.recvOf(ep, id);
      // Already failed here (or, with several lanes, finished): nothing waits for it.
      if (req === undefined) return;
      this.recvs.delete(id);
      ep.recvsActive.delete(req);
      req.fail(new RailcommError(ErrorCode.INVALID_ARG, `the ${req.bytes}-byte message from world rank ${ep.rank} (tag ${req.tag}) will not arrive: its sender detached or resized the buffer it was sending from`));
    },
  };

  private readonly ctsHandler: AmHandler = {
    recv: (rep, rx) => {
      const ep = rep.owner as ProtoEndpoint;
      const v = rx.view;
      const o = rx.hdrOff;
      ep.credits += ctsCredits(v, o);
      const sendId = ctsSendId(v, o);
      // Several lanes: the send waits for the receiver's FIN, and a second
      // CTS (after a lane failed) asks for the data again.
      const req = this.sendOf(ep, sendId);
      if (req === undefined) { this.host.peerLied(rep, `clear-to-send for unknown send ${sendId}`); return; }
      const flags = ctsFlags(v, o);
      if (!req.finWanted || flags !== 0) this.takeSend(ep, sendId);
      if (flags & CTS_DISCARD) {
        // The receiver's buffer was too small: it reports truncation; the sender is not harmed.
        req.complete(req.source, req.tag, req.bytes);
        return;
      }
      if (flags & (CTS_REFUSED_FINALIZED | CTS_REFUSED_BROKEN)) {
        req.fail(new RailcommError(ErrorCode.PEER_FAILED, flags & CTS_REFUSED_FINALIZED
          ? `rank ${ep.rank} finalized without receiving this ${req.buf.byteLength}-byte message (tag ${req.tag}); every message must be received before finalize()`
          : `rank ${ep.rank} left the collective this ${req.buf.byteLength}-byte message belongs to: a member of the communicator failed`));
        return;
      }
      if (req.finWanted && !req.awaitingFin) { req.awaitingFin = true; req.railPending++; }
      // (For a send, peerSendId holds the receiver's id: where to send it again.)
      req.peerSendId = ctsRecvId(v, o);
      this.stream(ep, req, ctsRecvId(v, o));
    },
  };

  /** The receiver read the data itself (RGET): the send is complete. */
  private readonly finHandler: AmHandler = {
    recv: (rep, rx) => {
      const ep = rep.owner as ProtoEndpoint;
      const sendId = readU32(rx.view, rx.hdrOff);
      const req = this.takeSend(ep, sendId);
      if (req === undefined && this.abandoned.delete(sendId)) return;
      if (req === undefined) { this.host.peerLied(rep, `FIN for unknown send ${sendId}`); return; }
      if (req.awaitingFin) { req.awaitingFin = false; req.railComplete(null); return; }
      // A split transfer may still have our part in flight (DATA fallback): it completes the send.
      if (req.railPending === 0) req.complete(req.source, req.tag, req.bytes);
      else req.progressBytes = req.bytes;
    },
  };

  // ---- receiver ----------------------------------------------------------

  /** Matched an announcement of `size` bytes: ask for the data, read it, or refuse it on truncation. */
  accept(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number, remote: bigint, segment: number, finWanted = false): void {
    if (ep.failure !== null) { req.fail(ep.failure); return; }
    if (size > req.buf.byteLength) {
      encodeCts(this.out.view, sendId, 0, CTS_DISCARD, ep.takeOwed());
      this.out.send(ep, AM_CTS, CTS_HDR);
      req.fail(truncated(size, req.buf, src, tag));
      return;
    }
    if (size > 0 && this.singleCopy.read(req, ep, sendId, size, src, tag, remote, segment, finWanted)) return;
    const id = this.askForData(req, ep, sendId, size, src, tag, finWanted);
    if (size === 0) { this.recvs.delete(id); ep.recvsActive.delete(req); req.complete(src, tag, 0); }
  }

  /** Register the receive and send CTS: the sender streams the data into it. Returns the receive's id. */
  askForData(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number, finWanted: boolean): number {
    const id = this.beginRecv(req, ep, size, src, tag, sendId, finWanted);
    encodeCts(this.out.view, sendId, id, 0, ep.takeOwed());
    this.out.send(ep, AM_CTS, CTS_HDR);
    return id;
  }

  /** Register a receive of `size` bytes from ep that data will arrive for; returns its id. */
  beginRecv(req: Request, ep: ProtoEndpoint, size: number, src: number, tag: number, sendId = 0, finWanted = false): number {
    const id = this.nextRecvId;
    this.nextRecvId = (id + 1) >>> 0 || 1;
    req.rndvId = id;
    req.source = src;
    req.tag = tag;
    req.bytes = size;
    req.progressBytes = 0;
    req.peerWorld = ep.rank;
    req.peerSendId = sendId;
    // A sender with several lanes may send chunks again and waits for our FIN.
    if (finWanted) req.seenOffsets = new Set<number>();
    this.recvs.set(id, req);
    ep.recvsActive.add(req);
    return id;
  }

  /** The receive with this id, if it is ep's. */
  recvOf(ep: ProtoEndpoint, recvId: number): Request | undefined {
    const req = this.recvs.get(recvId);
    return req !== undefined && req.peerWorld === ep.rank ? req : undefined;
  }

  /** A receive that will get no more data (it failed at the start): forget it. */
  dropRecv(req: Request, ep: ProtoEndpoint): void {
    this.recvs.delete(req.rndvId);
    ep.recvsActive.delete(req);
  }

  /** Part of a rendezvous receive landed: complete it once every byte has. */
  received(req: Request, n: number): void {
    req.progressBytes += n;
    if (req.progressBytes >= req.bytes && req.state === PENDING) {
      this.recvs.delete(req.rndvId);
      this.host.endpointFor(req.peerWorld).recvsActive.delete(req);
      req.complete(req.source, req.tag, req.bytes);
    }
  }

  private readonly dataHandler: AmHandler = {
    place: (rep, rx) => {
      const id = dataRecvId(rx.view, rx.hdrOff);
      const req = this.recvs.get(id);
      const off = dataOffset(rx.view, rx.hdrOff);
      // Several lanes: a chunk sent again may come after its receive completed.
      if (req === undefined && (rep.owner as ProtoEndpoint).multi) return null;
      if (req === undefined || req.peerWorld !== (rep.owner as ProtoEndpoint).rank || off + rx.payLen > req.bytes) {
        this.host.peerLied(rep, `data for unknown receive ${id} or beyond its ${req?.bytes ?? 0} bytes`);
        return null;
      }
      if (req.state === PENDING && req.buf.byteLength < req.bytes) {
        // The user detached or shrank the buffer while railcomm held it.
        req.fail(new RailcommError(ErrorCode.INVALID_ARG, `the receive buffer was detached or resized while a ${req.bytes}-byte message was arriving into it`));
      }
      if (req.state !== PENDING) {
        // Skip the rest of a receive that already failed here, without harming the peer.
        req.progressBytes += rx.payLen;
        if (req.progressBytes >= req.bytes) this.recvs.delete(id);
        return null;
      }
      return req.buf.subarray(off, off + rx.payLen);
    },
    recv: (_rep, rx) => {
      const id = dataRecvId(rx.view, rx.hdrOff);
      const req = this.recvs.get(id);
      if (req === undefined) return;
      const seen = req.seenOffsets;
      if (seen !== null) {
        const off = dataOffset(rx.view, rx.hdrOff);
        if (seen.has(off)) return; // sent again after a lane failed: counted once
        seen.add(off);
      }
      req.progressBytes += rx.payLen;
      if (req.progressBytes >= req.bytes) {
        this.recvs.delete(id);
        const ep = this.host.endpointFor(req.peerWorld);
        ep.recvsActive.delete(req);
        if (seen !== null) {
          // The sender waits for this before its buffer is free (it may have to send again).
          encodeU32(this.out.view, req.peerSendId);
          this.out.send(ep, AM_FIN, FIN_HDR);
        }
        req.complete(req.source, req.tag, req.bytes);
      }
    },
  };

  // ---- failures and reports ----------------------------------------------

  /** The peer is gone: its sends waiting for it and receives from it fail. */
  peerFailed(ep: ProtoEndpoint, err: RailcommError): void {
    for (const r of ep.sendsActive) { if (r.rndvId !== 0) this.sends.delete(r.rndvId); r.fail(err); }
    ep.sendsActive.clear();
    for (const r of ep.recvsActive) { this.recvs.delete(r.rndvId); r.fail(err); }
    ep.recvsActive.clear();
  }

  /** finalize(): receives still being filled can no longer complete. */
  failAllRecvs(err: RailcommError): void {
    for (const r of this.recvs.values()) r.fail(err);
    this.recvs.clear();
  }

  /**
   * A lane to ep failed while others live: chunks of our receives from it
   * may have been lost with it, so each is asked for again (a second CTS:
   * the sender sends it all again, and what arrived twice counts once).
   */
  laneFailed(ep: ProtoEndpoint): void {
    for (const req of ep.recvsActive) {
      if (req.seenOffsets === null || req.state !== PENDING) continue;
      this.restarts++;
      encodeCts(this.out.view, req.peerSendId, req.rndvId, 0, ep.takeOwed());
      this.out.send(ep, AM_CTS, CTS_HDR);
    }
    // And what we were sending: the receiver may not have seen the lane fail
    // before its receive began (then it asks nothing), so we send it again too.
    for (const req of [...ep.sendsActive]) {
      if (!req.awaitingFin || req.peerSendId === 0 || req.state !== PENDING) continue;
      this.restarts++;
      this.stream(ep, req, req.peerSendId);
    }
  }

  /** Rendezvous asked for again, or sent again, after a lane failed (--stats). */
  restarts = 0;

  /** Whether a send of ours waits for this peer. */
  sendsTo(ep: ProtoEndpoint): boolean {
    for (const r of this.sends.values()) if (r.peerWorld === ep.rank) return true;
    return false;
  }

}

/** A large send that waits for its receiver, in the hang report's words. */
export function largeSendText(r: Request): string {
  return `large send (${r.buf.byteLength} B, tag ${r.tag}) to world rank ${r.peerWorld}: waiting for the receiver ${r.progressBytes > 0 ? `to confirm its data (${r.progressBytes} B sent)` : 'to match it (a receive posted there), or to finish taking its data'}`;
}

/** A message larger than its receive's buffer; a buffer the user detached meanwhile says so instead. */
export function truncated(size: number, buf: Uint8Array, src: number, tag: number): RailcommError {
  const room = buf.byteLength;
  if (room === 0 && isDetached(buf.buffer)) {
    return new RailcommError(ErrorCode.INVALID_ARG, `the receive buffer was detached (transferred) while the receive was posted; the ${size}-byte message from rank ${src} (tag ${tag}) it matched is dropped`);
  }
  return new RailcommError(ErrorCode.TRUNCATE, `message of ${size} bytes from rank ${src} (tag ${tag}) does not fit the ${room}-byte receive buffer; post a larger buffer or probe first`);
}
