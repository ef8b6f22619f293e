// The udp rail's counters: the common traffic counters plus what a reliable
// datagram protocol needs to be understood (segments, retransmissions,
// duplicate ACKs, drops by reason, the current timeout and window occupancy).

import { TrafficCounters } from '../../core/counters.js';
import { Bad } from './wire.js';
import type { UdpEndpoint } from './endpoint.js';

export class UdpCounters extends TrafficCounters {
  // Start as doubles, as TrafficCounters' counts do: they pass 2^31 in a long job.
  segsSent = -0;
  segsRecv = -0;
  /** Fragments packed into a datagram queued before them (several small messages behind a full window go as one datagram). */
  bundled = -0;
  /** sendmmsg calls that posted a pass's data segments (the addon's batched sends). */
  sendBatches = 0;
  acksSent = 0;
  /** Retransmission timeouts (the hotel), and segments sent again early on a duplicate ACK (fast). */
  timeouts = 0;
  fastRetransmits = 0;
  /** Congestion-window halvings (several losses in one flight). */
  windowCuts = 0;
  /** Times the sender had segments to post but stopped: window full (segments), credit or congestion window (bytes). */
  stallsWindow = 0;
  stallsCredit = 0;
  stallsCwnd = 0;
  /** Keepalive probes sent to silent peers this rank waits on, and probes from peers answered. */
  probesSent = 0;
  probesAnswered = 0;
  /** Keepalive port checks (a probe from a connected socket), and those the peer's host answered "port unreachable" (the peer failed at once). */
  portChecks = 0;
  portsClosed = 0;
  /** RESETs sent (this rank dropped a peer, or heard from one it had dropped) and accepted (a peer dropped this rank). */
  resetsSent = 0;
  resetsRecv = 0;
  dupAcks = 0;
  /** Segments received twice or older than expected (their ACK was lost). */
  dupSegs = 0;
  outOfOrder = 0;
  dropShort = 0;
  dropForeign = 0;
  dropCorrupt = 0;
  dropType = 0;
  dropLength = 0;
  /** Valid datagrams with a token no session has (a stale or foreign peer). */
  dropUnknownPeer = 0;
  /** Beyond the receive window. */
  dropWindow = 0;
  /** Consistent datagrams whose content is wrong (chunk out of place, unknown AM id). */
  dropProtocol = 0;
  /** Datagrams without the session's MAC on a session that requires it (RAILCOMM_UDP_AUTH=1): a forger's, or a peer's that runs without. */
  dropNoMac = 0;
  /** Datagrams whose MAC failed: forged, or corrupted on the way (also counted in dropCorrupt). */
  macFailures = 0;
  /** Incoming handshakes (HELLOs not yet proven) evicted to make room for newer ones. */
  hsEvicted = 0;
  /** Gauge: incoming handshakes waiting for their PROOF. */
  hsPending = 0;
  /** Dropped, duplicated, reordered, corrupted by RAILCOMM_UDP_FAULTS. */
  faultDrops = 0;
  faultDups = 0;
  faultReorders = 0;
  faultCorrupts = 0;
  /** Set by the rail when read: the largest current RTO, segments and bytes in flight. */
  rtoMs = 0;
  inflightSegs = 0;
  inflightBytes = 0;
  windowSegs = 0;
  /** Updates the gauges above before a snapshot (set by the rail). */
  refresh: (() => void) | null = null;

  /** Set the gauges from the rail's endpoints: the largest RTO, segments and bytes in flight over the open sessions. */
  gauge(endpoints: Iterable<UdpEndpoint>, window: number, hsPending: number): void {
    let rto = 0, segs = 0, bytes = 0;
    for (const ep of endpoints) {
      const s = ep.session;
      if (!s.open) continue;
      rto = Math.max(rto, s.rtt.rto);
      segs += s.inflight;
      bytes += s.flight;
    }
    this.rtoMs = rto;
    this.inflightSegs = segs;
    this.inflightBytes = bytes;
    this.windowSegs = window;
    this.hsPending = hsPending;
  }

  /** A datagram checkDatagram refused (wire.ts Bad, not OK): counted by its reason. */
  dropped(bad: number): void {
    if (bad === Bad.SHORT) this.dropShort++;
    else if (bad === Bad.FOREIGN) this.dropForeign++;
    else if (bad === Bad.CORRUPT) this.dropCorrupt++;
    else if (bad === Bad.TYPE) this.dropType++;
    else this.dropLength++;
  }

  override snapshot(): Record<string, number> {
    this.refresh?.();
    return {
      ...super.snapshot(),
      segsSent: this.segsSent + 0, segsRecv: this.segsRecv + 0, bundled: this.bundled + 0, sendBatches: this.sendBatches, acksSent: this.acksSent,
      timeouts: this.timeouts, fastRetransmits: this.fastRetransmits, windowCuts: this.windowCuts,
      stallsWindow: this.stallsWindow, stallsCredit: this.stallsCredit, stallsCwnd: this.stallsCwnd,
      probesSent: this.probesSent, probesAnswered: this.probesAnswered, portChecks: this.portChecks, portsClosed: this.portsClosed, resetsSent: this.resetsSent, resetsRecv: this.resetsRecv,
      dupAcks: this.dupAcks, dupSegs: this.dupSegs, outOfOrder: this.outOfOrder,
      dropShort: this.dropShort, dropForeign: this.dropForeign, dropCorrupt: this.dropCorrupt,
      dropType: this.dropType, dropLength: this.dropLength, dropUnknownPeer: this.dropUnknownPeer,
      dropWindow: this.dropWindow, dropProtocol: this.dropProtocol, dropNoMac: this.dropNoMac, macFailures: this.macFailures,
      hsEvicted: this.hsEvicted, hsPending: this.hsPending,
      faultDrops: this.faultDrops, faultDups: this.faultDups, faultReorders: this.faultReorders, faultCorrupts: this.faultCorrupts,
      rtoMs: Math.round(this.rtoMs * 100) / 100, inflightSegs: this.inflightSegs, inflightBytes: this.inflightBytes, windowSegs: this.windowSegs,
    };
  }
}
