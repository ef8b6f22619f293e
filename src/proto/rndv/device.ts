// Rendezvous of device (GPU) memory. The sender announces with RTS_DEV and
// the memory's way in: its address (a thread rank of this process: one device
// copy), its CUDA IPC handle (a process on this host that agreed to open our
// handles: lazily negotiated, ../cuda-ipc.ts), or nothing (staged). The
// receiver copies straight into its buffer and answers FIN, or answers DEV_CTS
// and the sender streams pinned host chunks as rendezvous DATA (copy of chunk
// k+1 overlapping the send of chunk k).

import type { AmHandler, Completion, RailEndpoint } from '../../rail/api.js';
import { NO_RESOURCE } from '../../rail/api.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import type { Params } from '../../core/params.js';
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { PENDING, type Request } from '../request.js';
import { ProtoEndpoint } from '../endpoint.js';
import type { AmRegistry } from '../am.js';
import type { ControlSender } from '../control.js';
import type { Rendezvous } from './rendezvous.js';
import { AM_DATA, AM_FIN, DATA_HDR, FIN_HDR, encodeData, encodeU32 } from '../wire.js';
import {
  AM_DEV_CTRL, DEV_CTRL_HDR, DEV_CTS, DEV_DIRECT, DEV_FREE, DEV_FREE_ACK, DEV_IPC, DEV_IPC_ACK, DEV_IPC_REQ, DEV_STAGED,
  ctrlKind, decodeIpcReq, decodeRtsDev, devCtsRecvId, devCtsSendId, devFreeBufferId, encodeDevCts, encodeDevFree, encodeIpcAck,
  encodeIpcReq, encodeRtsDev, ipcAckStatus, type DevicePlace, type RtsDev,
} from '../cuda-wire.js';
import { CudaIpcNegotiation, CudaIpcPeer, DeviceHandleCache, IPC_BAD, IPC_STATE_NAMES, type CudaIpcLink, type LocalCuda } from '../cuda-ipc.js';
import type { DeviceAllocation, DeviceArray, ExportHolder } from '../../cuda/memory.js';
import { cudaAvailable, cudaDevices, cudaFailed, cudaWhy, currentDevice, driver, driverInUse } from '../../cuda/driver.js';
import { staging } from '../../cuda/staging.js';
import { cudaCounters } from '../../cuda/counters.js';

/** Unexpected.segment of an RTS_DEV: its fields wait in DeviceRndv until the receive matches. */
export const SEGMENT_DEVICE = -2;

/** Device receives whose data was copied straight into the device buffer (nothing to upload). */
export const landedOnDevice = new WeakSet<Request>();

/** What the device rendezvous needs from the point-to-point layer. */
export interface DeviceHost {
  readonly params?: Params;
  peerLied(rep: RailEndpoint, why: string): void;
  atClose?(fn: () => void): void;
}

/** Pinned chunks a staged device send keeps in flight. */
const STREAM_PIECES = 4;

export class DeviceRndv implements ExportHolder {
  private readonly host: DeviceHost;
  private readonly out: ControlSender;
  private readonly rndv: Rendezvous;
  private readonly nego: CudaIpcNegotiation;
  private readonly peers = new Map<ProtoEndpoint, { peer: CudaIpcPeer; link: CudaIpcLink }>();
  /** Announcements waiting for their receive, by endpoint and send id. */
  private readonly arrived = new Map<ProtoEndpoint, Map<number, RtsDev>>();
  /** The plan of the send being announced (plan() then encode(), synchronously). */
  private planned = 0;
  /** Our allocations whose handles went to each peer (told when the owner frees them). */
  private readonly exported = new Map<DeviceAllocation, Set<ProtoEndpoint>>();
  /** Frees waiting for a peer to close: by peer, buffer id. */
  private readonly freeing = new Map<ProtoEndpoint, Map<bigint, DeviceAllocation>>();
  private cacheImpl: DeviceHandleCache | null = null;
  private closed = false;

  constructor(host: DeviceHost, am: AmRegistry, out: ControlSender, rndv: Rendezvous) {
    this.host = host;
    this.out = out;
    this.rndv = rndv;
    this.nego = new CudaIpcNegotiation(new ThisProcess(() => this.ipcOn));
    am.register(AM_DEV_CTRL, 'dev-ctrl', this.ctrlHandler);
    host.atClose?.(() => this.close());
  }

  private get ipcOn(): boolean {
    return this.host.params?.cudaIpc ?? true;
  }

  /** Opened peers' allocations (made on first use: it needs the driver). */
  private get cache(): DeviceHandleCache {
    return (this.cacheImpl ??= new DeviceHandleCache(this.host.params?.cudaIpcCache ?? 64, {
      open: (handle) => driver('opening a peer\'s device memory').cudaIpcOpen(handle),
      close: (base) => driverInUse()?.cudaIpcClose(base),
    }));
  }

  // ---- sender ------------------------------------------------------------

  /** How a rendezvous send offers its device memory (DEV_*), or 0 for host memory. */
  plan(ep: ProtoEndpoint, req: Request): number {
    const dev = req.dev as DeviceArray | null;
    if (dev === null) return 0;
    const comp = ep.lane!.rail.component;
    // The same process (a thread rank, or this rank): one context, the pointer is valid there.
    if (comp === 'self' || comp === 'tbsm') return (this.planned = DEV_DIRECT);
    this.planned = DEV_STAGED;
    if (!this.ipcOn) { cudaCounters.stagedIpcOff++; return DEV_STAGED; }
    const a = dev.allocation;
    if (!a.ipcCapable) { cudaCounters.stagedNotExportable++; return DEV_STAGED; }
    const x = this.of(ep);
    if (!this.nego.want(x.peer, x.link)) {
      if (x.peer.tx === IPC_BAD) cudaCounters.stagedNoIpc++;
      else cudaCounters.stagedNegotiating++;
      return DEV_STAGED;
    }
    if (a.ipcHandle === null) {
      try { a.ipcHandle = driver('send').cudaIpcHandle(a.base); } catch { cudaCounters.stagedNotExportable++; return DEV_STAGED; }
    }
    return (this.planned = DEV_IPC);
  }

  /** The RTS_DEV fields after the RTS in v (plan() just chose the way). */
  encode(ep: ProtoEndpoint, req: Request, v: DataView): void {
    const dev = req.dev as DeviceArray;
    const mode = this.planned;
    if (mode === DEV_DIRECT) {
      cudaCounters.directSends++;
      encodeRtsDev(v, DEV_DIRECT, process.pid, dev.ptr, 0n, 0, null);
    } else if (mode === DEV_IPC) {
      cudaCounters.ipcSends++;
      const a = dev.allocation;
      encodeRtsDev(v, DEV_IPC, process.pid, BigInt(dev.byteOffset), a.bufferId, a.bytes, a.ipcHandle);
      let eps = this.exported.get(a);
      if (eps === undefined) { eps = new Set(); this.exported.set(a, eps); a.exports.add(this); }
      eps.add(ep);
    } else {
      cudaCounters.stagedSends++;
      encodeRtsDev(v, DEV_STAGED, process.pid, 0n, 0n, 0, null);
    }
  }

  /** The receiver wants the data streamed: pinned chunks, copy of one overlapping the send of the last. */
  private stream(ep: ProtoEndpoint, req: Request, recvId: number): void {
    const dev = req.dev as DeviceArray;
    if (req.state !== PENDING) return;
    if (dev.byteLength === 0) { req.complete(req.source, req.tag, 0); return; }
    new StagedStream(this.out, ep, req, dev, recvId, Math.max(4096, ep.th.chunk)).pump();
  }

  /** The owner frees `a`: every peer its handle went to closes it first. Returns how many answers to wait for. */
  revoke(a: DeviceAllocation): number {
    const eps = this.exported.get(a);
    this.exported.delete(a);
    if (eps === undefined) return 0;
    let n = 0;
    for (const ep of eps) {
      if (ep.failure !== null || ep.lane === null || this.closed) continue;
      let m = this.freeing.get(ep);
      if (m === undefined) { m = new Map(); this.freeing.set(ep, m); }
      m.set(a.bufferId, a);
      encodeDevFree(this.out.view, DEV_FREE, a.bufferId);
      this.out.send(ep, AM_DEV_CTRL, DEV_CTRL_HDR[DEV_FREE]!);
      n++;
    }
    return n;
  }

  // ---- receiver ----------------------------------------------------------

  /** An RTS_DEV arrived: keep its fields until a receive matches it; its Unexpected.segment. */
  arrivedRts(ep: ProtoEndpoint, v: DataView, o: number, sendId: number): number {
    let m = this.arrived.get(ep);
    if (m === undefined) { m = new Map(); this.arrived.set(ep, m); }
    m.set(sendId, decodeRtsDev(v, o));
    return SEGMENT_DEVICE;
  }

  /** A receive matched a device announcement: copy from the sender's memory, or ask for it staged. */
  read(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number): boolean {
    const m = this.arrived.get(ep)?.get(sendId);
    if (m === undefined) return this.lied(req, ep, `device message ${sendId} was never announced`);
    this.arrived.get(ep)!.delete(sendId);
    if (m.mode === DEV_STAGED) { this.askStaged(req, ep, sendId, size, src, tag); return true; }
    let from: bigint;
    if (m.mode === DEV_DIRECT) {
      from = m.address;
    } else if (m.mode === DEV_IPC) {
      if (Number(m.address) + size > m.allocBytes) return this.lied(req, ep, `device message of ${size} bytes at offset ${m.address} runs past its ${m.allocBytes}-byte allocation`);
      try {
        from = this.cache.base(ep.rank, m.bufferId, m.handle) + m.address;
      } catch (e) {
        // Agreed, yet the handle does not open: this message and later ones go staged.
        const x = this.of(ep);
        this.nego.onOpenFailed(x.peer, x.link, `opening rank ${ep.rank}'s IPC handle failed: ${(e as Error).message}`);
        this.askStaged(req, ep, sendId, size, src, tag);
        return true;
      }
    } else {
      return this.lied(req, ep, `device message mode ${m.mode}`);
    }
    const dst = req.dev as DeviceArray | null;
    try {
      const d = driver('receiving device memory');
      if (size > 0) {
        if (dst !== null) d.cudaCopy(dst.ptr, from, size);
        else d.cudaDownload(req.buf.subarray(0, size), from);
      }
    } catch (e) {
      // The sender is not harmed: FIN completes its send; this receive reports the failure.
      encodeU32(this.out.view, sendId);
      this.out.send(ep, AM_FIN, FIN_HDR);
      req.fail(cudaFailed(`copying a ${size}-byte device message from rank ${ep.rank}`, e));
      return true;
    }
    cudaCounters.deviceRecvs++;
    if (dst !== null) landedOnDevice.add(req);
    encodeU32(this.out.view, sendId);
    this.out.send(ep, AM_FIN, FIN_HDR);
    req.complete(src, tag, size);
    return true;
  }

  /** The peer announced something that cannot be true: its connection is dropped, and this receive fails. */
  private lied(req: Request, ep: ProtoEndpoint, why: string): true {
    this.host.peerLied(ep.lane!, why);
    req.fail(new RailcommError(ErrorCode.PEER_FAILED, `rank ${ep.rank} sent a malformed device message (${why}); its connection was dropped`));
    return true;
  }

  /** Ask the sender to stream the data as rendezvous DATA into req.buf (host; a device receive uploads it after). */
  private askStaged(req: Request, ep: ProtoEndpoint, sendId: number, size: number, src: number, tag: number): void {
    const id = this.rndv.beginRecv(req, ep, size, src, tag);
    encodeDevCts(this.out.view, sendId, id);
    this.out.send(ep, AM_DEV_CTRL, DEV_CTRL_HDR[DEV_CTS]!);
    if (size === 0) { this.rndv.received(req, 0); }
  }

  // ---- control -----------------------------------------------------------

  private of(ep: ProtoEndpoint): { peer: CudaIpcPeer; link: CudaIpcLink } {
    let x = this.peers.get(ep);
    if (x === undefined) {
      const out = this.out;
      const link: CudaIpcLink = {
        sendRequest: (attempt) => { encodeIpcReq(out.view, attempt, process.pid, currentPlace(), hostId()); out.send(ep, AM_DEV_CTRL, DEV_CTRL_HDR[DEV_IPC_REQ]!); },
        sendAck: (status) => { encodeIpcAck(out.view, status); out.send(ep, AM_DEV_CTRL, DEV_CTRL_HDR[DEV_IPC_ACK]!); },
      };
      x = { peer: new CudaIpcPeer(), link };
      this.peers.set(ep, x);
    }
    return x;
  }

  private readonly ctrlHandler: AmHandler = {
    recv: (rep, rx) => {
      const ep = rep.owner as ProtoEndpoint;
      const v = rx.view, o = rx.hdrOff;
      const kind = rx.hdrLen >= 4 ? ctrlKind(v, o) : 0;
      const need = DEV_CTRL_HDR[kind];
      if (need === undefined || need === 0 || rx.hdrLen < need) { this.host.peerLied(rep, `device control message of kind ${kind}, ${rx.hdrLen} bytes`); return; }
      switch (kind) {
        case DEV_IPC_REQ: { const x = this.of(ep); this.nego.onRequest(x.peer, x.link, decodeIpcReq(v, o)); return; }
        case DEV_IPC_ACK: this.nego.onAck(this.of(ep).peer, ipcAckStatus(v, o)); return;
        case DEV_CTS: {
          const sendId = devCtsSendId(v, o);
          const req = this.rndv.takeSend(ep, sendId);
          if (req === undefined || req.dev === null) { this.host.peerLied(rep, `device clear-to-send for unknown send ${sendId}`); return; }
          // It asked for staging after an IPC offer: its open failed (it also said NO to further offers).
          this.stream(ep, req, devCtsRecvId(v, o));
          return;
        }
        case DEV_FREE: {
          const id = devFreeBufferId(v, o);
          this.cacheImpl?.invalidate(ep.rank, id);
          encodeDevFree(this.out.view, DEV_FREE_ACK, id);
          this.out.send(ep, AM_DEV_CTRL, DEV_CTRL_HDR[DEV_FREE_ACK]!);
          return;
        }
        case DEV_FREE_ACK: {
          const id = devFreeBufferId(v, o);
          const m = this.freeing.get(ep);
          const a = m?.get(id);
          if (a === undefined) return; // late (the peer failed meanwhile and we released it already)
          m!.delete(id);
          a.ack();
          return;
        }
      }
    },
  };

  // ---- failures, closing and reports ---------------------------------------

  /** The peer is gone: its opened allocations close, its frees need no answer, its announcements are void. */
  peerFailed(ep: ProtoEndpoint): void {
    this.arrived.delete(ep);
    this.cacheImpl?.invalidatePeer(ep.rank);
    const m = this.freeing.get(ep);
    this.freeing.delete(ep);
    if (m !== undefined) for (const a of m.values()) a.ack();
    for (const eps of this.exported.values()) eps.delete(ep);
  }

  /** finalize: close every opened allocation; frees waiting for answers go ahead. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cacheImpl?.clear();
    for (const m of this.freeing.values()) for (const a of m.values()) a.ack();
    this.freeing.clear();
    for (const a of this.exported.keys()) a.exports.delete(this);
    this.exported.clear();
    this.arrived.clear();
  }

  /** Counters and negotiation states (--stats, railcomm info). */
  snapshot(): Record<string, unknown> {
    const peers: Record<string, { tx: string; rx: string; tries: number; why?: string }> = {};
    for (const [ep, { peer }] of this.peers) {
      peers[String(ep.rank)] = { tx: IPC_STATE_NAMES[peer.tx]!, rx: IPC_STATE_NAMES[peer.rx]!, tries: peer.tries, ...(peer.why !== '' ? { why: peer.why } : {}) };
    }
    const c = this.cacheImpl;
    return {
      ...cudaCounters,
      handleCache: { hits: c?.hits ?? 0, misses: c?.misses ?? 0, open: c?.size ?? 0, closed: c?.closed ?? 0, capacity: c?.capacity ?? (this.host.params?.cudaIpcCache ?? 64) },
      ipc: peers,
      pinned: { ...staging().counters },
    };
  }

  /** Whether this rank ever moved device memory (stats print the block then). */
  get used(): boolean {
    return this.peers.size > 0 || this.cacheImpl !== null || cudaCounters.eagerStaged + cudaCounters.ipcSends + cudaCounters.directSends + cudaCounters.stagedSends + cudaCounters.deviceRecvs + cudaCounters.uploadedRecvs > 0;
  }
}

/**
 * A staged device send: the data goes through STREAM_PIECES pinned chunks,
 * each copied from the device and handed to the rail; a chunk the rail is done
 * with takes the next piece of data. Completes the send after the last chunk.
 */
class StagedStream {
  private readonly out: ControlSender;
  private readonly ep: ProtoEndpoint;
  private readonly req: Request;
  private readonly dev: DeviceArray;
  private readonly recvId: number;
  private readonly chunk: number;
  private readonly size: number;
  private readonly pieces: StreamPiece[] = [];
  private off = 0;
  private inFlight = 0;
  private pumping = false;
  private again = false;
  private done = false;

  constructor(out: ControlSender, ep: ProtoEndpoint, req: Request, dev: DeviceArray, recvId: number, chunk: number) {
    this.out = out; this.ep = ep; this.req = req; this.dev = dev; this.recvId = recvId; this.chunk = chunk;
    this.size = dev.byteLength;
    const n = Math.min(STREAM_PIECES, Math.ceil(this.size / chunk));
    for (let i = 0; i < n; i++) this.pieces.push(new StreamPiece(this, staging().acquire(Math.min(chunk, this.size))));
  }

  pump(): void {
    if (this.pumping) { this.again = true; return; }
    this.pumping = true;
    try {
      do {
        this.again = false;
        while (!this.done && this.off < this.size) {
          const p = this.pieces.find((x) => !x.busy);
          if (p === undefined) break;
          const n = Math.min(this.chunk, this.size - this.off);
          const view = p.buf.subarray(0, n);
          try {
            driver('staged device send').cudaDownload(view, this.dev.ptr + BigInt(this.off));
          } catch (e) {
            this.fail(cudaFailed(`copying a chunk of a ${this.size}-byte device message to host memory`, e));
            return;
          }
          encodeData(this.out.view, this.recvId, this.off);
          this.off += n;
          this.inFlight++;
          p.busy = true;
          cudaCounters.stagedChunks++;
          const ep = this.ep;
          if (ep.failure !== null) { this.fail(ep.failure); return; }
          if (ep.hasPending || ep.lane!.sendZcopy(AM_DATA, this.out.scratch, DATA_HDR, view, p) === NO_RESOURCE) {
            ep.pushOp(ProtoEndpoint.op(AM_DATA, this.out.scratch, DATA_HDR, view, true, null, p));
          }
        }
      } while (this.again && !this.done);
    } finally {
      this.pumping = false;
    }
    this.finishIfDone();
  }

  pieceDone(p: StreamPiece, err: RailcommError | null): void {
    this.inFlight--;
    p.busy = false;
    if (err !== null) { this.fail(err); return; }
    if (this.off < this.size) this.pump();
    else this.finishIfDone();
  }

  private finishIfDone(): void {
    if (this.done || this.off < this.size || this.inFlight > 0) return;
    this.done = true;
    this.release();
    this.req.complete(this.req.source, this.req.tag, this.size);
  }

  private fail(err: RailcommError): void {
    if (this.done) return;
    this.done = true;
    this.req.fail(err);
    if (this.inFlight === 0) this.release();
  }

  private release(): void {
    // Pieces still with the rail are dropped to the collector, not reused.
    for (const p of this.pieces) if (!p.busy) staging().release(p.buf);
    this.pieces.length = 0;
  }
}

class StreamPiece implements Completion {
  busy = false;
  readonly buf: Uint8Array;
  private readonly stream: StagedStream;

  constructor(stream: StagedStream, buf: Uint8Array) {
    this.stream = stream;
    this.buf = buf;
  }

  railComplete(err: RailcommError | null): void {
    this.stream.pieceDone(this, err);
  }
}

/** This process as the negotiation's LocalCuda (the real driver). */
class ThisProcess implements LocalCuda {
  private readonly on: () => boolean;
  constructor(on: () => boolean) { this.on = on; }
  never(): string {
    if (!this.on()) return 'RAILCOMM_CUDA_IPC=0 at the receiver';
    return cudaAvailable() ? '' : `no CUDA at the receiver (${cudaWhy()})`;
  }
  ready(): boolean { return driverInUse() !== null; }
  hostId(): bigint { return hostId(); }
  pid(): number { return process.pid; }
  deviceAt(place: DevicePlace): number {
    return cudaDevices().findIndex((d) => d.domain === place.domain && d.bus === place.bus && d.slot === place.slot);
  }
  current(): number { return currentDevice(); }
  canAccessPeer(mine: number, theirs: number): boolean {
    try { return driver('cuDeviceCanAccessPeer').cudaCanAccessPeer(mine, theirs); } catch { return false; }
  }
}

function currentPlace(): DevicePlace {
  const d = cudaDevices()[currentDevice()];
  return d === undefined ? { domain: 0xffffffff, bus: 0, slot: 0 } : { domain: d.domain, bus: d.bus, slot: d.slot };
}

let host: bigint | null = null;
/** This host, as a 64-bit hash of its name and boot id (two containers of one host share the boot id, not always the name). */
function hostId(): bigint {
  if (host !== null) return host;
  let boot = '';
  try { boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(); } catch { /* not Linux: the name alone */ }
  let h = 0xcbf29ce484222325n;
  for (const ch of Buffer.from(`${hostname()}/${boot}`)) h = ((h ^ BigInt(ch)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return (host = h);
}

