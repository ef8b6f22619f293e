// Sessions a udp rail dropped (abort, impossible data, a peer silent too long):
// the peer is told with a RESET, and whatever it still sends on the dropped
// session is answered with another (the first may have been lost), so that it
// fails this rank at once instead of waiting for ACKs until its timeout. A
// tomb keeps the session's MAC key: its RESETs carry the MAC, and only a
// datagram that carries a valid one draws an answer.

import { ACK_BYTES, encodeReset, getSum, isMac, markMac, setSum } from './wire.js';
import { datagramSum } from './checksum.js';
import { datagramMac } from './mac.js';

/** Dropped sessions remembered (the oldest is forgotten first). */
const TOMBS_MAX = 1024;
/** At most one RESET per dropped session in this long (ms): a burst of its segments draws one answer. */
const RESET_EVERY_MS = 20;

interface Tomb {
  ip: string;
  prioPort: number;
  /** The token the peer chose for us (on what we send it), and ours (on what it sends us). */
  peerToken: number;
  myToken: number;
  /** The session's MAC key (null: it had none). */
  key: Uint8Array | null;
  lastReset: number;
}

/** Where RESETs go: the rail's priority channel (through fault injection when it is on). */
export type ResetWire = (buf: Buffer, port: number, ip: string) => void;

export class Tombstones {
  private readonly tombs = new Map<number, Tomb>();
  private readonly wire: ResetWire;
  private readonly now: () => number;
  /** RESETs sent. */
  sent = 0;

  constructor(wire: ResetWire, now: () => number) {
    this.wire = wire;
    this.now = now;
  }

  /** A token still answered with RESETs (not to be handed out again meanwhile). */
  has(myToken: number): boolean {
    return this.tombs.has(myToken);
  }

  /** The session with these tokens (and MAC key), to the peer at ip / prioPort, is dropped: tell the peer now (unless not `resetNow`). */
  drop(ip: string, prioPort: number, peerToken: number, myToken: number, key: Uint8Array | null = null, resetNow = true): void {
    if (this.tombs.size >= TOMBS_MAX) this.tombs.delete(this.tombs.keys().next().value!);
    const t: Tomb = { ip, prioPort, peerToken, myToken, key, lastReset: -Infinity };
    this.tombs.set(myToken, t);
    if (resetNow) this.reset(t);
  }

  /**
   * A datagram (checked but for its MAC) with a token no live session has:
   * true when it belongs to a dropped one and is genuine (answered with a
   * RESET). A session that had a MAC key answers only datagrams with its MAC.
   */
  answer(myToken: number, buf: Uint8Array, v: DataView, len: number): boolean {
    const t = this.tombs.get(myToken);
    if (t === undefined) return false;
    if (t.key !== null ? !isMac(v) || datagramMac(buf, len, t.key) !== getSum(v) : isMac(v)) return false;
    this.reset(t);
    return true;
  }

  clear(): void {
    this.tombs.clear();
  }

  private reset(t: Tomb): void {
    const now = this.now();
    if (now - t.lastReset < RESET_EVERY_MS) return;
    t.lastReset = now;
    // Rare: a buffer of its own each time, never one a queued send still holds.
    const b = Buffer.alloc(ACK_BYTES);
    const v = new DataView(b.buffer, b.byteOffset, ACK_BYTES);
    encodeReset(v, t.peerToken, t.myToken);
    if (t.key !== null) { markMac(v); setSum(v, datagramMac(b, ACK_BYTES, t.key)); }
    else setSum(v, datagramSum(v, b, ACK_BYTES));
    this.sent++;
    this.wire(b, t.prioPort, t.ip);
  }
}
