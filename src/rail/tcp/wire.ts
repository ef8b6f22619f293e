// tcp rail wire format: the connection handshake (job-key proof in both
// directions) and the frame header every active message carries afterwards.
// Nothing outside this file reads raw offsets.

/*
 * Frame header, 12 bytes, little endian, followed by `hdrLen` bytes of AM
 * header and `payLen` bytes of payload:
 *
 *   byte  0      1      2        3
 *       +------+------+--------+--------+
 *     0 | magic 0x52 0x43 'RC'  | version| am id  |
 *       +------+------+--------+--------+
 *     4 | header length (u16) | flags (u16)     |
 *       +------+------+--------+--------+
 *     8 | payload length (u32)                  |
 *       +------+------+--------+--------+
 *
 * am id 0 is the rail's own control frame (flags: BYE = orderly close).
 */
export const FRAME_MAGIC = 0x4352; // 'R','C' read as little-endian u16
export const FRAME_VERSION = 1;
export const FRAME_HEADER = 12;
export const AM_CONTROL = 0;
export const CTRL_BYE = 1;

export function encodeFrameHeader(v: DataView, off: number, am: number, hdrLen: number, payLen: number, flags = 0): void {
  v.setUint16(off, FRAME_MAGIC, true);
  v.setUint8(off + 2, FRAME_VERSION);
  v.setUint8(off + 3, am);
  v.setUint16(off + 4, hdrLen, true);
  v.setUint16(off + 6, flags, true);
  v.setUint32(off + 8, payLen, true);
}

/** Why a frame header is refused, or null if it is well formed. */
export function checkFrameHeader(v: DataView, off: number, hdrMax: number, payMax: number): string | null {
  const magic = v.getUint16(off, true);
  if (magic !== FRAME_MAGIC) return `bad magic 0x${magic.toString(16)}`;
  const ver = v.getUint8(off + 2);
  if (ver !== FRAME_VERSION) return `unsupported frame version ${ver} (this build speaks ${FRAME_VERSION})`;
  const hdrLen = v.getUint16(off + 4, true);
  if (hdrLen > hdrMax) return `header length ${hdrLen} exceeds ${hdrMax}`;
  const payLen = v.getUint32(off + 8, true);
  if (payLen > payMax) return `payload length ${payLen} exceeds the maximum frame of ${payMax} (RAILCOMM_TCP_MAX_FRAME)`;
  return null;
}

export const frameAm = (v: DataView, off: number): number => v.getUint8(off + 3);
export const frameHdrLen = (v: DataView, off: number): number => v.getUint16(off + 4, true);
export const frameFlags = (v: DataView, off: number): number => v.getUint16(off + 6, true);
export const framePayLen = (v: DataView, off: number): number => v.getUint32(off + 8, true);

/*
 * Handshake. The connecting side speaks first; no frame is accepted before
 * both sides proved they know the job key.
 *
 * HELLO (connector -> acceptor), 40 bytes
 *   0 magic 'RH' u16 | 2 version u8 | 3 type=1 u8 | 4 job id u32
 *   8 connector endpoint id u64 | 16 acceptor endpoint id u64 | 24 nonce C (16)
 * CHALLENGE (acceptor -> connector), 56 bytes
 *   0 magic u16 | 2 version u8 | 3 type=2 (or 4 = REJECT) u8 | 4 reject reason u32
 *   8 nonce A (16) | 24 mac A = HMAC(key, "railcomm-tcp-A", C, A, ids) (32)
 * PROOF (connector -> acceptor), 40 bytes
 *   0 magic u16 | 2 version u8 | 3 type=3 u8 | 4 zero u32
 *   8 mac C = HMAC(key, "railcomm-tcp-C", A, C, ids) (32)
 */
export const HS_MAGIC = 0x4852; // 'R','H'
export const HS_HELLO = 1;
export const HS_CHALLENGE = 2;
export const HS_PROOF = 3;
export const HS_REJECT = 4;
export const HELLO_BYTES = 40;
export const CHALLENGE_BYTES = 56;
export const PROOF_BYTES = 40;

export const RejectReason = { WRONG_JOB: 1, WRONG_PEER: 2, DUPLICATE: 3, CLOSING: 4 } as const;

export interface Hello { jobId: number; from: bigint; to: bigint; nonce: Buffer }

export function encodeHello(h: Hello): Buffer {
  const b = Buffer.alloc(HELLO_BYTES);
  b.writeUInt16LE(HS_MAGIC, 0); b[2] = FRAME_VERSION; b[3] = HS_HELLO;
  b.writeUInt32LE(h.jobId >>> 0, 4);
  b.writeBigUInt64LE(h.from, 8); b.writeBigUInt64LE(h.to, 16);
  h.nonce.copy(b, 24, 0, 16);
  return b;
}

export function decodeHello(b: Buffer): Hello | string {
  if (b.readUInt16LE(0) !== HS_MAGIC) return 'not a railcomm handshake (bad magic)';
  if (b[2] !== FRAME_VERSION) return `handshake version ${b[2]} (this build speaks ${FRAME_VERSION})`;
  if (b[3] !== HS_HELLO) return `expected HELLO, got type ${b[3]}`;
  return { jobId: b.readUInt32LE(4), from: b.readBigUInt64LE(8), to: b.readBigUInt64LE(16), nonce: Buffer.from(b.subarray(24, 40)) };
}

export function encodeChallenge(type: typeof HS_CHALLENGE | typeof HS_REJECT, reason: number, nonceA: Buffer, macA: Buffer): Buffer {
  const b = Buffer.alloc(CHALLENGE_BYTES);
  b.writeUInt16LE(HS_MAGIC, 0); b[2] = FRAME_VERSION; b[3] = type;
  b.writeUInt32LE(reason, 4);
  nonceA.copy(b, 8, 0, 16); macA.copy(b, 24, 0, 32);
  return b;
}

export function decodeChallenge(b: Buffer): { reject: number; nonce: Buffer; mac: Buffer } | string {
  if (b.readUInt16LE(0) !== HS_MAGIC || b[2] !== FRAME_VERSION) return 'bad handshake answer';
  if (b[3] === HS_REJECT) return { reject: b.readUInt32LE(4) || -1, nonce: Buffer.alloc(0), mac: Buffer.alloc(0) };
  if (b[3] !== HS_CHALLENGE) return `expected CHALLENGE, got type ${b[3]}`;
  return { reject: 0, nonce: Buffer.from(b.subarray(8, 24)), mac: Buffer.from(b.subarray(24, 56)) };
}

export function encodeProof(macC: Buffer): Buffer {
  const b = Buffer.alloc(PROOF_BYTES);
  b.writeUInt16LE(HS_MAGIC, 0); b[2] = FRAME_VERSION; b[3] = HS_PROOF;
  macC.copy(b, 8, 0, 32);
  return b;
}

export function decodeProof(b: Buffer): Buffer | string {
  if (b.readUInt16LE(0) !== HS_MAGIC || b[2] !== FRAME_VERSION || b[3] !== HS_PROOF) return 'bad handshake proof';
  return Buffer.from(b.subarray(8, 40));
}

export function idBytes(from: bigint, to: bigint): Buffer {
  const b = Buffer.alloc(16);
  b.writeBigUInt64LE(from, 0); b.writeBigUInt64LE(to, 8);
  return b;
}
