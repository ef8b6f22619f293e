// Keepalive of the udp rail: finding peers that are gone. A datagram rail
// cannot see a peer die, and a rank that only waits to receive has nothing in
// flight to time out on; silence alone proves little, because a rank that
// computes runs no event loop and answers nothing (a busy rank looks dead).
// So the verdict from silence stays long (RAILCOMM_UDP_PEER_TIMEOUT, 300 s),
// and a quick one comes only from the peer's host: a probe sent from a
// connected socket draws ICMP "port unreachable" once no socket is bound to
// the peer's port (its process ended or closed the rail), which a busy rank's
// kernel never sends. (Under railcomm run, env:// and srun the wire-up service
// reports lost ranks within milliseconds anyway: Context.peerLost.)

import dgram from 'node:dgram';
import type { RailEnv } from '../api.js';
import type { UdpCounters } from './counters.js';
import type { UdpEndpoint } from './endpoint.js';
import type { Session } from './session.js';

/** Silence (ms) after which a peer we wait on, or send to, has its port checked. */
export const PORT_CHECK_AFTER_MS = 1000;
/** At most one port check per peer in this long (ms). */
const PORT_CHECK_EVERY_MS = 2000;
/** How long a check waits for the ICMP answer (ms); none: no verdict. */
const PORT_CHECK_WAIT_MS = 1000;
/** Port checks in flight at once per rail (each is a socket). */
const PORT_CHECKS_MAX = 8;

export interface KeepaliveHost {
  readonly env: RailEnv;
  readonly counters: UdpCounters;
  now(): number;
  /** The rail's endpoints (a live view). */
  peers(): Iterable<UdpEndpoint>;
  /** An explicit ACK; `probe`: one that asks for one back at once. */
  sendAck(s: Session, probe?: boolean): void;
  /** The session's PROBE datagram, in a buffer of its own. */
  probeDatagram(ep: UdpEndpoint): Buffer;
}

export class Keepalive {
  private readonly host: KeepaliveHost;
  private readonly timeoutMs: number;
  private readonly sockets = new Set<dgram.Socket>();
  private closed = false;

  constructor(host: KeepaliveHost, peerTimeoutMs: number) {
    this.host = host;
    this.timeoutMs = peerTimeoutMs;
  }

  /**
   * The slow check (about every second). While the layer above waits on a
   * peer (a receive it could satisfy, a rendezvous with it, operations on it)
   * and the peer has been silent for a third of RAILCOMM_UDP_PEER_TIMEOUT, it
   * is probed (an ACK that asks for one back); silent for the whole timeout
   * while waited on, it has failed. Silent for a second, its port is checked.
   * Peers nobody waits on are left alone: a rank may compute for long without
   * its event loop, and then it cannot answer.
   */
  waited(now: number): void {
    const host = this.host;
    const probeAfter = this.timeoutMs / 3;
    for (const ep of host.peers()) {
      const s = ep.session;
      if (!s.open || s.dead || ep.closing || !(host.env.upcalls.waitingOn?.(ep) ?? false)) { ep.waitStart = 0; continue; }
      if (ep.waitStart === 0) ep.waitStart = now;
      const silent = now - Math.max(s.lastHeard, ep.waitStart);
      if (silent > this.timeoutMs) {
        ep.timedOut(Math.round(this.timeoutMs / 1000), 'RAILCOMM_UDP_PEER_TIMEOUT', 'this rank waits on it and its keepalive probes went unanswered');
        continue;
      }
      if (silent > probeAfter && now - ep.lastProbe > probeAfter) {
        ep.lastProbe = now;
        host.sendAck(s, true);
        host.counters.probesSent++;
      }
      this.checkPort(ep, silent, this.timeoutMs, now);
    }
  }

  /**
   * From the rail's tick (every 100 ms while anything is in flight): a peer
   * that acknowledges nothing of what waits for it for RAILCOMM_UDP_PEER_TIMEOUT
   * (closing: at most RAILCOMM_CONNECT_TIMEOUT) has failed; silent for a
   * second, its port is checked.
   */
  inFlight(now: number): void {
    const host = this.host;
    // A closing endpoint (finalize) waits for its last ACKs at most the
    // connect timeout: a peer that died must not hold finalize for minutes.
    const closingLimit = Math.min(this.timeoutMs, host.env.params.connectTimeout);
    for (const ep of host.peers()) {
      const s = ep.session;
      if (!s.open || s.idle) continue;
      const limit = ep.closing ? closingLimit : this.timeoutMs;
      const silent = now - Math.max(s.lastHeard, s.busySince);
      if (silent > limit) ep.timedOut(Math.round(limit / 1000), ep.closing ? 'RAILCOMM_CONNECT_TIMEOUT, while closing' : 'RAILCOMM_UDP_PEER_TIMEOUT');
      else this.checkPort(ep, silent, limit, now);
    }
  }

  /**
   * Send `ep` a PROBE from a socket connected to its priority port: an ICMP
   * "port unreachable" comes back (as ECONNREFUSED on that socket) when no
   * socket is bound there any more. A live peer's kernel takes the datagram
   * even while the peer computes (it answers the probe once it can), so this
   * never fails a busy rank. No answer at all (ICMP filtered, a host that is
   * down, a port taken by another process) gives no verdict: the timeout
   * stays the backstop. A forged ICMP error would need a raw socket on the
   * path and the check socket's port.
   */
  private checkPort(ep: UdpEndpoint, silent: number, limit: number, now: number): void {
    if (this.closed || silent < PORT_CHECK_AFTER_MS || silent >= limit || ep.ip === '' || ep.portCheck !== null) return;
    if (now - ep.lastPortCheck < PORT_CHECK_EVERY_MS || this.sockets.size >= PORT_CHECKS_MAX) return;
    ep.lastPortCheck = now;
    const host = this.host;
    const buf = host.probeDatagram(ep);
    const sock = dgram.createSocket('udp4');
    this.sockets.add(sock);
    ep.portCheck = sock;
    host.counters.portChecks++;
    let done = false;
    const finish = (refused: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.sockets.delete(sock);
      if (ep.portCheck === sock) ep.portCheck = null;
      try { sock.close(); } catch { /* closed already */ }
      if (!refused || this.closed) return;
      host.counters.portsClosed++;
      ep.portClosed();
    };
    const timer = setTimeout(() => finish(false), PORT_CHECK_WAIT_MS);
    timer.unref();
    sock.unref();
    sock.on('error', (e: NodeJS.ErrnoException) => finish(e.code === 'ECONNREFUSED'));
    sock.connect(ep.prioPort, ep.ip, () => {
      if (done) return;
      sock.send(buf, (err) => { if (err !== null && err !== undefined) finish((err as NodeJS.ErrnoException).code === 'ECONNREFUSED'); });
    });
  }

  close(): void {
    this.closed = true;
    for (const s of this.sockets) { try { s.close(); } catch { /* closed already */ } }
    this.sockets.clear();
  }
}
