// A rank's connection to the launcher's key-value service (KeyValueStore over
// kv-wire). It also watches the launcher: losing the connection unexpectedly
// means the launcher died, and onLost lets the rank exit instead of lingering.

import * as net from 'node:net';
import { RailcommError, ErrorCode } from '../core/errors.js';
import type { KeyValueStore, PeerLostListener } from './kv.js';
import { loadNative } from '../native/addon.js';
import { netSocketFd } from '../core/socket-fd.js';
import {
  MAX_LINE_BYTES, LineSplitter, authMac, encode, parseAuthOk, parseEvent, parseNonce, parseRefused, parseReply,
  type KvOp, type KvReply, type KvRequest,
} from './kv-wire.js';

export interface KvClientOptions {
  /** Time allowed to connect and authenticate, default 10 s. */
  timeoutMs?: number;
}

export type LostListener = (err: RailcommError) => void;

interface Pending {
  op: KvOp;
  resolve: (value: string | undefined) => void;
  reject: (err: RailcommError) => void;
  timer: NodeJS.Timeout | undefined;
}

/** setTimeout fires at once for delays beyond this, so longer waits get no timer at all. */
const MAX_TIMER_MS = 0x7fffffff;

type Phase = 'nonce' | 'auth' | 'ready' | 'done';

// Distributive over the request union so that each op keeps its own fields.
type RequestBody<R> = R extends KvRequest ? Omit<R, 'id'> : never;

/** The events this railcomm knows (kv-wire.ts parseEvent): others are ignored, for launchers newer than the rank. */
const KNOWN_EVENT = /^\{"event":"(lost|abort|finalized|report)"/;

export class KvClient implements KeyValueStore {
  readonly rank: number;
  readonly address: { host: string; port: number };
  private readonly socket: net.Socket;
  private readonly splitter: LineSplitter;
  private phase: Phase = 'nonce';
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly lostListeners: LostListener[] = [];
  private readonly peerLostListeners: PeerLostListener[] = [];
  private readonly peerFinalizedListeners: Array<(rank: number) => void> = [];
  private readonly reportListeners: Array<() => void> = [];

  /** The launcher asks for this rank's hang report now (it stops the job at --timeout). */
  onReportAsked(cb: () => void): void {
    this.reportListeners.push(cb);
  }
  private readonly abortListeners: Array<(rank: number, code: number, message: string) => void> = [];
  private closedByUs = false;
  /** The service said no to our proof: asking again will not help. */
  private refusedForGood = false;
  private lostError: RailcommError | undefined;
  private handshakeDone: ((err?: RailcommError) => void) | undefined;
  private jobKey = '';

  private constructor(socket: net.Socket, address: { host: string; port: number }, rank: number) {
    this.socket = socket;
    this.address = address;
    this.rank = rank;
    this.splitter = new LineSplitter(MAX_LINE_BYTES, (line) => this.onLine(line), () => {
      this.fail(`the key-value service at ${this.where()} sent a line longer than ${MAX_LINE_BYTES} bytes`);
    });
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.splitter.push(chunk));
    socket.on('error', (err) => this.fail(`connection to the key-value service at ${this.where()} failed: ${err.message}`));
    socket.on('close', () => this.fail(`lost the connection to the key-value service at ${this.where()} (did the launcher exit?)`));
  }

  /** Connect and prove the job key; rejects with ERR_BOOT when refused, unreachable or too slow. */
  static connect(addr: { host: string; port: number }, jobKey: string, rank: number, opts: KvClientOptions = {}): Promise<KvClient> {
    const timeoutMs = opts.timeoutMs ?? 10_000;
    const socket = net.connect({ host: addr.host, port: addr.port });
    const client = new KvClient(socket, { host: addr.host, port: addr.port }, rank);
    client.jobKey = jobKey;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        client.fail(`the key-value service at ${client.where()} did not complete the handshake within ${timeoutMs} ms`);
      }, timeoutMs);
      client.handshakeDone = (err) => {
        clearTimeout(timer);
        client.handshakeDone = undefined;
        if (err) {
          reject(err);
          return;
        }
        // Idle, the connection must not keep the rank alive; pending calls re-ref it.
        socket.unref();
        resolve(client);
      };
    });
  }

  /**
   * connect(), again with backoff until timeoutMs passed, unless the service
   * refused this rank for good (wrong key, rank taken): a service crowded by
   * strangers closes unproven connections to make room, so a try can fail.
   */
  static async connectRetrying(addr: { host: string; port: number }, jobKey: string, rank: number, timeoutMs: number): Promise<KvClient> {
    const deadline = Date.now() + timeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await KvClient.connect(addr, jobKey, rank, { timeoutMs: Math.max(1000, Math.min(10_000, deadline - Date.now())) });
      } catch (e) {
        const err = e as RailcommError & { refusedForGood?: boolean };
        if (err.refusedForGood === true || Date.now() >= deadline) throw err;
        await new Promise((r) => setTimeout(r, Math.min(500, 20 * 2 ** Math.min(attempt, 5))));
      }
    }
  }

  put(key: string, value: string): Promise<void> {
    return this.call({ op: 'put', key, value }).then(() => undefined);
  }

  fence(): Promise<void> {
    return this.call({ op: 'fence' }).then(() => undefined);
  }

  async get(key: string, timeoutMs: number): Promise<string> {
    const v = await this.call(Number.isFinite(timeoutMs) ? { op: 'get', key, timeoutMs: Math.max(0, timeoutMs) } : { op: 'get', key }, timeoutMs);
    if (v === undefined) throw new RailcommError(ErrorCode.PROTOCOL, `the key-value service answered get '${key}' without a value`);
    return v;
  }

  finalize(): Promise<void> {
    return this.call({ op: 'finalize' }).then(() => undefined);
  }

  /** Ask the launcher to stop the whole job, reporting `message` and exit status `code` (1..255, default 1). */
  abort(message: string, code?: number): Promise<void> {
    return this.call(code === undefined ? { op: 'abort', message } : { op: 'abort', message, code }).then(() => undefined);
  }

  /** Tell the launcher what this rank waits for (proto/hang.ts); nothing waits for the answer. */
  hangReport(report: string): void {
    if (this.closedByUs) return;
    this.call({ op: 'hang', report }).catch(() => undefined);
  }

  /**
   * `cb` runs once if the connection ends without close() having been called,
   * i.e. the launcher is gone. Registered after the loss, it runs on the next tick.
   */
  localAddress(): string | undefined {
    return this.socket.localAddress;
  }

  onLost(cb: LostListener): void {
    if (this.lostError && !this.closedByUs) {
      const err = this.lostError;
      queueMicrotask(() => cb(err));
      return;
    }
    this.lostListeners.push(cb);
  }

  /** comm.spawn: the launcher starts the job; resolves with its exit code once it ended, rejects when it cannot start. */
  async spawn(req: { command: string[]; n: number; port: string; cwd: string }): Promise<string> {
    return (await this.call({ op: 'spawn', ...req })) ?? '';
  }

  /** Ranks that finalized, and that died, as the service said so far: a listener added later hears them too. */
  private readonly finalizedSeen: number[] = [];
  private readonly lostSeen: Array<{ rank: number; why: string }> = [];

  onPeerFinalized(cb: (rank: number) => void): void {
    this.peerFinalizedListeners.push(cb);
    for (const r of this.finalizedSeen) cb(r);
  }

  onPeerLost(cb: PeerLostListener): void {
    this.peerLostListeners.push(cb);
    for (const l of this.lostSeen) cb(l.rank, l.why);
  }

  /**
   * Lost-rank events waiting unread on the socket (a synchronous call holds
   * the event loop): peeked at, not read, so the loop still handles them. A
   * line whose head the splitter holds is skipped (the next look, or the
   * loop, sees the event). Empty without the native addon or the socket's fd.
   */
  peekLost(): Array<{ rank: number; why: string }> {
    const native = loadNative();
    const fd = netSocketFd(this.socket);
    if (this.phase !== 'ready' || native?.peekSocket === undefined || fd < 0) return [];
    this.peekBuf ??= Buffer.alloc(64 * 1024);
    const n = native.peekSocket(fd, this.peekBuf);
    if (n <= 0) return [];
    const lines = this.peekBuf.toString('utf8', 0, n).split('\n');
    lines.pop(); // the last is not whole (or empty)
    if (this.splitter.holding) lines.shift();
    const out: Array<{ rank: number; why: string }> = [];
    for (const line of lines) {
      if (!line.startsWith('{"event"')) continue;
      const ev = parseEvent(line);
      if (ev !== undefined && ev.event === 'lost') out.push({ rank: ev.rank, why: ev.why });
    }
    return out;
  }
  private peekBuf: Buffer | undefined;

  /** The service says a rank aborted the job (rank 0's service: env://, mpirun or srun without PMIx). */
  onJobAbort(cb: (rank: number, code: number, message: string) => void): void {
    this.abortListeners.push(cb);
  }

  close(): void {
    if (this.closedByUs) return;
    this.closedByUs = true;
    this.rejectAll(new RailcommError(ErrorCode.BOOT, 'the key-value client was closed'));
    this.phase = 'done';
    this.socket.unref();
    this.socket.end();
  }

  private where(): string {
    return `${this.address.host}:${this.address.port}`;
  }

  private call(body: RequestBody<KvRequest>, timeoutMs?: number): Promise<string | undefined> {
    if (this.closedByUs) return Promise.reject(new RailcommError(ErrorCode.BOOT, `${body.op}: the key-value client was closed`));
    if (this.lostError) return Promise.reject(this.lostError);
    const id = this.nextId++;
    const line = encode({ id, ...body } as KvRequest);
    // The service would drop the whole connection for an over-long line; refuse just this call.
    if (Buffer.byteLength(line) > MAX_LINE_BYTES) {
      return Promise.reject(new RailcommError(ErrorCode.INVALID_ARG, `key-value ${body.op} is larger than ${MAX_LINE_BYTES} bytes encoded; store less per key`));
    }
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      if (timeoutMs !== undefined && timeoutMs < MAX_TIMER_MS) {
        timer = setTimeout(() => {
          this.settle(id);
          const key = 'key' in body ? ` for key '${body.key}'` : '';
          reject(new RailcommError(ErrorCode.TIMEOUT, `${body.op}${key} timed out after ${timeoutMs} ms: no rank put it; check that every rank runs and publishes it`));
        }, Math.max(0, timeoutMs));
      }
      this.pending.set(id, { op: body.op, resolve, reject, timer });
      // A waiting call must keep the process alive even though the idle socket does not.
      if (this.pending.size === 1) this.socket.ref();
      this.socket.write(line);
    });
  }

  /** Forget a pending call; returns it so the caller can complete it. */
  private settle(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    this.pending.delete(id);
    if (p.timer) clearTimeout(p.timer);
    if (this.pending.size === 0) this.socket.unref();
    return p;
  }

  private onLine(line: string): void {
    switch (this.phase) {
      case 'nonce': {
        const n = parseNonce(line);
        if (!n) {
          this.fail(`${this.where()} is not a railcomm key-value service (bad greeting)`);
          return;
        }
        this.phase = 'auth';
        this.socket.write(encode({ op: 'auth', rank: this.rank, mac: authMac(this.jobKey, n, this.rank).toString('hex') }));
        return;
      }
      case 'auth':
        if (!parseAuthOk(line)) {
          const why = parseRefused(line);
          this.refusedForGood = true;
          this.fail(`the key-value service at ${this.where()} refused rank ${this.rank}${why !== undefined ? `: ${why}` : ''}`);
          return;
        }
        this.phase = 'ready';
        this.handshakeDone?.();
        return;
      case 'ready': {
        if (line.startsWith('{"event"')) {
          const ev = parseEvent(line);
          if (ev === undefined) {
            // An event kind this railcomm does not know (a newer launcher's) is not its business; a known one malformed is.
            if (!KNOWN_EVENT.test(line)) return;
            this.fail(`the key-value service at ${this.where()} sent a malformed event`);
            return;
          }
          if (ev.event === 'abort') for (const cb of this.abortListeners) cb(ev.rank, ev.code, ev.message);
          // (Kept: a rank that finishes init() after the service said so still learns it.)
          else if (ev.event === 'report') for (const cb of this.reportListeners) cb();
          else if (ev.event === 'finalized') { this.finalizedSeen.push(ev.rank); for (const cb of this.peerFinalizedListeners) cb(ev.rank); }
          else { this.lostSeen.push({ rank: ev.rank, why: ev.why }); for (const cb of this.peerLostListeners) cb(ev.rank, ev.why); }
          return;
        }
        const r: KvReply | undefined = parseReply(line);
        if (!r) {
          this.fail(`the key-value service at ${this.where()} sent a malformed reply`);
          return;
        }
        // Replies to calls that already timed out are expected and dropped.
        const p = this.settle(r.id);
        if (!p) return;
        if (r.ok) p.resolve(r.value);
        else p.reject(new RailcommError(ErrorCode.BOOT, `key-value ${p.op} failed: ${r.error}`));
        return;
      }
      case 'done':
        return;
    }
  }

  private rejectAll(err: RailcommError): void {
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(err);
  }

  /** The connection is unusable: fail the handshake or every pending call, and report the loss once. */
  private fail(why: string): void {
    if (this.phase === 'done') return;
    const was = this.phase;
    this.phase = 'done';
    this.splitter.stop();
    this.socket.destroy();
    if (was !== 'ready') {
      // Closed right after our proof: the service refused it, almost always a wrong job key.
      const err = new RailcommError(ErrorCode.BOOT, `rank ${this.rank}: ${why}`);
      if (this.refusedForGood) Object.defineProperty(err, 'refusedForGood', { value: true });
      this.handshakeDone?.(err);
      return;
    }
    const err = new RailcommError(ErrorCode.BOOT, `rank ${this.rank}: ${why}`);
    this.lostError = err;
    this.rejectAll(err);
    for (const cb of this.lostListeners.splice(0)) cb(err);
  }
}
