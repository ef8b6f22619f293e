// udp rail wire format: the segment header every datagram carries, the ACK,
// and the handshake that proves the job key and hands out session tokens.
// Nothing outside this file reads raw offsets.

/*
 * Common header, 24 bytes, little endian (ACK, PROBE and RESET segments are
 * just this; a PROBE is an ACK that asks for an explicit ACK back at once: the
 * keepalive of a rank that waits on a silent peer; a RESET says the sender
 * dropped this session, see encodeReset):
 *
 *   byte  0        1        2        3
 *       +--------+--------+--------+--------+
 *     0 | magic 'R','U'   | version| type   |
 *       +--------+--------+--------+--------+
 *     4 | checksum of bytes 8 .. end (u32)  |
 *       +--------+--------+--------+--------+
 *     8 | session token (u32): the receiver's token for this sender
 *       +--------+--------+--------+--------+
 *    12 | sequence number (u32; FRAG and CHUNK); in an ACK: the highest
 *       | sequence number the sender of the ACK holds (meaningful with HOLE)
 *       +--------+--------+--------+--------+
 *    16 | cumulative ACK (u32): every segment up to this one arrived
 *       +--------+--------+--------+--------+
 *    20 | credit (u32): bytes the sender of this segment can take in flight;
 *       | its top bit (HOLE) says it holds later segments: the one after ACK is missing
 *       +--------+--------+--------+--------+
 *
 * FRAG (a whole fragment in one segment), 32 bytes, then AM header and payload:
 *    24 | am id  | flags  | AM header length (u16)
 *    28 | payload length (u32)
 *
 * CHUNK (a piece of a larger fragment), 40 bytes, then data; the chunk at
 * offset 0 carries the AM header first, then the start of the payload:
 *    24 | am id  | flags  | AM header length (u16)
 *    28 | fragment payload length (u32)
 *    32 | fragment id (u32)
 *    36 | payload offset of this chunk (u32)
 *
 * am id 0 is the rail's own control fragment (flags: BYE = orderly close).
 */
export const MAGIC = 0x5552; // 'R','U' read as little-endian u16
export const VERSION = 2; // 2: sequence numbers modulo 2^30
export const T_FRAG = 1;
export const T_CHUNK = 2;
export const T_ACK = 3;
export const T_HELLO = 4;
export const T_CHALLENGE = 5;
export const T_PROOF = 6;
export const T_PROBE = 7;
export const T_RESET = 8;
export const COMMON_BYTES = 24;
export const FRAG_BYTES = 32;
export const CHUNK_BYTES = 40;
export const ACK_BYTES = COMMON_BYTES;
/** The checksum covers everything after it. */
export const SUM_FROM = 8;
export const AM_CONTROL = 0;
export const FLAG_BYE = 1;
/** Largest UDP payload over IPv4. */
export const UDP_MAX = 65507;

/**
 * Set in the type byte when the checksum covers only the first CHUNK_BYTES
 * (RAILCOMM_UDP_CHECKSUM=0: the payload is left to the link's own checksum).
 */
export const SUM_HEADER_ONLY = 0x80;
/**
 * Set in the type byte when the checksum is CRC32C (the sender's native addon
 * computes it in hardware); otherwise it is the word-wise sum of checksum.ts.
 */
export const SUM_CRC32C = 0x40;
export const getType = (v: DataView): number => v.getUint8(3) & 0x3f;
export const isCrcSum = (v: DataView): boolean => (v.getUint8(3) & SUM_CRC32C) !== 0;
export function markCrcSum(v: DataView): void {
  v.setUint8(3, v.getUint8(3) | SUM_CRC32C);
}
/** How many bytes from SUM_FROM the checksum of this datagram covers. */
export const sumLength = (v: DataView, len: number): number =>
  ((v.getUint8(3) & SUM_HEADER_ONLY) !== 0 ? Math.min(len, CHUNK_BYTES) : len) - SUM_FROM;
export function markHeaderSum(v: DataView): void {
  v.setUint8(3, v.getUint8(3) | SUM_HEADER_ONLY);
}
export const getSum = (v: DataView): number => v.getUint32(4, true);
export const getToken = (v: DataView): number => v.getUint32(8, true);
export const getSeq = (v: DataView): number => v.getUint32(12, true);
export const getAck = (v: DataView): number => v.getUint32(16, true);
export const HOLE = 0x80000000;
export const getCredit = (v: DataView): number => v.getUint32(20, true) & 0x7fffffff;
export const getHole = (v: DataView): boolean => (v.getUint32(20, true) & HOLE) !== 0;
export const getAm = (v: DataView): number => v.getUint8(24);
export const getFlags = (v: DataView): number => v.getUint8(25);
export const getHdrLen = (v: DataView): number => v.getUint16(26, true);
export const getPayLen = (v: DataView): number => v.getUint32(28, true);
export const getFragId = (v: DataView): number => v.getUint32(32, true);
export const getOffset = (v: DataView): number => v.getUint32(36, true);

export function setSum(v: DataView, sum: number): void {
  v.setUint32(4, sum, true);
}

/** Magic, version, type; token, seq; ack and credit are stamped at each (re)transmission. */
export function encodeCommon(v: DataView, type: number, token: number, seq: number): void {
  v.setUint16(0, MAGIC, true);
  v.setUint8(2, VERSION);
  v.setUint8(3, type);
  v.setUint32(8, token, true);
  v.setUint32(12, seq, true);
}

/** The explicit ACK datagram (ACK_BYTES): cumulative ACK, credit, HOLE and the highest sequence number held; T_PROBE asks for one back. */
export function encodeAck(v: DataView, token: number, ack: number, credit: number, hole: boolean, highest: number, type = T_ACK): void {
  encodeCommon(v, type, token, hole ? highest : ack);
  stampAck(v, ack, credit, hole);
}

/**
 * RESET: the sender dropped the session (abort, impossible data, or a peer
 * that stayed silent too long), so the receiver must fail it now rather than
 * wait for ACKs that will never come. Like every datagram it carries the
 * receiver's token for the sender; the sequence field carries the sender's
 * own token (the one the receiver stamps on its datagrams), so it takes both
 * of the session's tokens to end it. ACK and credit are zero.
 */
export function encodeReset(v: DataView, token: number, senderToken: number): void {
  encodeCommon(v, T_RESET, token, senderToken >>> 0);
  stampAck(v, 0, 0, false);
}

export function stampAck(v: DataView, ack: number, credit: number, hole: boolean): void {
  v.setUint32(16, ack, true);
  v.setUint32(20, ((credit & 0x7fffffff) | (hole ? HOLE : 0)) >>> 0, true);
}

export function setToken(v: DataView, token: number): void {
  v.setUint32(8, token, true);
}

export function setSeq(v: DataView, seq: number): void {
  v.setUint32(12, seq, true);
}

export function encodeFrag(v: DataView, am: number, flags: number, hdrLen: number, payLen: number): void {
  v.setUint8(24, am);
  v.setUint8(25, flags);
  v.setUint16(26, hdrLen, true);
  v.setUint32(28, payLen, true);
}

export function encodeChunk(v: DataView, am: number, flags: number, hdrLen: number, payLen: number, fragId: number, offset: number): void {
  encodeFrag(v, am, flags, hdrLen, payLen);
  v.setUint32(32, fragId, true);
  v.setUint32(36, offset, true);
}

/** Drop reasons, as counted; 0 means the datagram is well formed. */
export const Bad = { OK: 0, SHORT: 1, FOREIGN: 2, CORRUPT: 3, TYPE: 4, LENGTH: 5 } as const;

/**
 * Structural checks every datagram passes before anything reads it further:
 * size, magic and version, checksum, type, and lengths that add up.
 * `sum` is the checksum of bytes [SUM_FROM, len) (computed by the caller).
 */
export function checkDatagram(v: DataView, len: number, sum: number, hdrMax: number, fragMax: number): number {
  if (len < COMMON_BYTES) return Bad.SHORT;
  if (v.getUint16(0, true) !== MAGIC || v.getUint8(2) !== VERSION) return Bad.FOREIGN;
  if (getSum(v) !== sum) return Bad.CORRUPT;
  const type = getType(v);
  switch (type) {
    case T_ACK:
    case T_PROBE:
    case T_RESET:
      return len === ACK_BYTES ? Bad.OK : Bad.LENGTH;
    case T_FRAG: {
      if (len < FRAG_BYTES) return Bad.SHORT;
      const hdrLen = getHdrLen(v);
      if (hdrLen > hdrMax || FRAG_BYTES + hdrLen + getPayLen(v) !== len) return Bad.LENGTH;
      return Bad.OK;
    }
    case T_CHUNK: {
      if (len < CHUNK_BYTES) return Bad.SHORT;
      const hdrLen = getHdrLen(v);
      const payLen = getPayLen(v);
      const off = getOffset(v);
      const data = len - CHUNK_BYTES - (off === 0 ? hdrLen : 0);
      if (hdrLen > hdrMax || payLen > fragMax || data <= 0 || off + data > payLen) return Bad.LENGTH;
      return Bad.OK;
    }
    case T_HELLO:
    case T_CHALLENGE:
    case T_PROOF:
      return len === HS_BYTES ? Bad.OK : Bad.LENGTH;
    default:
      return Bad.TYPE;
  }
}

/*
 * Handshake datagrams (HELLO, CHALLENGE, PROOF), 88 bytes, after the same
 * magic / version / type / checksum:
 *
 *     8 | job id (u32)
 *    12 | token (u32): the sender's token, to put on every datagram to it
 *    16 | sender endpoint id (u64)
 *    24 | receiver endpoint id (u64)
 *    32 | nonce of the sender (16 bytes)
 *    48 | data port (u16) | priority port (u16)
 *    52 | credit (u32): bytes the sender can take in flight
 *    56 | HMAC-SHA256 (32 bytes; zero in HELLO)
 *
 * The connecting side sends HELLO; the other answers CHALLENGE, with its MAC
 * over both nonces, ids and tokens; the connector checks it and answers PROOF
 * with its own. Lost handshake datagrams are sent again on a timer.
 */
export const HS_BYTES = 88;

export interface Handshake {
  type: number;
  jobId: number;
  token: number;
  from: bigint;
  to: bigint;
  nonce: Buffer;
  dataPort: number;
  prioPort: number;
  credit: number;
  mac: Buffer;
}

export function encodeHandshake(b: Buffer, h: Handshake): void {
  b.fill(0, 0, HS_BYTES);
  b.writeUInt16LE(MAGIC, 0);
  b[2] = VERSION;
  b[3] = h.type;
  b.writeUInt32LE(h.jobId >>> 0, 8);
  b.writeUInt32LE(h.token >>> 0, 12);
  b.writeBigUInt64LE(h.from, 16);
  b.writeBigUInt64LE(h.to, 24);
  h.nonce.copy(b, 32, 0, 16);
  b.writeUInt16LE(h.dataPort, 48);
  b.writeUInt16LE(h.prioPort, 50);
  b.writeUInt32LE(h.credit >>> 0, 52);
  h.mac.copy(b, 56, 0, 32);
}

export function decodeHandshake(b: Buffer): Handshake {
  return {
    type: b[3]! & 0x7f, jobId: b.readUInt32LE(8), token: b.readUInt32LE(12),
    from: b.readBigUInt64LE(16), to: b.readBigUInt64LE(24),
    nonce: Buffer.from(b.subarray(32, 48)),
    dataPort: b.readUInt16LE(48), prioPort: b.readUInt16LE(50), credit: b.readUInt32LE(52),
    mac: Buffer.from(b.subarray(56, 88)),
  };
}

/** What the MACs cover besides the nonces: both ids and both tokens, connector first. */
export function handshakeContext(connector: bigint, acceptor: bigint, connectorToken: number, acceptorToken: number): Buffer {
  const b = Buffer.alloc(24);
  b.writeBigUInt64LE(connector, 0);
  b.writeBigUInt64LE(acceptor, 8);
  b.writeUInt32LE(connectorToken >>> 0, 16);
  b.writeUInt32LE(acceptorToken >>> 0, 20);
  return b;
}
