// The origin's operations that wait for replies, by the id their request
// carried, and the replies that complete them (AM_RMA_REPLY, AM_RMA_GET_DATA):
// a get's bytes, an atomic's old value, a flush, lock or unlock answered.

import type { AmHandler } from '../../rail/api.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { readValue } from './apply.js';
import { RMA_OK, replyOffset, replyOpId, replyStatus } from './wire.js';
import { K_ATOMIC, K_FLUSH, K_GET, K_UNLOCK, KIND_NAMES, type RmaOp } from './op.js';

const STATUS_TEXT = ['', 'the target region is not registered (window freed?)', 'the range is outside the target region', 'the target refused the operation or element type'];

export class PendingOps {
  private readonly ops = new Map<number, RmaOp>();
  private nextOpId = 1;
  private readonly val = new DataView(new ArrayBuffer(8));
  private readonly valBytes = new Uint8Array(this.val.buffer);
  /** The engine's counter of protocol errors from peers (unknown op ids, bad ranges). */
  private readonly counts: { protocolErrors: number };

  constructor(counts: { protocolErrors: number }) {
    this.counts = counts;
  }

  /** A new id for op (its replies carry it), unique among the operations waiting. */
  track(op: RmaOp): number {
    let id = this.nextOpId;
    this.nextOpId = id >= 0xfffffffe ? 1 : id + 1;
    while (this.ops.has(id)) id = id >= 0xfffffffe ? 1 : id + 1;
    this.ops.set(id, op);
    return id;
  }

  /** op settled: its id no longer answers replies. */
  drop(op: RmaOp): void {
    if (op.id !== 0 && this.ops.get(op.id) === op) this.ops.delete(op.id);
  }

  /** The operations waiting for replies. */
  values(): IterableIterator<RmaOp> {
    return this.ops.values();
  }

  readonly getDataHandler: AmHandler = {
    place: (_rep, rx) => {
      const op = this.ops.get(replyOpId(rx.view, rx.hdrOff));
      if (op === undefined || op.kind !== K_GET) { this.counts.protocolErrors++; return null; }
      const off = replyOffset(rx.view, rx.hdrOff);
      if (off + rx.payLen > op.bytes.byteLength) { this.counts.protocolErrors++; return null; }
      return op.bytes.subarray(off, off + rx.payLen);
    },
    recv: (rep, rx) => this.replyHandler.recv(rep, rx),
  };

  readonly replyHandler: AmHandler = {
    recv: (_rep, rx) => {
      const op = this.ops.get(replyOpId(rx.view, rx.hdrOff));
      if (op === undefined) { this.counts.protocolErrors++; return; }
      const status = replyStatus(rx.view, rx.hdrOff);
      if (status !== RMA_OK) {
        op.fail(new RailcommError(ErrorCode.INVALID_ARG, `${KIND_NAMES[op.kind]} on rank ${op.target}: ${STATUS_TEXT[status] ?? `status ${status}`}`));
        return;
      }
      switch (op.kind) {
        case K_GET: {
          const off = replyOffset(rx.view, rx.hdrOff);
          if (off + rx.payLen > op.bytes.byteLength) { this.counts.protocolErrors++; return; }
          if (rx.placed === null) op.bytes.set(rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen), off);
          op.awaiting -= rx.payLen;
          break;
        }
        case K_ATOMIC:
          if (rx.payLen !== 8) { this.counts.protocolErrors++; return; }
          this.valBytes.set(rx.buf.subarray(rx.payOff, rx.payOff + 8));
          op.result = readValue(this.val, 0, op.type);
          op.awaiting = 0;
          break;
        case K_FLUSH:
        case K_UNLOCK:
          // (What it covers counts as flushed once it finishes: a flush may also wait for native operations.)
          op.awaiting = 0;
          break;
        default:
          op.awaiting = 0;
      }
      op.check();
    },
  };
}
