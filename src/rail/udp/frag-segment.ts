// Fragments in segments: a whole one that makes a FRAG datagram, later ones
// packed after it (wire.ts: one record each), a large one cut into CHUNKs as
// the window opens, and the seal every datagram gets at each transmission
// (the session's MAC, or a checksum).

import type { Completion } from '../api.js';
import type { SessionHost, SessionLimits } from './session-host.js';
import { Frag, SEG_OVERHEAD, Segment } from './segment.js';
import { datagramSum } from './checksum.js';
import { datagramMac } from './mac.js';
import {
  CHUNK_BYTES, FRAG_BYTES, RECORD_BYTES, T_CHUNK, T_FRAG,
  encodeChunk, encodeCommon, encodeFrag, encodeRecord, markCrcSum, markHeaderSum, markMac, setSum,
} from './wire.js';

/** Datagrams at least this long carry CRC32C when this process has it in hardware. */
const CRC_FROM_BYTES = 512;

/** Header then payload at `at` of b (short payloads byte by byte: cheaper than a call). */
function copyIn(b: Buffer, at: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null, payLen: number): void {
  for (let i = 0; i < hdrLen; i++) b[at + i] = hdr[i]!;
  if (payload === null) return;
  const p = at + hdrLen;
  if (payLen <= 64) for (let i = 0; i < payLen; i++) b[p + i] = payload[i]!;
  else b.set(payload, p);
}

/** Make seg a FRAG of this one fragment (sequence number, ACK and seal come when it is posted). */
export function fillFrag(seg: Segment, token: number, am: number, flags: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null, payLen: number): void {
  const v = seg.view;
  encodeCommon(v, T_FRAG, token, 0);
  encodeFrag(v, am, flags, hdrLen, payLen);
  copyIn(seg.buf, FRAG_BYTES, hdr, hdrLen, payload, payLen);
  seg.len = FRAG_BYTES + hdrLen + payLen;
  seg.weight = seg.len + SEG_OVERHEAD;
}

/**
 * Pack one more whole fragment after those in `tail`, a FRAG not posted yet,
 * up to a datagram of dataMax bytes; a tiny segment that outgrows its buffer
 * is copied into a full-size one and given back. Returns the segment that
 * holds it now (tail or its replacement), or null: no room, nothing taken.
 * Not with a header-only checksum (RAILCOMM_UDP_CHECKSUM=0): it would not
 * cover the later records.
 */
export function packFrag(host: SessionHost, tail: Segment, am: number, flags: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array | null, payLen: number): Segment | null {
  const lim = host.limits;
  const at = tail.len;
  const end = at + RECORD_BYTES + hdrLen + payLen;
  if (end > lim.dataMax || lim.headerSumOnly === true) return null;
  let seg = tail;
  if (end > seg.buf.length) {
    seg = host.segment(false);
    seg.owner = tail.owner;
    tail.buf.copy(seg.buf, 0, 0, at);
    host.release(tail);
  }
  encodeRecord(seg.view, at, am, flags, hdrLen, payLen);
  copyIn(seg.buf, at + RECORD_BYTES, hdr, hdrLen, payload, payLen);
  seg.len = end;
  seg.weight = end + SEG_OVERHEAD;
  host.counters.bundled++;
  return seg;
}

/**
 * A message too big for one datagram, as a Frag to be cut into CHUNKs: a copy
 * of the payload now, or (done set: a zero-copy send) the caller's bytes,
 * read as its chunks are cut.
 */
export function takeFrag(host: SessionHost, fragId: number, am: number, flags: number, hdr: Uint8Array, hdrLen: number, payload: Uint8Array, payLen: number, done: Completion | null): Frag {
  const f = host.frag();
  f.am = am;
  f.flags = flags;
  f.hdr.set(hdr.subarray(0, hdrLen), 0);
  f.hdrLen = hdrLen;
  f.payload = done === null ? Buffer.from(payload) : payload;
  f.payLen = payLen;
  f.off = 0;
  f.fragId = fragId;
  f.done = done;
  return f;
}

/** The length of f's next CHUNK datagram: as much of the payload as dataMax leaves room for (the AM header rides in the first). */
export function chunkLength(lim: SessionLimits, f: Frag): number {
  const head = CHUNK_BYTES + (f.off === 0 ? f.hdrLen : 0);
  return head + Math.min(lim.dataMax - head, f.payLen - f.off);
}

/** Cut f's next chunk (len from chunkLength) into seg; the payload bytes it took (f.off is not moved). */
export function cutChunk(seg: Segment, f: Frag, token: number, len: number): number {
  const v = seg.view;
  encodeCommon(v, T_CHUNK, token, 0);
  encodeChunk(v, f.am, f.flags, f.hdrLen, f.payLen, f.fragId, f.off);
  let at = CHUNK_BYTES;
  if (f.off === 0) { seg.buf.set(f.hdr.subarray(0, f.hdrLen), at); at += f.hdrLen; }
  const n = len - at;
  seg.buf.set(f.payload.subarray(f.off, f.off + n), at);
  seg.len = len;
  seg.weight = len + SEG_OVERHEAD;
  return n;
}

/** The field at byte 4, for this transmission: the session's MAC over every byte, else the checksum limits name. */
export function seal(seg: Segment, key: Uint8Array | null, lim: SessionLimits): void {
  if (key !== null) {
    // The MAC covers the whole datagram (a header-only checksum would leave the payload forgeable).
    markMac(seg.view);
    setSum(seg.view, datagramMac(seg.buf, seg.len, key));
    return;
  }
  if (lim.headerSumOnly === true) markHeaderSum(seg.view);
  // The addon's CRC32C beats the JS sum from about 512 bytes (202 vs 322 ns at 1472 B)
  // but not below, where the call dominates (118 vs 71 ns at 256 B; bench/udp-checksum.mjs).
  else if (lim.crc32c === true && seg.len >= CRC_FROM_BYTES) markCrcSum(seg.view);
  setSum(seg.view, datagramSum(seg.view, seg.buf, seg.len, seg.words));
}
