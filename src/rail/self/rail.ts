// The self rail: active messages from a rank to itself. Copies are taken at
// send time (sendCopy) or the caller's memory is read at delivery (sendZcopy);
// delivery runs on a later event-loop turn so that no send re-enters a receive.

import type { AmHandler, Completion, Device, Rail, RailCaps, RailEndpoint, RailEnv, RailStatus, RxFrame } from '../api.js';
import { DONE, IN_PROGRESS } from '../api.js';
import { TrafficCounters } from '../../core/counters.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';

/**
 * Largest payload one active message to self carries, copied or not: as on
 * the network rails (tcp's and udp's 4 MiB frames). Larger messages go the
 * way they go everywhere, by rendezvous in chunks of RAILCOMM_RNDV_CHUNK (at
 * most this), so one message never costs more than this much again at once
 * (a 1 GiB limit let a self send of 1 GiB make a 1 GiB copy per hop).
 */
const AM_MAX = 4 << 20;

interface Pending {
  am: number;
  /** Header followed by the payload when copied; only the header for zero-copy. */
  bytes: Buffer;
  hdrLen: number;
  zcopy: Uint8Array | null;
  done: Completion | null;
}

export class SelfRail implements Rail {
  readonly name = 'self';
  readonly component = 'self';
  readonly device: Device;
  readonly counters = new TrafficCounters();
  readonly caps: RailCaps = {
    reliable: true, ordered: true,
    amHeaderMax: 256, amShortMax: 1 << 16, amCopyMax: AM_MAX, amZcopyMax: AM_MAX,
    put: false, get: false, atomics: false, syncWait: 'memory',
    latencyUs: 0.1, bandwidthMBps: 20000,
  };
  private readonly env: RailEnv;
  private ep: SelfEndpoint | null = null;

  constructor(device: Device, env: RailEnv) {
    this.device = device;
    this.env = env;
  }

  address(): string {
    return 'self';
  }

  endpoint(peer: bigint, _address: string): RailEndpoint {
    if (peer !== this.env.self) {
      throw new RailcommError(ErrorCode.NO_RAIL, `the self rail only reaches this process, not endpoint ${peer}`);
    }
    this.ep ??= new SelfEndpoint(this, this.env);
    return this.ep;
  }

  async close(): Promise<void> {
    await this.ep?.close();
  }
}

class SelfEndpoint implements RailEndpoint {
  readonly rail: SelfRail;
  readonly peer: bigint;
  readonly counters: TrafficCounters;
  owner: unknown = null;
  private readonly env: RailEnv;
  private queue: Pending[] = [];
  private scheduled = false;
  private closed = false;
  private readonly rx: RxFrame = { buf: Buffer.alloc(0), view: new DataView(new ArrayBuffer(0)), hdrOff: 0, hdrLen: 0, payOff: 0, payLen: 0, placed: null, words: null };
  private readonly drain = (): void => this.deliverAll();

  constructor(rail: SelfRail, env: RailEnv) {
    this.rail = rail;
    this.peer = env.self;
    this.env = env;
    this.counters = rail.counters;
  }

  sendCopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null): RailStatus {
    const payLen = payload === null ? 0 : payload.length;
    const bytes = Buffer.allocUnsafe(hdrLen + payLen);
    bytes.set(hdr.subarray(0, hdrLen), 0);
    if (payload !== null) bytes.set(payload, hdrLen);
    this.push({ am, bytes, hdrLen, zcopy: null, done: null });
    return DONE;
  }

  sendZcopy(am: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array, done: Completion): RailStatus {
    this.push({ am, bytes: Buffer.from(hdr.subarray(0, hdrLen)), hdrLen, zcopy: payload, done });
    return IN_PROGRESS;
  }

  private push(p: Pending): void {
    this.counters.msgsSent++;
    this.counters.bytesSent += p.zcopy !== null ? p.zcopy.byteLength : p.bytes.length - p.hdrLen;
    this.queue.push(p);
    if (!this.scheduled) { this.scheduled = true; setImmediate(this.drain); }
  }

  /**
   * Deliver what is queued now, without waiting for the event loop (a
   * synchronous call waits for its own message this way; it runs outside any
   * handler, so no send re-enters a receive). True if anything was delivered.
   */
  poll(): boolean {
    if (this.queue.length === 0) return false;
    this.deliverAll();
    return true;
  }

  private deliverAll(): void {
    this.scheduled = false;
    const q = this.queue;
    this.queue = [];
    for (const p of q) {
      try {
        this.deliver(p);
      } catch (e) {
        this.env.log.error(`self: delivering active message ${p.am} failed: ${(e as Error)?.stack ?? String(e)}`);
        p.done?.railComplete(new RailcommError(ErrorCode.INVALID_ARG, `delivery to self failed: ${(e as Error)?.message ?? String(e)}`));
      }
    }
  }

  private deliver(p: Pending): void {
    if (this.closed) { p.done?.railComplete(new RailcommError(ErrorCode.FINALIZED, 'self rail closed')); return; }
    const h: AmHandler | undefined = this.env.upcalls.am[p.am];
    if (h === undefined) { this.env.log.error(`self: no handler for active message ${p.am}`); return; }
    const rx = this.rx;
    let bytes = p.bytes;
    if (p.zcopy !== null) {
      // Present header + payload as one frame without copying the payload unless it must be placed.
      if (h.place === undefined) {
        bytes = Buffer.allocUnsafe(p.hdrLen + p.zcopy.byteLength);
        p.bytes.copy(bytes, 0, 0, p.hdrLen);
        bytes.set(p.zcopy, p.hdrLen);
      }
    }
    rx.buf = bytes;
    rx.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    rx.hdrOff = 0; rx.hdrLen = p.hdrLen; rx.payOff = p.hdrLen;
    rx.payLen = p.zcopy !== null ? p.zcopy.byteLength : bytes.length - p.hdrLen;
    rx.placed = null;
    if (h.place !== undefined && rx.payLen > 0) {
      const target = h.place(this, rx);
      if (target !== null) {
        target.set(p.zcopy !== null ? p.zcopy : bytes.subarray(p.hdrLen));
        rx.placed = target;
        h.recv(this, rx);
      }
    } else {
      h.recv(this, rx);
    }
    this.counters.msgsRecv++;
    this.counters.bytesRecv += rx.payLen;
    p.done?.railComplete(null);
  }

  abort(reason: string): void {
    // Only this process writes to the self rail: a bad message is a railcomm bug.
    this.counters.badFrames++;
    this.env.log.error(`self: dropped a message: ${reason}`);
  }

  async close(): Promise<void> {
    this.deliverAll();
    this.closed = true;
  }
}
