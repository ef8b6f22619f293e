// How the udp rail's datagrams leave its two sockets (rail.ts). Data segments
// posted during a progress pass wait for its end and go together with one
// sendmmsg through the addon: one system call, and one wake-up of a sleeping
// receiver, per pass instead of per datagram. Priority datagrams (ACKs, tiny
// fragments) go at once, through the addon too. dgram.send takes whatever the
// addon cannot: no addon, a peer that is not IPv4, or datagrams libuv still
// queues on that socket (its buffer was full), which must not be overtaken.

import type dgram from 'node:dgram';
import type { NativeAddon } from '../../native/addon.js';
import type { UdpCounters } from './counters.js';
import type { UdpEndpoint } from './endpoint.js';
import { socketFd } from './sockets.js';

const EMPTY = Buffer.alloc(0);
/** Data segments a pass posts with one sendmmsg (the addon's limit). */
const BATCH_MAX = 256;

export class SendPath {
  /** A progress pass runs: data segments wait for flush() at its end. */
  inPass = false;
  private batchSend: NativeAddon['udpSendBatch'] | null = null;
  private dataFd = -1;
  private prioFd = -1;
  private batchN = 0;
  private readonly batchBufs: Buffer[] = [];
  private readonly batchEps: UdpEndpoint[] = [];
  private readonly batchLens = new Uint32Array(BATCH_MAX);
  private readonly batchPorts = new Uint32Array(BATCH_MAX);
  private readonly batchAddrs = new Uint32Array(BATCH_MAX);
  private readonly oneBuf: Buffer[] = [EMPTY];
  private readonly oneLen = new Uint32Array(1);
  private readonly onePort = new Uint32Array(1);
  private readonly oneAddr = new Uint32Array(1);

  constructor(private readonly data: dgram.Socket, private readonly prio: dgram.Socket, private readonly counters: UdpCounters) {}

  /** Send through the addon from now on (the sockets are bound; their fds are known). */
  useAddon(batchSend: NativeAddon['udpSendBatch']): void {
    this.dataFd = socketFd(this.data);
    this.prioFd = socketFd(this.prio);
    if (this.dataFd >= 0) this.batchSend = batchSend;
  }

  /** One datagram to ep's port: batched within a pass (data), at once otherwise. */
  send(ep: UdpEndpoint, buf: Buffer, len: number, port: number, prio: boolean): void {
    if (!prio && this.inPass && this.batchSend !== null && ep.ipv4() !== 0) {
      // A segment is not touched again before the pass ends (ACKs that free
      // segments are handled by receive callbacks, never inside a pass).
      const i = this.batchN++;
      this.batchBufs[i] = buf;
      this.batchEps[i] = ep;
      this.batchLens[i] = len;
      this.batchPorts[i] = port;
      this.batchAddrs[i] = ep.ipv4();
      if (this.batchN === BATCH_MAX) this.flush();
    } else if (!prio || !this.sendPrioNow(ep, buf, len, port)) (prio ? this.prio : this.data).send(buf, 0, len, port, ep.ip);
  }

  /**
   * A priority datagram sent at once by the addon: dgram.send builds a send
   * request and argument list per datagram, which was 5% of a 1 MiB
   * receiver's time spent on its ACKs. False when it cannot; dgram.send takes it then.
   */
  private sendPrioNow(ep: UdpEndpoint, buf: Buffer, len: number, port: number): boolean {
    if (this.batchSend === null || this.prioFd < 0 || this.prio.getSendQueueCount() !== 0) return false;
    const ip = ep.ipv4();
    if (ip === 0) return false;
    this.oneBuf[0] = buf;
    this.oneLen[0] = len;
    this.onePort[0] = port;
    this.oneAddr[0] = ip;
    const sent = this.batchSend(this.prioFd, this.oneBuf, this.oneLen, this.onePort, this.oneAddr, 1);
    this.oneBuf[0] = EMPTY;
    return sent === 1;
  }

  /** Send the batched data segments: sendmmsg, or dgram.send for what it did not take. */
  flush(): void {
    const n = this.batchN;
    if (n === 0) return;
    this.batchN = 0;
    let sent = 0;
    if (this.data.getSendQueueCount() === 0) {
      sent = this.batchSend!(this.dataFd, this.batchBufs, this.batchLens, this.batchPorts, this.batchAddrs, n);
      if (sent < 0) sent = 0;
      else this.counters.sendBatches++;
    }
    for (let i = sent; i < n; i++) this.data.send(this.batchBufs[i]!, 0, this.batchLens[i]!, this.batchPorts[i]!, this.batchEps[i]!.ip);
    // The segments are the sessions' again (freed once acknowledged): hold no reference here.
    this.batchBufs.fill(EMPTY, 0, n);
  }
}
