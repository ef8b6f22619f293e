// The shm rail's shared-memory layouts and segment names. Rings reuse the
// tbsm ring format (rail/shared/ring.ts), stamped with magic, version and the
// writer's pid; each rank also owns an inbox where peers announce new rings.

/*
 * Segment names (under /dev/shm), all starting with the job prefix
 * `railcomm-<tag>-`, the tag derived from the job key (native/addon.ts shmJobPrefix):
 *   <prefix><rank>-in            a rank's inbox (created at rail open)
 *   <prefix><from>-<to>          the ring from rank `from` to rank `to` (created by `from` on first send)
 *
 * Inbox (INBOX_BYTES), Int32 words:
 *   word  byte
 *    0     0    doorbell ring count   (rail/shared/ring.ts Doorbell: [0] rings, [1] asleep)
 *    1     4    doorbell asleep flag
 *   16    64    magic u32 (SHM_MAGIC)
 *   17    68    version
 *   18    72    owner pid
 *   19    76    rings announced (slots taken; atomic add by senders)
 *   20    80    peers that mapped this inbox (the last expected one unlinks the name)
 *   21    84    closed: the owner closed its rail and maps no ring announced from now on
 *   32   128    announce slots: sender rank + 1 (0: slot taken, not written yet)
 */
export const SHM_MAGIC = 0x52434d53; // "RCMS"
export const SHM_VERSION = 3; // 3: frames found by their length word, the waiting flag on the head's line (rail/shared/ring.ts)
export const INBOX_BYTES = 16384;
export const INBOX_BELL_BYTE = 0;
export const IN_MAGIC = 16;
export const IN_VERSION = 17;
export const IN_PID = 18;
export const IN_ANNOUNCED = 19;
export const IN_MAPPED = 20;
export const IN_CLOSED = 21;
export const IN_SLOTS = 32;
export const INBOX_SLOTS = INBOX_BYTES / 4 - IN_SLOTS;

export const inboxName = (prefix: string, rank: number): string => `${prefix}${rank}-in`;
export const ringName = (prefix: string, from: number, to: number): string => `${prefix}${from}-${to}`;

/** A rail address: `<host key>;<pid>;<inbox name>`. */
export interface ShmAddress {
  host: string;
  pid: number;
  inbox: string;
}

export function encodeAddress(a: ShmAddress): string {
  return `${a.host};${a.pid};${a.inbox}`;
}

export function decodeAddress(text: string): ShmAddress | null {
  const parts = text.split(';');
  if (parts.length !== 3) return null;
  const pid = Number(parts[1]);
  if (!Number.isSafeInteger(pid) || pid <= 0 || !/^railcomm-[0-9a-f]{16}-[0-9]+-in$/.test(parts[2]!)) return null;
  return { host: parts[0]!, pid, inbox: parts[2]! };
}

/** Stamp a fresh inbox. */
export function stampInbox(words: Int32Array, pid: number): void {
  words[IN_VERSION] = SHM_VERSION;
  words[IN_PID] = pid;
  Atomics.store(words, IN_MAGIC, SHM_MAGIC | 0);
}

/** Why an inbox or ring header cannot be used, or null. */
export function checkStamp(magic: number, version: number, what: string): string | null {
  if ((magic >>> 0) !== SHM_MAGIC) return `${what} has magic 0x${(magic >>> 0).toString(16)}, expected 0x${SHM_MAGIC.toString(16)} (not a railcomm segment, or corrupted)`;
  if (version !== SHM_VERSION) return `${what} has format version ${version}, this railcomm speaks ${SHM_VERSION} (mixed railcomm versions in one job)`;
  return null;
}

/*
 * Registered segments (comm.alloc): `<prefix><rank>-m<id>`, mapped by peers
 * that receive large messages from them. When the owner frees one (garbage
 * collected), it tells its peers with a rail control frame: AM 0 with a
 * header (a plain BYE has none):
 *   0 kind u32 (CTL_FREE) | 4 segment id u32
 */
export const CTL_FREE = 1;
export const CTL_HDR = 8;
export const segmentName = (prefix: string, rank: number, id: number): string => `${prefix}${rank}-m${id}`;
