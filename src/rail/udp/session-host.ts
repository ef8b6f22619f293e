// What a udp session (session.ts) needs from the rail that carries it and
// tells the endpoint that owns it: its limits, the sockets, clocks and pools
// behind SessionHost (a fake link in the tests), and SessionOwner's upcalls.

import type { GuestList, Hotel } from '../../core/hotel.js';
import type { TrafficCounters } from '../../core/counters.js';
import type { AmHandler, RailEndpoint } from '../api.js';
import type { UdpCounters } from './counters.js';
import type { Frag, Segment } from './segment.js';
import type { Session } from './session.js';

export interface SessionLimits {
  /** Largest AM header. */
  readonly hdrMax: number;
  /** Largest fragment payload (reassembly bound). */
  readonly fragMax: number;
  /** Largest datagram on the priority channel, and on the data channel. */
  readonly tinyMax: number;
  readonly dataMax: number;
  /** Send and receive window in segments (a power of two). */
  readonly window: number;
  /** Initial retransmission timeout and its floor (ms). */
  readonly rtoMs: number;
  readonly rtoFloorMs: number;
  /** Queued bytes past which sendCopy answers no-resource. */
  readonly highWater: number;
  /** Checksum only the headers (RAILCOMM_UDP_CHECKSUM=0). */
  readonly headerSumOnly?: boolean;
  /** Checksum with CRC32C (this process has it in hardware). */
  readonly crc32c?: boolean;
}

export interface SessionHost {
  readonly hotel: Hotel;
  /** The rail's retransmit list (segments whose timer fired, or fast retransmits). */
  readonly retx: GuestList;
  readonly counters: UdpCounters;
  readonly handlers: ReadonlyArray<AmHandler | undefined>;
  readonly limits: SessionLimits;
  now(): number;
  segment(tiny: boolean): Segment;
  frag(): Frag;
  release(seg: Segment): void;
  releaseFrag(f: Frag): void;
  /** Put one datagram on the wire to the session's peer. */
  transmit(s: Session, buf: Buffer, len: number, prio: boolean): void;
  /** Whether a tiny segment may go out on the priority channel right now (it is idle). */
  prioIdle(): boolean;
  /**
   * Call s.uncork() when the current synchronous run of JavaScript ends (a
   * microtask). A host without it never corks: each send posts at once.
   */
  cork?(s: Session): void;
  /** The session has queued segments that progress should post. */
  wantPass(s: Session): void;
  /**
   * A segment waits in the hotel: keep the timer that advances it running.
   * A segment sent outside the host's own passes (a send from the rank's code)
   * and then lost draws no ACK and no later datagram, so only this timer can
   * ever retransmit it.
   */
  armTimer(): void;
  /** The session owes its peer an ACK (urgent: a duplicate or out-of-order arrival). */
  wantAck(s: Session, urgent: boolean): void;
  /** Credit to grant the peer (bytes it may have in flight to us). */
  grant(s: Session): number;
}

/** What the session tells the endpoint that owns it. */
export interface SessionOwner {
  readonly endpoint: RailEndpoint;
  readonly counters: TrafficCounters;
  /** The peer's BYE arrived (it closed in order). */
  bye(): void;
  /** The peer sent something that cannot be true. */
  protocolError(why: string): void;
  /** Nothing queued and nothing unacknowledged. */
  drained(): void;
  /** Queued bytes fell back under the high-water mark after a no-resource answer. */
  roomAgain(): void;
}
