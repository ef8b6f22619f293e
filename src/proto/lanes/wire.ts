// Wire format of multirail: the envelope a peer with several lanes wraps its
// active messages in (a per-peer number and a cumulative acknowledgement, so
// that what a failed lane lost is sent again on another and taken once), the
// explicit acknowledgement, and the per-lane heartbeat. Little endian.

/** Active message ids (proto/wire.ts holds the others; 9 and 10 are the GPU paths', proto/cuda-wire.ts). */
export const AM_LANE_ENV = 11;
export const AM_LANE_ACK = 12;
export const AM_LANE_PING = 13;
export const AM_LANE_PONG = 14;
export const AM_LANE_DOWN = 15;

/*
 * ENVELOPE (12 bytes), then the inner AM's header, then its payload:
 *   0 number of this message (u32, per sender and peer, from 1)
 *   4 cumulative acknowledgement (u32): every message from the peer up to this one arrived
 *   8 inner AM id (u8) | 9 reserved (u8) | 10 inner header length (u16)
 *
 * ACK (4 bytes): 0 cumulative acknowledgement (u32)
 * PING, PONG (8 bytes): 0 lane index at the sender of the PING (u32) | 4 ping number (u32)
 * DOWN (4 bytes, reserved, 0), then a UTF-8 payload of at most DOWN_MAX bytes,
 *   "component\nfrom\nto\nwhy": the sender gave up, for that reason, on its lane
 *   of that component from its rail address `from` to the receiver's `to`
 */
export const ENV_HDR = 12;
export const ACK_HDR = 4;
export const PING_HDR = 8;
export const DOWN_HDR = 4;
export const DOWN_MAX = 1024;

export function encodeEnvelope(v: DataView, num: number, ack: number, am: number, innerHdrLen: number): void {
  v.setUint32(0, num, true);
  v.setUint32(4, ack, true);
  v.setUint8(8, am);
  v.setUint8(9, 0);
  v.setUint16(10, innerHdrLen, true);
}
export const envNum = (v: DataView, o: number): number => v.getUint32(o, true);
export const envAck = (v: DataView, o: number): number => v.getUint32(o + 4, true);
export const envAm = (v: DataView, o: number): number => v.getUint8(o + 8);
export const envInnerHdrLen = (v: DataView, o: number): number => v.getUint16(o + 10, true);

export function encodePing(v: DataView, lane: number, n: number): void {
  v.setUint32(0, lane, true);
  v.setUint32(4, n, true);
}
export const pingLane = (v: DataView, o: number): number => v.getUint32(o, true);
export const pingNum = (v: DataView, o: number): number => v.getUint32(o + 4, true);

/** A lane-down notice's payload; the reason is cut to keep it under DOWN_MAX bytes. */
export function encodeDown(component: string, from: string, to: string, why: string): Buffer {
  return Buffer.from(`${component}\n${from}\n${to}\n${why.slice(0, 400)}`, 'utf8').subarray(0, DOWN_MAX);
}

/** A lane-down notice's parts, or null when it is not one. */
export function decodeDown(text: string): { component: string; from: string; to: string; why: string } | null {
  const parts = text.split('\n');
  if (parts.length < 4 || parts[0] === '' || parts[1] === '' || parts[2] === '') return null;
  return { component: parts[0]!, from: parts[1]!, to: parts[2]!, why: parts.slice(3).join('\n') };
}
