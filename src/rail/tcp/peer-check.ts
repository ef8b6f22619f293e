// The tcp rail's verdict on a peer behind a cut network (RAILCOMM_TCP_PEER_TIMEOUT):
// silence alone proves nothing (a rank busy in a long computation runs no
// event loop and answers no heartbeat), but the peer's *kernel* answers for
// it: it acknowledges data and keepalive probes whatever the process does.
// So the check asks this host's kernel about each connection:
// - an idle connection gets keepalive probes (SO_KEEPALIVE, with idle,
//   interval and count that add up to the timeout); unanswered, the kernel
//   closes it (ETIMEDOUT) and the lane fails as on any lost connection;
// - a connection with data waiting for its ACK (keepalive stays quiet then)
//   is failed once the peer's host has acknowledged nothing for the timeout
//   (TCP_INFO's tcpi_last_ack_recv: every ACK counts, those answering a
//   zero-window probe too, so a peer that reads nothing but whose host
//   answers is alive). Without a timeout of its own the kernel would retry
//   for some 15 minutes (tcp_retries2).
// Both need the native addon; without it only Node's keepalive (its own
// interval and count) is set. 0 turns the check off.

import type net from 'node:net';
import { loadNative } from '../../native/addon.js';
import { netSocketFd } from '../../core/socket-fd.js';

/** What the check needs of an endpoint. */
export interface CheckedEndpoint {
  /** The connected socket's fd, or -1. */
  readonly socketFd: number;
  /** Fail the lane: the peer's host acknowledged nothing for `ms` with data waiting. */
  ackTimedOut(ms: number): void;
}

/**
 * Keepalive idle, interval (s) and count whose probes end about timeoutS after
 * the last traffic; within Linux's bounds (TCP_KEEPIDLE and TCP_KEEPINTVL at
 * most 32767 s, TCP_KEEPCNT 127), else setsockopt refuses them all.
 */
export function keepaliveFor(timeoutS: number): { idle: number; interval: number; count: number } {
  const idle = Math.min(32767, Math.max(1, Math.floor(timeoutS / 3)));
  const interval = Math.min(32767, Math.max(1, Math.floor(timeoutS / 9)));
  const count = Math.min(127, Math.max(1, Math.ceil((timeoutS - idle) / interval)));
  return { idle, interval, count };
}

/**
 * One look's verdict on a connection whose data has waited `ms` for an ACK
 * (`before`: what the look before saw past the limit, undefined if it did
 * not): 'fail' only on a second look past the limit with no ACK in between
 * (the wait only grew). A single reading proves little: tcpi_last_ack_recv
 * can be old the moment new data leaves after a long quiet spell, before the
 * ACK it draws; 'suspect' remembers it for the next look, 'ok' forgets it.
 */
export function ackVerdict(ms: number, limit: number, before: number | undefined): 'ok' | 'suspect' | 'fail' {
  if (ms < limit) return 'ok';
  return before !== undefined && ms > before ? 'fail' : 'suspect';
}

export class TcpPeerCheck {
  private readonly timeoutS: number;
  private readonly endpoints: () => Iterable<CheckedEndpoint>;
  private timer: NodeJS.Timeout | null = null;
  /** Connections seen past the limit on the last look, with what that look read (ackVerdict). */
  private readonly suspects = new Map<CheckedEndpoint, number>();

  constructor(timeoutS: number, endpoints: () => Iterable<CheckedEndpoint>) {
    this.timeoutS = timeoutS;
    this.endpoints = endpoints;
  }

  /** A connection was made: keepalive on it, and the in-flight check running. */
  arm(s: net.Socket): void {
    const t = this.timeoutS;
    if (t <= 0) return;
    const native = loadNative();
    const fd = netSocketFd(s);
    const k = keepaliveFor(t);
    if (native?.tcpKeepalive === undefined || fd < 0 || native.tcpKeepalive(fd, k.idle, k.interval, k.count) !== 0) s.setKeepAlive(true, k.idle * 1000);
    if (this.timer === null && native?.tcpAckWait !== undefined) {
      // A few looks per timeout; unref'd: it never holds a finished rank open.
      this.timer = setInterval(() => this.look(), Math.max(250, Math.min(5000, (t * 1000) / 6)));
      this.timer.unref();
    }
  }

  private look(): void {
    const native = loadNative();
    if (native?.tcpAckWait === undefined) return;
    const limit = this.timeoutS * 1000;
    const seen = this.suspects;
    const before = seen.size === 0 ? null : new Map(seen);
    seen.clear();
    for (const ep of this.endpoints()) {
      const fd = ep.socketFd;
      if (fd < 0) continue;
      const ms = native.tcpAckWait(fd);
      const v = ackVerdict(ms, limit, before?.get(ep));
      if (v === 'suspect') seen.set(ep, ms);
      else if (v === 'fail') ep.ackTimedOut(ms);
    }
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.suspects.clear();
  }
}
