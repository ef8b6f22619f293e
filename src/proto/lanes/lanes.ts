// Multirail for the protocol context: which lanes a peer gets (select.ts),
// the MultiLane that carries them, the handlers of the lane messages
// (envelopes, acknowledgements, heartbeats), and the one timer that runs the
// heartbeats of peers with traffic outstanding. Observability: the
// railcomm:lane-failed and railcomm:lane-joined channels, and laneStats.

import type { AmHandler, Rail, RailEndpoint } from '../../rail/api.js';
import { NO_RESOURCE } from '../../rail/api.js';
import type { AmRegistry } from '../am.js';
import type { ProtoEndpoint } from '../endpoint.js';
import type { Logger } from '../../core/log.js';
import type { Params } from '../../core/params.js';
import { channels } from '../observe.js';
import { SILENT_LANES, type HangWait } from '../hang.js';
import { Lane, MultiLane, heartbeatEvery, type LaneHost } from './multi-lane.js';
import { LaneReceiver } from './receiver.js';
import { planLanes, sameSubnet, type LanePlan, type RailChoice } from './select.js';
import { AM_LANE_ACK, AM_LANE_DOWN, AM_LANE_ENV, AM_LANE_PING, AM_LANE_PONG, DOWN_HDR, DOWN_MAX, PING_HDR, decodeDown, encodePing, pingLane, pingNum } from './wire.js';

/** What the lanes need from the context. */
export interface LanesHost {
  /** The rendezvous layer: a lane failed, what was in flight on it must be asked for again. */
  laneFailed(ep: ProtoEndpoint): void;
  /** The endpoint can take sends again. */
  drain(ep: ProtoEndpoint): void;
  /** A peer with a rendezvous or sends outstanding (its lanes' heartbeat runs). */
  busy(ep: ProtoEndpoint): boolean;
}

/** How a rail fits a peer's address: same subnet 2, reachable 1, not at all 0. */
function fitOf(rail: Rail): (address: string) => number {
  const host = rail.address().replace(/:\d+(:\d+)?$/, '');
  const cidr = rail.device.notes?.match(/\/(\d+)/);
  const bits = cidr !== undefined && cidr !== null ? Number(cidr[1]) : -1;
  // Only tcp and udp addresses are host:port; other rails (ofi's provider
  // addresses, shared memory) say themselves whether they reach a peer.
  const ipAddressed = rail.component === 'tcp' || rail.component === 'udp';
  return (address) => {
    if (rail.whyNot !== undefined && rail.whyNot(address) !== null) return 0;
    if (!ipAddressed) return 1;
    const ip = address.replace(/^\[|\]$/g, '').split(':')[0]!;
    if (bits >= 0 && sameSubnet(host, ip, bits)) return 2;
    // Loopback reaches only this host's ranks.
    if (rail.device.kind === 'loopback') return /^127\./.test(ip) ? 2 : 0;
    return 1;
  };
}

export function railChoice(rail: Rail): RailChoice & { rail: Rail } {
  return {
    rail, component: rail.component, name: rail.name, device: rail.device.name,
    network: rail.component === 'tcp' || rail.component === 'udp' || rail.component === 'ofi',
    latencyUs: rail.caps.latencyUs, bandwidthMBps: rail.caps.bandwidthMBps, fit: fitOf(rail),
  };
}

export class Lanes {
  /** Hang report: a wait per multi-lane peer whose lanes all stopped answering (MultiLane.silence). */
  silentWaits(out: HangWait[], now: number): void {
    for (const m of this.multis) {
      const why = m.silence(now);
      const ep = m.owner as ProtoEndpoint | null;
      if (why !== null && ep !== null) out.push({ peer: ep.rank, what: `${SILENT_LANES} to world rank ${ep.rank}: ${why}` });
    }
  }

  private readonly host: LanesHost;
  private readonly params: Params;
  private readonly log: Logger;
  private readonly multis = new Set<MultiLane>();
  private timer: NodeJS.Timeout | null = null;
  private readonly pong = new Uint8Array(PING_HDR);
  private readonly pongView = new DataView(this.pong.buffer);
  private readonly table: ReadonlyArray<AmHandler | undefined>;
  /** Malformed lane messages from peers (counted, the lane dropped). */
  protocolErrors = 0;

  private readonly laneHost: LaneHost;

  constructor(host: LanesHost, am: AmRegistry, params: Params, log: Logger) {
    this.host = host;
    this.params = params;
    this.log = log;
    this.table = am.table;
    this.laneHost = {
      laneTimeoutMs: params.laneTimeout,
      now: () => performance.now(),
      ackFor: (owner) => (owner as ProtoEndpoint).laneRx?.acknowledged ?? 0,
      ackSent: (owner) => { const rx = (owner as ProtoEndpoint).laneRx; if (rx != null) rx.owed = 0; },
      laneFailed: (m, lane) => {
        const ep = m.owner as ProtoEndpoint;
        if (channels.laneFailed.hasSubscribers) channels.laneFailed.publish({ rank: ep.rank, rail: lane.rail.name, why: lane.why });
        this.host.laneFailed(ep);
      },
      laneJoined: (m, lane) => {
        const ep = m.owner as ProtoEndpoint;
        if (channels.laneJoined.hasSubscribers) channels.laneJoined.publish({ rank: ep.rank, rail: lane.rail.name });
        this.host.drain(ep);
      },
      ready: (m) => this.host.drain(m.owner as ProtoEndpoint),
      log: (msg, quiet) => { if (quiet === true) this.log.debug(msg); else this.log.warn(msg); },
    };
    am.register(AM_LANE_ENV, 'lane-envelope', this.envHandler);
    am.register(AM_LANE_ACK, 'lane-ack', this.ackHandler);
    am.register(AM_LANE_PING, 'lane-ping', this.pingHandler);
    am.register(AM_LANE_PONG, 'lane-pong', this.pongHandler);
    am.register(AM_LANE_DOWN, 'lane-down', this.downHandler);
  }

  /** The lanes to a peer that published `addrs`, fastest first (RAILCOMM_MAX_EAGER_RAILS, RAILCOMM_MAX_RNDV_RAILS). */
  plan(rails: readonly Rail[], addrs: Readonly<Record<string, readonly string[]>>): Array<LanePlan<RailChoice & { rail: Rail }>> {
    return planLanes(rails.filter((r) => r.component !== 'self').map(railChoice), addrs, this.params.maxEagerRails, this.params.maxRndvRails);
  }

  /** The endpoint for several lanes (their rail endpoints made here; each connects on first use). */
  multi(ep: ProtoEndpoint, plans: ReadonlyArray<LanePlan<RailChoice & { rail: Rail }>>, existing: RailEndpoint | null): MultiLane {
    const lanes = plans.map((p) => {
      const rep = existing !== null && existing.rail === p.rail.rail ? existing : p.rail.rail.endpoint(ep.id, p.address);
      rep.owner = ep;
      return new Lane(rep, p.eager, p.rndv, p.address);
    });
    const m = new MultiLane(this.laneHost, ep.id, lanes, this.params.maxEagerRails);
    m.owner = ep;
    this.multis.add(m);
    this.arm();
    return m;
  }

  forget(m: MultiLane): void {
    this.multis.delete(m);
  }

  // ---- receiving ---------------------------------------------------------------

  private readonly envHandler: AmHandler = {
    recv: (rep, rx) => {
      const ep = rep.owner as ProtoEndpoint;
      const rxState = (ep.laneRx ??= new LaneReceiver());
      if (ep.lane instanceof MultiLane) ep.lane.acked(rx.view.getUint32(rx.hdrOff + 4, true));
      if (!rxState.take(rep, rx, this.table)) { this.bad(rep, 'an envelope with a bad length or an unknown message'); return; }
      if (rxState.owed > 0) this.owe(ep);
    },
  };

  private readonly ackHandler: AmHandler = {
    recv: (rep, rx) => {
      const ep = rep.owner as ProtoEndpoint;
      if (ep.lane instanceof MultiLane) ep.lane.acked(rx.view.getUint32(rx.hdrOff, true));
    },
  };

  /** A heartbeat: answered on the lane it came on. */
  private readonly pingHandler: AmHandler = {
    recv: (rep, rx) => {
      encodePing(this.pongView, pingLane(rx.view, rx.hdrOff), pingNum(rx.view, rx.hdrOff));
      rep.sendCopy(AM_LANE_PONG, this.pong, PING_HDR, null);
    },
  };

  private readonly pongHandler: AmHandler = {
    recv: (rep, rx) => {
      const ep = rep.owner as ProtoEndpoint;
      if (ep.lane instanceof MultiLane) ep.lane.pong(rep, pingLane(rx.view, rx.hdrOff));
    },
  };

  /** The peer gave up on one of its lanes to us: ours fails with it (MultiLane.peerGaveUp). */
  private readonly downHandler: AmHandler = {
    recv: (rep, rx) => {
      const notice = rx.hdrLen === DOWN_HDR && rx.payLen <= DOWN_MAX ? decodeDown(rx.buf.toString('utf8', rx.payOff, rx.payOff + rx.payLen)) : null;
      if (notice === null) { this.bad(rep, 'a malformed lane-down notice'); return; }
      const ep = rep.owner as ProtoEndpoint | null;
      if (ep !== null && ep.lane instanceof MultiLane) ep.lane.peerGaveUp(notice.component, notice.from, notice.to, notice.why);
    },
  };

  private bad(rep: RailEndpoint, why: string): void {
    this.protocolErrors++;
    rep.abort(why);
  }

  /** Acknowledgements owed: sent at the end of this event-loop turn unless a message of ours carried them first. */
  private readonly owing = new Set<ProtoEndpoint>();
  private owe(ep: ProtoEndpoint): void {
    if (this.owing.size === 0) setImmediate(this.flushAcks);
    this.owing.add(ep);
  }

  private readonly flushAcks = (): void => {
    for (const ep of this.owing) {
      const rx = ep.laneRx;
      if (rx == null || rx.owed === 0 || ep.failure !== null) continue;
      const lane = ep.lane;
      if (lane instanceof MultiLane) lane.sendAck(rx.acknowledged);
      else if (lane !== null) sendRawAck(lane, rx);
    }
    this.owing.clear();
  };

  // ---- heartbeats --------------------------------------------------------------

  /** One timer for every multi-lane peer: a heartbeat a quarter of the lane timeout apart while a peer has work outstanding. */
  private arm(): void {
    if (this.timer !== null || this.multis.size === 0) return;
    this.timer = setInterval(this.tick, heartbeatEvery(this.params.laneTimeout));
    this.timer.unref();
  }

  private readonly tick = (): void => {
    for (const m of this.multis) {
      const ep = m.owner as ProtoEndpoint;
      if (ep.failure !== null) { this.multis.delete(m); continue; }
      if (m.unacknowledged > 0 || this.host.busy(ep)) m.heartbeat();
    }
    if (this.multis.size === 0 && this.timer !== null) { clearInterval(this.timer); this.timer = null; }
  };

  close(): void {
    if (this.timer !== null) { clearInterval(this.timer); this.timer = null; }
    for (const m of this.multis) m.shutdown();
    this.multis.clear();
  }
}

/** An acknowledgement on a single lane (this side sends without envelopes, the peer with). */
const ackBuf = new Uint8Array(4);
const ackView = new DataView(ackBuf.buffer);
function sendRawAck(lane: RailEndpoint, rx: LaneReceiver): void {
  ackView.setUint32(0, rx.acknowledged, true);
  if (lane.sendCopy(AM_LANE_ACK, ackBuf, 4, null) !== NO_RESOURCE) rx.owed = 0;
}
