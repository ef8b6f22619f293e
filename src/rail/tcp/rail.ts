// The tcp rail: a listening socket on one device plus one endpoint per peer.
// Incoming connections are authenticated before they become an endpoint;
// simultaneous connects are resolved so that the lower endpoint id wins.

import net from 'node:net';
import { keyOfJob, type Device, type Rail, type RailCaps, type RailEnv, type RailUpcalls } from '../api.js';
import { TrafficCounters } from '../../core/counters.js';
import { FreeList } from '../../core/freelist.js';
import { RailcommError, ErrorCode } from '../../core/errors.js';
import { FrameReader } from './reader.js';
import { formatId, jobOf } from '../../core/ids.js';
import { TcpEndpoint, type Batch } from './endpoint.js';
import { Connector } from './connect.js';
import { HELLO_BYTES, RejectReason, decodeHello } from './wire.js';
import { TcpPeerCheck } from './peer-check.js';

/** Size of the write batches small frames are coalesced into. */
const BATCH_BYTES = 65536;
/**
 * Connections still proving the job key. Past this, the oldest is closed to
 * make room (bounds memory before auth, and a crowd of idle strangers cannot
 * keep a real peer out: its handshake takes milliseconds, theirs never ends).
 */
const MAX_HANDSHAKES = 256;

export class TcpRail implements Rail {
  readonly name: string;
  readonly component = 'tcp';
  readonly device: Device;
  readonly caps: RailCaps;
  readonly counters = new TrafficCounters();
  readonly env: RailEnv;
  readonly upcalls: RailUpcalls;
  readonly batches = new FreeList<Batch>(() => {
    const buf = Buffer.allocUnsafeSlow(BATCH_BYTES);
    return { buf, view: new DataView(buf.buffer, buf.byteOffset, buf.byteLength) };
  }, 256);
  private readonly server: net.Server;
  private readonly endpoints = new Map<bigint, TcpEndpoint>();
  private readonly handshaking = new Set<net.Socket>();
  private listenAddress = '';
  private closing = false;
  /** RAILCOMM_TCP_PEER_TIMEOUT: a peer whose host stopped answering fails (peer-check.ts). */
  readonly peerCheck: TcpPeerCheck;

  private constructor(device: Device, env: RailEnv) {
    this.device = device;
    this.env = env;
    this.upcalls = env.upcalls;
    this.name = `tcp:${device.name}`;
    const maxFrame = env.params.tcpMaxFrame;
    this.caps = {
      reliable: true,
      ordered: true,
      amHeaderMax: 256,
      amShortMax: 1024,
      amCopyMax: Math.min(maxFrame, 1 << 20),
      amZcopyMax: maxFrame,
      put: false,
      get: false,
      atomics: false,
      latencyUs: device.kind === 'loopback' ? 30 : 50,
      bandwidthMBps: device.kind === 'loopback' ? 3500 : 1000,
    };
    this.peerCheck = new TcpPeerCheck(env.params.tcpPeerTimeout, () => this.endpoints.values());
    this.server = net.createServer({ pauseOnConnect: true, noDelay: true }, (s) => this.onConnection(s));
    this.server.on('error', (err) => env.log.error(`tcp: listener on ${this.listenAddress} failed: ${err.message}`));
  }

  static async open(device: Device, env: RailEnv): Promise<TcpRail> {
    const rail = new TcpRail(device, env);
    const host = device.address ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      rail.server.once('error', reject);
      rail.server.listen({ host, port: env.params.tcpPort, backlog: 1024 }, () => {
        rail.server.off('error', reject);
        resolve();
      });
    }).catch((err: Error) => {
      throw new RailcommError(ErrorCode.NO_RAIL, `tcp: cannot listen on ${host}:${env.params.tcpPort} (device ${device.name}): ${err.message}`, { cause: err });
    });
    const a = rail.server.address() as net.AddressInfo;
    rail.listenAddress = a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
    // The listener alone must not keep a finished rank alive.
    rail.server.unref();
    return rail;
  }

  address(): string {
    return this.listenAddress;
  }

  endpoint(peer: bigint, address: string): TcpEndpoint {
    let ep = this.endpoints.get(peer);
    if (ep === undefined) {
      ep = new TcpEndpoint(this, peer, address);
      this.endpoints.set(peer, ep);
    } else {
      ep.setAddress(address);
    }
    return ep;
  }

  /** An endpoint became usable (either direction). */
  connected(ep: TcpEndpoint): void {
    this.upcalls.accepted(ep);
  }

  /** A socket finished its handshake, either way. */
  handshakeDone(s: net.Socket): void {
    this.handshaking.delete(s);
  }

  forget(ep: TcpEndpoint): void {
    if (this.endpoints.get(ep.peer) === ep) this.endpoints.delete(ep.peer);
  }

  private onConnection(raw: net.Socket): void {
    if (this.handshaking.size >= MAX_HANDSHAKES) {
      const oldest = this.handshaking.values().next().value as net.Socket;
      this.handshaking.delete(oldest);
      this.counters.refused++;
      this.env.log.warnEvery('tcp-evict', `tcp: ${MAX_HANDSHAKES} connections are still proving the job key; closing the oldest (${oldest.remoteAddress}:${oldest.remotePort}) to make room`);
      oldest.destroy();
    }
    const reader = new FrameReader(this.env.params.tcpRecvBuffer, this.caps.amHeaderMax, this.env.params.tcpMaxFrame, this.upcalls.activity);
    const s = adoptWithOnread(raw, reader);
    this.handshaking.add(s);
    const timer = setTimeout(() => {
      this.counters.refused++;
      this.env.log.warnEvery('tcp-slow-hello', `tcp: closing a connection from ${s.remoteAddress}:${s.remotePort} that did not introduce itself in time`);
      s.destroy();
    }, this.env.params.handshakeTimeout);
    timer.unref();
    s.on('error', () => { /* 'close' follows */ });
    s.once('close', () => { clearTimeout(timer); this.handshaking.delete(s); reader.stop(); });
    reader.expect(HELLO_BYTES, (b) => {
      clearTimeout(timer);
      const hello = decodeHello(b);
      if (typeof hello === 'string') {
        this.counters.refused++;
        this.counters.badFrames++;
        this.env.log.warnEvery('tcp-bad-hello', `tcp: refused a connection from ${s.remoteAddress}:${s.remotePort}: ${hello}`);
        reader.stop();
        s.destroy();
        return;
      }
      // Ranks of this job, or of a job a port or spawn connected (it proves the pair's key).
      const stranger = keyOfJob(this.env, hello.jobId) === null || jobOf(hello.from) !== hello.jobId;
      if (stranger || hello.to !== this.env.self) {
        this.counters.refused++;
        this.env.log.warnEvery('tcp-wrong-peer', `tcp: refused a connection from ${s.remoteAddress}:${s.remotePort}: it is for endpoint ${formatId(hello.to)}, this is endpoint ${formatId(this.env.self)} (job:rank)`);
        reader.stop();
        this.handshakeDone(s);
        Connector.reject(s, stranger ? RejectReason.WRONG_JOB : RejectReason.WRONG_PEER);
        return;
      }
      // Only claims so far: nothing here may keep the real peer out. Several
      // handshakes for one peer may run at once; the first that proves the
      // key wins (acceptHandshake), and our own attempt to reach it goes on.
      const existing = this.endpoints.get(hello.from);
      if (this.closing && !(existing?.mustDeliver ?? false)) {
        // Finalizing: only a peer we still owe data to may connect.
        reader.stop();
        this.handshakeDone(s);
        Connector.reject(s, RejectReason.CLOSING);
        return;
      }
      if (existing !== undefined && (existing.open || (existing.connecting && this.env.self < hello.from))) {
        // Ours wins (lower id), or a connection already exists.
        reader.stop();
        this.handshakeDone(s);
        Connector.reject(s, RejectReason.DUPLICATE);
        return;
      }
      const ep = existing ?? this.endpoint(hello.from, '');
      ep.acceptHandshake(s, reader, hello.nonce);
    });
    s.resume();
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.peerCheck.stop();
    await Promise.all([...this.endpoints.values()].map((ep) => ep.close()));
    for (const s of this.handshaking) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Accepted sockets cannot be given net.Socket's `onread` option, which reads
 * into buffers we choose (so payloads land in place). Re-wrap the accepted
 * handle in a socket that has it; fall back to 'data' events if the internals
 * are not as expected.
 */
function adoptWithOnread(raw: net.Socket, reader: FrameReader): net.Socket {
  const handle = (raw as unknown as { _handle?: object | null })._handle;
  if (handle !== undefined && handle !== null) {
    (raw as unknown as { _handle: object | null })._handle = null;
    raw.destroy();
    const s = new net.Socket({
      handle: handle as never, readable: true, writable: true,
      onread: { buffer: reader.nextBuffer, callback: reader.onRead },
    } as net.SocketConstructorOpts);
    s.setNoDelay(true);
    return s;
  }
  raw.on('data', (chunk: Buffer) => reader.feedChunk(chunk));
  return raw;
}
