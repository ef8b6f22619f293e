// udp rail wire format: the segment header every datagram carries, the ACK,
// and the handshake that proves the job key, hands out session tokens and
// keys the per-session MAC. Nothing outside this file reads raw offsets.

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
 *     4 | checksum or MAC (u32), see below  |
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
 * FRAG (whole fragments in one segment): one or more records back to back
 * from byte 24 to the end of the datagram, each 8 bytes then its AM header and
 * payload (the first record's fields sit at 24 and 28, so a FRAG of one
 * fragment is 32 bytes then header and payload):
 *     0 | am id  | flags  | AM header length (u16)
 *     4 | payload length (u32)
 * A sender packs fragments that would wait (behind a full window, or sent in
 * the run of JavaScript that already posted a datagram) into the FRAG queued
 * last (frag-segment.ts packFrag); each is delivered in turn, in the order packed.
 *
 * CHUNK (a piece of a larger fragment), 40 bytes, then data; the chunk at
 * offset 0 carries the AM header first, then the start of the payload:
 *    24 | am id  | flags  | AM header length (u16)
 *    28 | fragment payload length (u32)
 *    32 | fragment id (u32)
 *    36 | payload offset of this chunk (u32)
 *
 * am id 0 is the rail's own control fragment (flags: BYE = orderly close).
 *
 * The type byte's top two bits say what the field at byte 4 is:
 *   0 (0x00) the word-wise sum of checksum.ts over bytes 8 .. end,
 *   1 (0x40) CRC32C over bytes 8 .. end (a sender with the addon, from 512 bytes),
 *   2 (0x80) the word-wise sum over bytes 8 .. 40 only (RAILCOMM_UDP_CHECKSUM=0),
 *   3 (0xC0) the session's MAC: SipHash-2-4 keyed with the 128-bit session key
 *            (sessionKey below), truncated to 32 bits, over the whole datagram
 *            with bytes 4 .. 8 read as zeros: the type byte is covered.
 * With a sum (kinds 0-2) the first word (magic, version, type) is mixed into it
 * too (checksum.ts, datagramSum), so a flipped type bit is caught there as well.
 * Every datagram of a session that requires the MAC (RAILCOMM_UDP_AUTH=1, the
 * default) carries kind 3; one without it is dropped and counted (dropNoMac).
 * Handshake datagrams carry a sum: they prove the key with their own HMACs.
 */
export const MAGIC = 0x5552; // 'R','U' read as little-endian u16
export const VERSION = 4; // 2: sequence numbers modulo 2^30; 3: the MAC, the sum covering the type byte, key nonces and flags in handshakes; 4: a FRAG carries one or more fragments
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
/** One fragment's record in a FRAG: am id, flags, header length, payload length (then header and payload). */
export const RECORD_BYTES = FRAG_BYTES - COMMON_BYTES;
export const CHUNK_BYTES = 40;
export const ACK_BYTES = COMMON_BYTES;
/** The checksum covers everything after it. */
export const SUM_FROM = 8;
export const AM_CONTROL = 0;
export const FLAG_BYE = 1;
/** Largest UDP payload over IPv4. */
export const UDP_MAX = 65507;

/** The type byte's bits that name the kind of the field at byte 4 (see above). */
export const SUM_KIND = 0xc0;
/** The word-wise sum of checksum.ts over the whole datagram. */
export const SUM_WORDS = 0x00;
/** CRC32C (the sender's native addon computes it in hardware). */
export const SUM_CRC32C = 0x40;
/** The word-wise sum of the first CHUNK_BYTES only (RAILCOMM_UDP_CHECKSUM=0: the payload is left to the link's own checksum). */
export const SUM_HEADER_ONLY = 0x80;
/** The session's MAC (mac.ts). */
export const SUM_MAC = 0xc0;
export const getType = (v: DataView): number => v.getUint8(3) & 0x3f;
export const sumKind = (v: DataView): number => v.getUint8(3) & SUM_KIND;
export const isCrcSum = (v: DataView): boolean => (v.getUint8(3) & SUM_KIND) === SUM_CRC32C;
export const isMac = (v: DataView): boolean => (v.getUint8(3) & SUM_KIND) === SUM_MAC;
/** Name the kind of the field at byte 4 (one of SUM_WORDS, SUM_CRC32C, SUM_HEADER_ONLY, SUM_MAC). */
export function setSumKind(v: DataView, kind: number): void {
  v.setUint8(3, (v.getUint8(3) & ~SUM_KIND & 0xff) | kind);
}
export function markCrcSum(v: DataView): void {
  setSumKind(v, SUM_CRC32C);
}
export function markHeaderSum(v: DataView): void {
  setSumKind(v, SUM_HEADER_ONLY);
}
export function markMac(v: DataView): void {
  setSumKind(v, SUM_MAC);
}
/** How many bytes from SUM_FROM the checksum of this datagram covers. */
export const sumLength = (v: DataView, len: number): number =>
  ((v.getUint8(3) & SUM_KIND) === SUM_HEADER_ONLY ? Math.min(len, CHUNK_BYTES) : len) - SUM_FROM;
export const getSum = (v: DataView): number => v.getUint32(4, true);
export const getToken = (v: DataView): number => v.getUint32(8, true);
export const getSeq = (v: DataView): number => v.getUint32(12, true);
export const getAck = (v: DataView): number => v.getUint32(16, true);
export const HOLE = 0x80000000;
export const getCredit = (v: DataView): number => v.getUint32(20, true) & 0x7fffffff;
export const getHole = (v: DataView): boolean => (v.getUint32(20, true) & HOLE) !== 0;
/** The fields of the FRAG record at `at` (the first is at COMMON_BYTES: a CHUNK's fields sit there too). */
export const recordAm = (v: DataView, at: number): number => v.getUint8(at);
export const recordFlags = (v: DataView, at: number): number => v.getUint8(at + 1);
export const recordHdrLen = (v: DataView, at: number): number => v.getUint16(at + 2, true);
export const recordPayLen = (v: DataView, at: number): number => v.getUint32(at + 4, true);
export const getAm = (v: DataView): number => recordAm(v, COMMON_BYTES);
export const getFlags = (v: DataView): number => recordFlags(v, COMMON_BYTES);
export const getHdrLen = (v: DataView): number => recordHdrLen(v, COMMON_BYTES);
export const getPayLen = (v: DataView): number => recordPayLen(v, COMMON_BYTES);
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

/** A fragment's record at `at` of a FRAG (its header and payload follow it). */
export function encodeRecord(v: DataView, at: number, am: number, flags: number, hdrLen: number, payLen: number): void {
  v.setUint8(at, am);
  v.setUint8(at + 1, flags);
  v.setUint16(at + 2, hdrLen, true);
  v.setUint32(at + 4, payLen, true);
}

/** The first record (a FRAG's or a CHUNK's fields). */
export function encodeFrag(v: DataView, am: number, flags: number, hdrLen: number, payLen: number): void {
  encodeRecord(v, COMMON_BYTES, am, flags, hdrLen, payLen);
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
 * `sum` is the checksum the datagram should carry (datagramSum, computed by
 * the caller); a negative `sum` skips that check: a MAC, checked once the
 * session (its key) is known.
 */
export function checkDatagram(v: DataView, len: number, sum: number, hdrMax: number, fragMax: number): number {
  if (len < COMMON_BYTES) return Bad.SHORT;
  if (v.getUint16(0, true) !== MAGIC || v.getUint8(2) !== VERSION) return Bad.FOREIGN;
  if (sum >= 0 && getSum(v) !== sum) return Bad.CORRUPT;
  const type = getType(v);
  switch (type) {
    case T_ACK:
    case T_PROBE:
    case T_RESET:
      return len === ACK_BYTES ? Bad.OK : Bad.LENGTH;
    case T_FRAG: {
      if (len < FRAG_BYTES) return Bad.SHORT;
      // Every record fits and the last ends where the datagram does.
      for (let at = COMMON_BYTES; at < len;) {
        if (at + RECORD_BYTES > len) return Bad.LENGTH;
        const hdrLen = recordHdrLen(v, at);
        if (hdrLen > hdrMax) return Bad.LENGTH;
        at += RECORD_BYTES + hdrLen + recordPayLen(v, at);
        if (at > len) return Bad.LENGTH;
      }
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
 * Handshake datagrams (HELLO, CHALLENGE, PROOF), 108 bytes, after the same
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
 *    88 | key nonce of the sender (16 bytes): its endpoint's, fixed for the
 *       | endpoint's life like its token; the session key covers both sides'
 *   104 | flags (u32): HS_AUTH = the sender MACs its datagrams and requires MACs
 *
 * The connecting side sends HELLO (again on a timer until answered); the other
 * answers each HELLO with a CHALLENGE, with its MAC over both nonces and the
 * context (ids, tokens, key nonces, flags); the connector checks it and answers
 * PROOF with its own. An acceptor may hold several HELLOs claiming one peer at
 * once (handshake.ts): nothing a HELLO says is believed before its PROOF.
 */
export const HS_BYTES = 108;
/** Handshake flag: the sender MACs its datagrams (RAILCOMM_UDP_AUTH=1). */
export const HS_AUTH = 1;

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
  keyNonce: Buffer;
  flags: number;
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
  h.keyNonce.copy(b, 88, 0, 16);
  b.writeUInt32LE(h.flags >>> 0, 104);
}

export function decodeHandshake(b: Buffer): Handshake {
  return {
    type: b[3]! & 0x3f, jobId: b.readUInt32LE(8), token: b.readUInt32LE(12),
    from: b.readBigUInt64LE(16), to: b.readBigUInt64LE(24),
    nonce: Buffer.from(b.subarray(32, 48)),
    dataPort: b.readUInt16LE(48), prioPort: b.readUInt16LE(50), credit: b.readUInt32LE(52),
    mac: Buffer.from(b.subarray(56, 88)),
    keyNonce: Buffer.from(b.subarray(88, 104)), flags: b.readUInt32LE(104),
  };
}

/** One side of a handshake as its MACs and the session key see it. */
export interface HandshakeSide {
  id: bigint;
  token: number;
  keyNonce: Uint8Array;
  flags: number;
}

/** What the handshake MACs cover besides the nonces: both sides' ids, tokens, key nonces and flags, connector first. */
export function handshakeContext(connector: HandshakeSide, acceptor: HandshakeSide): Buffer {
  const b = Buffer.alloc(64);
  b.writeBigUInt64LE(connector.id, 0);
  b.writeBigUInt64LE(acceptor.id, 8);
  b.writeUInt32LE(connector.token >>> 0, 16);
  b.writeUInt32LE(acceptor.token >>> 0, 20);
  b.set(connector.keyNonce.subarray(0, 16), 24);
  b.set(acceptor.keyNonce.subarray(0, 16), 40);
  b.writeUInt32LE(connector.flags >>> 0, 56);
  b.writeUInt32LE(acceptor.flags >>> 0, 60);
  return b;
}

/**
 * The same context in id order (lower id first), whoever connected: what the
 * session key covers. Each side's token and key nonce are fixed for its
 * endpoint's life, so every handshake that completes between two endpoints
 * (both may connect at once, each may accept several HELLOs) yields the same
 * key, and no tie-break between them is needed.
 */
export function sessionContext(a: HandshakeSide, b: HandshakeSide): Buffer {
  return a.id < b.id ? handshakeContext(a, b) : handshakeContext(b, a);
}
