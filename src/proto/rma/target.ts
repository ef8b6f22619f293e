// The target side of the one-sided engine: applies the puts and accumulates
// that arrive as active messages to this rank's registered regions, answers
// gets, atomics and flushes, and grants window locks in their order.

import type { AmHandler, RailEndpoint } from '../../rail/api.js';
import type { ProtoEndpoint } from '../endpoint.js';
import type { LockRequest, LockTable } from './locks.js';
import type { Region, RegionTable } from './region.js';
import { applyAccumulate, applyAtomic, readValue, writeValue, TYPE_SIZE, OP_CSWAP, OP_NO_OP } from './apply.js';
import {
  AM_RMA_FLUSH, AM_RMA_GET_DATA, AM_RMA_LOCK, AM_RMA_REPLY, ATOMIC_COMPARE, ATOMIC_OPERAND, REPLY_HDR,
  RMA_ERR_OP, RMA_ERR_REGION, RMA_ERR_RANGE, RMA_OK,
  accOp, accType, atomicOp, atomicOpId, atomicType, ctrlMode, ctrlOpId, ctrlRegion, encodeReply, getLength, getOpId, tgtOffset, tgtRegion,
} from './wire.js';
import { emitAm } from './op.js';

/** What the target side needs of the engine's host. */
export interface TargetHost {
  endpointFor(world: number): ProtoEndpoint;
}

export class RmaTarget {
  private readonly host: TargetHost;
  private readonly regions: RegionTable;
  private readonly locks: LockTable;
  /** The engine's counter of protocol errors from peers (unknown regions, bad ranges). */
  private readonly counts: { protocolErrors: number };
  /** Reply headers and an atomic's old value: encoded here, copied by the lane or its queue. */
  private readonly hdr = new Uint8Array(64);
  private readonly hv = new DataView(this.hdr.buffer);
  private readonly val = new DataView(new ArrayBuffer(8));
  private readonly valBytes = new Uint8Array(this.val.buffer);

  constructor(host: TargetHost, regions: RegionTable, locks: LockTable, counts: { protocolErrors: number }) {
    this.host = host;
    this.regions = regions;
    this.locks = locks;
    this.counts = counts;
  }

  private originOf(rep: RailEndpoint): ProtoEndpoint | null {
    return rep.owner as ProtoEndpoint | null;
  }

  /** The region and a checked range, or an RMA_ERR_* status. */
  private lookup(id: number, offset: number, len: number): Region | number {
    const r = this.regions.get(id);
    if (r === undefined) return RMA_ERR_REGION;
    if (offset + len > r.bytes.byteLength) return RMA_ERR_RANGE;
    return r;
  }

  readonly putHandler: AmHandler = {
    place: (_rep, rx) => {
      const r = this.lookup(tgtRegion(rx.view, rx.hdrOff), tgtOffset(rx.view, rx.hdrOff), rx.payLen);
      if (typeof r === 'number') { this.counts.protocolErrors++; return null; }
      const off = tgtOffset(rx.view, rx.hdrOff);
      return r.bytes.subarray(off, off + rx.payLen);
    },
    recv: (_rep, rx) => {
      if (rx.placed !== null || rx.payLen === 0) return;
      const off = tgtOffset(rx.view, rx.hdrOff);
      const r = this.lookup(tgtRegion(rx.view, rx.hdrOff), off, rx.payLen);
      if (typeof r === 'number') { this.counts.protocolErrors++; return; }
      r.bytes.set(rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen), off);
    },
  };

  readonly accHandler: AmHandler = {
    recv: (_rep, rx) => {
      const off = tgtOffset(rx.view, rx.hdrOff);
      const type = accType(rx.view, rx.hdrOff);
      const op = accOp(rx.view, rx.hdrOff);
      const r = this.lookup(tgtRegion(rx.view, rx.hdrOff), off, rx.payLen);
      if (typeof r === 'number' || type >= TYPE_SIZE.length || op > OP_NO_OP || (r.bytes.byteOffset + off) % TYPE_SIZE[type]! !== 0 || rx.payLen % TYPE_SIZE[type]! !== 0) {
        this.counts.protocolErrors++;
        return;
      }
      applyAccumulate(r.bytes, off, rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen), type, op);
    },
  };

  readonly getHandler: AmHandler = {
    recv: (rep, rx) => {
      const origin = this.originOf(rep);
      if (origin === null || origin.lane === null) { this.counts.protocolErrors++; return; }
      const off = tgtOffset(rx.view, rx.hdrOff);
      const len = getLength(rx.view, rx.hdrOff);
      const opId = getOpId(rx.view, rx.hdrOff);
      const r = this.lookup(tgtRegion(rx.view, rx.hdrOff), off, len);
      if (typeof r === 'number') { this.reply(origin, opId, 0, r, null); return; }
      const caps = origin.lane.rail.caps;
      const piece = Math.max(1, Math.min(caps.amZcopyMax, 1 << 20));
      for (let done = 0; done < len; done += piece) {
        const n = Math.min(piece, len - done);
        this.reply(origin, opId, done, RMA_OK, r.bytes.subarray(off + done, off + done + n), AM_RMA_GET_DATA);
      }
    },
  };

  readonly atomicHandler: AmHandler = {
    recv: (rep, rx) => {
      const origin = this.originOf(rep);
      if (origin === null || origin.lane === null) { this.counts.protocolErrors++; return; }
      const v = rx.view, o = rx.hdrOff;
      const off = tgtOffset(v, o);
      const type = atomicType(v, o);
      const op = atomicOp(v, o);
      const opId = atomicOpId(v, o);
      const size = type < TYPE_SIZE.length ? TYPE_SIZE[type]! : 0;
      const r = this.lookup(tgtRegion(v, o), off, size);
      if (typeof r === 'number') { this.reply(origin, opId, 0, r, null); return; }
      if (size < 4 || op > OP_CSWAP || (r.bytes.byteOffset + off) % size !== 0) { this.reply(origin, opId, 0, RMA_ERR_OP, null); return; }
      const old = applyAtomic(r.bytes, off, type, op, readValue(v, o + ATOMIC_OPERAND, type), readValue(v, o + ATOMIC_COMPARE, type));
      writeValue(this.val, 0, type, old);
      this.reply(origin, opId, 0, RMA_OK, this.valBytes);
    },
  };

  ctrlHandler(am: number): AmHandler {
    return {
      recv: (rep, rx) => {
        const origin = this.originOf(rep);
        if (origin === null || origin.lane === null) { this.counts.protocolErrors++; return; }
        const region = ctrlRegion(rx.view, rx.hdrOff);
        const opId = ctrlOpId(rx.view, rx.hdrOff);
        if (am === AM_RMA_FLUSH) { this.reply(origin, opId, 0, RMA_OK, null); return; }
        if (this.regions.get(region) === undefined) { this.reply(origin, opId, 0, RMA_ERR_REGION, null); return; }
        if (am === AM_RMA_LOCK) {
          this.sendGrants(this.locks.request(region, { rank: origin.rank, mode: ctrlMode(rx.view, rx.hdrOff), opId }));
          return;
        }
        const granted = this.locks.release(region, origin.rank);
        this.reply(origin, opId, 0, granted === null ? RMA_ERR_OP : RMA_OK, null);
        if (granted !== null) this.sendGrants(granted);
      },
    };
  }

  /**
   * A window is freed here: its region goes, and lock requests still queued
   * on it are answered with an error rather than left waiting forever.
   */
  deregister(region: Region): void {
    this.regions.deregister(region);
    for (const q of this.locks.dropRegion(region.id)) {
      const ep = this.host.endpointFor(q.rank);
      this.reply(ep, q.opId, 0, RMA_ERR_REGION, null);
    }
  }

  private sendGrants(granted: LockRequest[]): void {
    for (const g of granted) {
      const ep = this.host.endpointFor(g.rank);
      if (ep.failure === null && ep.lane !== null) this.reply(ep, g.opId, 0, RMA_OK, null);
    }
  }

  private reply(ep: ProtoEndpoint, opId: number, offset: number, status: number, payload: Uint8Array | null, am = AM_RMA_REPLY): void {
    if (ep.failure !== null || ep.lane === null) return;
    encodeReply(this.hv, opId, offset, status);
    const big = payload !== null && payload.byteLength > Math.min(ep.lane.rail.caps.amCopyMax, 65536);
    emitAm(ep, am, this.hdr, REPLY_HDR, payload, null, !big);
  }

  /** A peer is gone: it no longer holds or waits for locks here; whoever waited behind it is granted. */
  peerFailed(rank: number): void {
    for (const { granted } of this.locks.dropRank(rank)) this.sendGrants(granted);
  }
}
