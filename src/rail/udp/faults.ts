// Fault injection for tests (RAILCOMM_UDP_FAULTS): per datagram, on both
// channels, drop, duplicate, reorder (hold back behind the next one), corrupt
// (flip a byte of a copy) or delay. Parsing is strict: a typo is an error.

import { invalidArg } from '../../core/errors.js';

export interface FaultSpec {
  drop: number;
  dup: number;
  reorder: number;
  corrupt: number;
  delayMs: number;
}

export function parseFaults(text: string): FaultSpec | null {
  const t = text.trim();
  if (t === '' || t === '0' || t === 'none') return null;
  const f: FaultSpec = { drop: 0, dup: 0, reorder: 0, corrupt: 0, delayMs: 0 };
  for (const part of t.split(',')) {
    const [k, v] = part.split('=').map((s) => s.trim());
    if (k === undefined || v === undefined || v === '') throw invalidArg(`RAILCOMM_UDP_FAULTS: '${part}' is not name=value (e.g. drop=0.05,dup=0.02,reorder=0.1,corrupt=0.001,delay=2ms)`);
    if (k === 'delay') {
      const m = /^(\d+(?:\.\d+)?)(ms)?$/.exec(v);
      if (m === null) throw invalidArg(`RAILCOMM_UDP_FAULTS: delay=${v}: expected milliseconds such as 2ms`);
      f.delayMs = Number(m[1]);
      continue;
    }
    const p = Number(v);
    if (!Number.isFinite(p) || p < 0 || p > 1) throw invalidArg(`RAILCOMM_UDP_FAULTS: ${k}=${v}: expected a probability between 0 and 1`);
    if (k === 'drop') f.drop = p;
    else if (k === 'dup') f.dup = p;
    else if (k === 'reorder') f.reorder = p;
    else if (k === 'corrupt') f.corrupt = p;
    else throw invalidArg(`RAILCOMM_UDP_FAULTS: unknown fault '${k}' (known: drop, dup, reorder, corrupt, delay)`);
  }
  return f;
}

/** Where datagrams go once the faults are decided. */
export interface FaultWire {
  put(buf: Uint8Array, len: number, port: number, ip: string, prio: boolean): void;
}

export interface FaultCounts {
  faultDrops: number;
  faultDups: number;
  faultReorders: number;
  faultCorrupts: number;
}

interface Held { buf: Buffer; port: number; ip: string; prio: boolean }

export class FaultInjector {
  private readonly f: FaultSpec;
  private readonly wire: FaultWire;
  private readonly counts: FaultCounts;
  private readonly rand: () => number;
  private held: Held | null = null;
  private heldTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(f: FaultSpec, wire: FaultWire, counts: FaultCounts, rand: () => number = Math.random) {
    this.f = f;
    this.wire = wire;
    this.counts = counts;
    this.rand = rand;
  }

  send(buf: Uint8Array, len: number, port: number, ip: string, prio: boolean): void {
    if (this.closed) return;
    const f = this.f;
    if (f.drop > 0 && this.rand() < f.drop) { this.counts.faultDrops++; return; }
    let out: Uint8Array = buf;
    let copied = false;
    if (f.corrupt > 0 && this.rand() < f.corrupt) {
      // Corrupt a copy: the original stays intact for retransmission.
      const c = Buffer.from(buf.subarray(0, len));
      c[Math.floor(this.rand() * len)]! ^= 1 << Math.floor(this.rand() * 8);
      out = c;
      copied = true;
      this.counts.faultCorrupts++;
    }
    const dup = f.dup > 0 && this.rand() < f.dup;
    if (dup) this.counts.faultDups++;
    if (f.reorder > 0 && this.held === null && this.rand() < f.reorder) {
      this.counts.faultReorders++;
      this.held = { buf: copied ? (out as Buffer) : Buffer.from(buf.subarray(0, len)), port, ip, prio };
      // Released after the next datagram, or shortly if none follows.
      this.heldTimer = setTimeout(() => this.release(), 2);
      this.heldTimer.unref();
      if (dup) this.emit(out, len, port, ip, prio, copied);
      return;
    }
    this.emit(out, len, port, ip, prio, copied);
    if (dup) this.emit(out, len, port, ip, prio, copied);
    this.release();
  }

  private emit(buf: Uint8Array, len: number, port: number, ip: string, prio: boolean, copied: boolean): void {
    if (this.f.delayMs > 0) {
      const c = copied ? buf : Buffer.from(buf.subarray(0, len));
      setTimeout(() => { if (!this.closed) this.wire.put(c, len, port, ip, prio); }, this.f.delayMs).unref();
      return;
    }
    this.wire.put(buf, len, port, ip, prio);
  }

  private release(): void {
    const h = this.held;
    if (h === null) return;
    this.held = null;
    if (this.heldTimer !== null) { clearTimeout(this.heldTimer); this.heldTimer = null; }
    this.emit(h.buf, h.buf.length, h.port, h.ip, h.prio, true);
  }

  close(): void {
    this.closed = true;
    if (this.heldTimer !== null) clearTimeout(this.heldTimer);
    this.held = null;
  }
}
