// Rendezvous by remote read (RGET over RDMA) on rails with native one-sided
// operations (the ofi rail: fi_read), as btl/ofi's get path: the sender
// registers its buffer and sends its key in the RTS (RTS_RDMA); the matched
// receiver reads the whole message straight into the receive buffer, then
// sends FIN, which completes the send and frees the registration. One
// registration and one read instead of a CTS and pipelined DATA frames
// copied through the rail's receive slots. Where the rail cannot (no key,
// no resources, a read error that is not the peer's death) the receiver
// answers CTS and the sender streams as usual: nothing is lost.

import type { Completion, RailEndpoint, RailMemory } from '../../rail/api.js';
import { DONE, NO_RESOURCE } from '../../rail/api.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { PENDING, type Request } from '../request.js';
import type { ProtoEndpoint } from '../endpoint.js';
import type { ControlSender } from '../control.js';
import type { Rendezvous } from './rendezvous.js';
import { AM_FIN, FIN_HDR, RTS_HDR, encodeU32 } from '../wire.js';
import { RDMA_KEY_BYTES } from '../ipc-wire.js';

/** Unexpected.segment of an RTS_RDMA: its key waits in RdmaRndv.arrived. */
export const SEGMENT_RDMA = -3;

export interface RdmaHost {
  /** Messages of at least this many bytes go by remote read where the lane can (0: never). */
  readonly rdmaMin: number;
  peerLied(rep: RailEndpoint, why: string): void;
}

export class RdmaRndv {
  private readonly host: RdmaHost;
  private readonly out: ControlSender;
  private readonly rndv: Rendezvous;
  /** Keys of announcements not matched yet, per peer and send id. */
  private readonly arrived = new Map<ProtoEndpoint, Map<number, Uint8Array>>();
  /** The registration plan() made for the send being announced. */
  private planned: RailMemory | null = null;
  // Doubles, as the traffic counters: they pass 2^31 in a long job.
  reads = -0;
  readBytes = -0;
  /** Streamed although remote read applied: the sender's registration failed, or the receiver could not read. */
  fellBack = -0;

  constructor(host: RdmaHost, out: ControlSender, rndv: Rendezvous) {
    this.host = host;
    this.out = out;
    this.rndv = rndv;
  }

  // ---- sender ------------------------------------------------------------

  /** Whether req goes by remote read to ep: registers its buffer if so (kept until the send settles). */
  plan(ep: ProtoEndpoint, req: Request): boolean {
    const min = this.host.rdmaMin;
    const lane = ep.lane!;
    if (min <= 0 || req.buf.length < min || lane.rma == null || lane.rail.rendezvousReads !== true || lane.rail.registerMemory === undefined) return false;
    let reg: RailMemory | null;
    try { reg = lane.rail.registerMemory(req.buf); } catch { this.fellBack++; return false; }
    if (reg === null || reg.packed.byteLength !== RDMA_KEY_BYTES) { reg?.release(); return false; }
    this.planned = reg;
    const r = reg;
    req.onSettled(() => r.release());
    return true;
  }

  /** The key after the RTS header in v. */
  encode(v: DataView): void {
    const packed = this.planned!.packed;
    this.planned = null;
    new Uint8Array(v.buffer, v.byteOffset + RTS_HDR, RDMA_KEY_BYTES).set(packed);
  }

  // ---- receiver ----------------------------------------------------------

  /** An RTS_RDMA arrived: keep its key until a receive matches it; its Unexpected.segment. */
  arrivedRts(ep: ProtoEndpoint, v: DataView, o: number, sendId: number): number {
    let m = this.arrived.get(ep);
    if (m === undefined) { m = new Map(); this.arrived.set(ep, m); }
    m.set(sendId, new Uint8Array(v.buffer.slice(v.byteOffset + o + RTS_HDR, v.byteOffset + o + RTS_HDR + RDMA_KEY_BYTES)));
    return SEGMENT_RDMA;
  }

  /** A receive matched an RTS_RDMA: read the message (true), or answer CTS so that it streams. */
  read(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number, finWanted: boolean): boolean {
    const m = this.arrived.get(ep);
    const packed = m?.get(sendId);
    if (packed === undefined) { this.host.peerLied(ep.lane!, `remote-read message ${sendId} was never announced`); req.fail(new RailcommError(ErrorCode.PROTOCOL, `rank ${ep.rank} announced a message it never described`)); return true; }
    m!.delete(sendId);
    const lane = ep.lane!;
    const rail = lane.rail;
    const k = lane.rma == null || rail.unpackRemoteKey === undefined ? null : rail.unpackRemoteKey(packed);
    if (k === null) return this.stream(req, ep, sendId, size, src, tag, finWanted);
    const done: Completion = {
      railComplete: (err) => {
        rail.dropRemoteKey?.(k);
        if (err === null) {
          this.reads++;
          this.readBytes += size;
          encodeU32(this.out.view, sendId);
          this.out.send(ep, AM_FIN, FIN_HDR);
          req.complete(src, tag, size);
        } else if (ep.failure !== null || err.code === ErrorCode.PEER_FAILED) {
          req.fail(ep.failure ?? err);
        } else if (req.state === PENDING) {
          // The provider refused the read (not the peer's death): the sender streams it instead.
          this.stream(req, ep, sendId, size, src, tag, finWanted);
        }
      },
    };
    const st = lane.rma!.get(req.buf.subarray(0, size), k, 0, done);
    if (st === NO_RESOURCE) { rail.dropRemoteKey?.(k); return this.stream(req, ep, sendId, size, src, tag, finWanted); }
    // Read within the call (the rail never calls done): finished now, as the shm rail's single copy is.
    if (st === DONE) done.railComplete(null);
    return true;
  }

  /** Ask the sender to stream (CTS), as for a plain RTS. */
  private stream(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number, finWanted: boolean): boolean {
    this.fellBack++;
    this.rndv.askForData(req, ep, sendId, size, src, tag, finWanted);
    return true;
  }

  /** A peer failed: forget what it announced. */
  peerFailed(ep: ProtoEndpoint): void {
    this.arrived.delete(ep);
  }
}
