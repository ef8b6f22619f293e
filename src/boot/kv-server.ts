// The key-value service `railcomm run` hosts for its ranks: put/get/fence for
// wire-up, plus finalize and abort notices for the launcher. Connections prove
// the job key first; strangers and garbage are refused without disturbing the job.

import * as net from 'node:net';
import { nonce, macEquals } from '../core/auth.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import {
  MAX_LINE_BYTES, MAX_AUTH_LINE_BYTES, LineSplitter, authMac, encode,
  parseAuth, parseRequest, type KvReply, type KvRequest,
} from './kv-wire.js';

export interface KvLimits {
  /** Distinct keys the store holds. */
  maxKeys: number;
  maxKeyBytes: number;
  maxValueBytes: number;
  /** Sum of key and value bytes over the whole store. */
  maxTotalBytes: number;
  /** Unanswered gets one connection may hold, so a waiting loop cannot grow the server without bound. */
  maxPendingGets: number;
  /** Connections still in the handshake at once; past it, the oldest of them is closed to make room. */
  maxUnauthenticated: number;
}

export const DEFAULT_KV_LIMITS: KvLimits = {
  maxKeys: 1 << 18,
  maxKeyBytes: 1024,
  maxValueBytes: 256 * 1024,
  maxTotalBytes: 64 * 1024 * 1024,
  maxPendingGets: 4096,
  maxUnauthenticated: 128,
};

/** How long after a get's own timeout the server forgets it. */
const GET_DROP_SLACK_MS = 1000;
const MAX_TIMER_MS = 0x7fffffff;
/** Room a reply line needs besides the JSON-encoded value: {"id":N,"ok":true,"value":...}. */
const REPLY_OVERHEAD = 64;
/** Replies queued to one connection before it counts as not reading and is dropped. */
const MAX_UNREAD_REPLY_BYTES = 16 * 1024 * 1024;

export interface KvServerOptions {
  /** Ranks in the job; fences complete when all of them arrive. */
  size: number;
  /** Hex job key every connection must prove. */
  jobKey: string;
  /** Default 127.0.0.1: the service is for ranks on this host only. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** Time a connection gets to authenticate, default 5 s. */
  authTimeoutMs?: number;
  limits?: Partial<KvLimits>;
}

export type AbortListener = (rank: number, message: string, code: number) => void;
/** A rank's hang report, as the rank sent it (JSON text; cli/hang-board.ts reads it). */
export type HangListener = (rank: number, report: string) => void;
/** comm.spawn at a rank: start the job; resolves with its exit code once it ended (text), rejects when it cannot start. */
export type SpawnListener = (rank: number, req: { command: string[]; n: number; port: string; cwd: string }) => Promise<string>;

interface Conn {
  socket: net.Socket;
  /** -1 until authenticated. */
  rank: number;
  pendingGets: number;
}

interface GetWaiter { conn: Conn; id: number; timer: NodeJS.Timeout | undefined }
interface FenceWaiter { conn: Conn; id: number; generation: number }

export class KvServer {
  private readonly size: number;
  private readonly jobKey: string;
  private readonly host: string;
  private readonly port: number;
  private readonly authTimeoutMs: number;
  private readonly limits: KvLimits;
  private readonly server: net.Server;
  private readonly conns = new Set<Conn>();
  private readonly store = new Map<string, string>();
  private storeBytes = 0;
  private readonly getWaiters = new Map<string, GetWaiter[]>();
  private readonly fenceCount: number[];
  private fenceWaiters: FenceWaiter[] = [];
  private readonly rankConn: Array<Conn | undefined>;
  private readonly joinedRanks: boolean[];
  private readonly finalizedRanks: boolean[];
  private readonly abortListeners: AbortListener[] = [];
  private readonly hangListeners: HangListener[] = [];
  private spawnListener: SpawnListener | null = null;
  private unauthenticated = 0;
  private bound: { host: string; port: number } | undefined;
  private closing = false;

  /** Connections closed for failing the handshake (bad MAC, garbage, too long, too slow, duplicate rank). */
  refused = 0;
  /** Unproven connections closed to make room for new ones (also counted in refused when they close). */
  evicted = 0;
  /** Authenticated connections closed for breaking the protocol afterwards. */
  dropped = 0;

  constructor(opts: KvServerOptions) {
    if (!Number.isSafeInteger(opts.size) || opts.size < 1) {
      throw new RailcommError(ErrorCode.INVALID_ARG, `KvServer size must be a positive integer, got ${opts.size}`);
    }
    if (!/^[0-9a-f]{16,}$/i.test(opts.jobKey)) {
      throw new RailcommError(ErrorCode.INVALID_ARG, 'KvServer jobKey must be a hex secret of at least 16 digits');
    }
    this.size = opts.size;
    this.jobKey = opts.jobKey;
    this.host = opts.host ?? '127.0.0.1';
    this.port = opts.port ?? 0;
    this.authTimeoutMs = opts.authTimeoutMs ?? 5_000;
    this.limits = { ...DEFAULT_KV_LIMITS, ...opts.limits };
    this.limits.maxValueBytes = Math.min(this.limits.maxValueBytes, MAX_LINE_BYTES - REPLY_OVERHEAD);
    this.fenceCount = new Array<number>(this.size).fill(0);
    this.rankConn = new Array<Conn | undefined>(this.size).fill(undefined);
    this.joinedRanks = new Array<boolean>(this.size).fill(false);
    this.finalizedRanks = new Array<boolean>(this.size).fill(false);
    this.server = net.createServer((s) => this.accept(s));
  }

  /** Create and start listening in one step. */
  static async start(opts: KvServerOptions): Promise<KvServer> {
    const s = new KvServer(opts);
    await s.listen();
    return s;
  }

  listen(): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => {
        reject(new RailcommError(ErrorCode.BOOT, `key-value service cannot listen on ${this.host}:${this.port}: ${err.message}`, { cause: err }));
      };
      this.server.once('error', onError);
      this.server.listen(this.port, this.host, () => {
        this.server.off('error', onError);
        const a = this.server.address() as net.AddressInfo;
        this.bound = { host: this.host, port: a.port };
        resolve(this.bound);
      });
    });
  }

  address(): { host: string; port: number } {
    if (!this.bound) throw new RailcommError(ErrorCode.BOOT, 'key-value service is not listening yet; await listen() first');
    return { ...this.bound };
  }

  onAbort(cb: AbortListener): void {
    this.abortListeners.push(cb);
  }

  onHang(cb: HangListener): void {
    this.hangListeners.push(cb);
  }

  /** Called with each rank that joins (authenticated: it is in init()). */
  onJoin(cb: (rank: number) => void): void {
    this.joinListeners.push(cb);
  }
  private readonly joinListeners: Array<(rank: number) => void> = [];

  /** True once any rank joined. */
  anyJoined(): boolean {
    return this.joinedRanks.includes(true);
  }

  /** Who starts the ranks a rank spawns (railcomm run); without one, spawn requests fail. */
  onSpawn(cb: SpawnListener): void {
    this.spawnListener = cb;
  }

  /** The rank finalized, or joined and its connection is gone (it died): it needs the service no more. */
  done(rank: number): boolean {
    return this.finalizedRanks[rank] === true || (this.joinedRanks[rank] === true && this.rankConn[rank] === undefined);
  }

  finalized(rank: number): boolean {
    return this.finalizedRanks[rank] === true;
  }

  /** True once `rank` ever authenticated: it is a railcomm rank whose peers may depend on it. */
  joined(rank: number): boolean {
    return this.joinedRanks[rank] === true;
  }

  /** Keys currently stored (for tests and diagnostics). */
  get keyCount(): number {
    return this.store.size;
  }

  /** Gets waiting for a key, over all connections (for tests and diagnostics). */
  get waitingGets(): number {
    let n = 0;
    for (const list of this.getWaiters.values()) n += list.length;
    return n;
  }

  close(): Promise<void> {
    this.closing = true;
    for (const c of this.conns) c.socket.destroy();
    this.conns.clear();
    for (const list of this.getWaiters.values()) for (const w of list) if (w.timer) clearTimeout(w.timer);
    this.getWaiters.clear();
    this.fenceWaiters = [];
    return new Promise((resolve) => {
      if (!this.server.listening) {
        resolve();
        return;
      }
      this.server.close(() => resolve());
    });
  }

  private accept(socket: net.Socket): void {
    if (this.closing) {
      this.refused++;
      socket.destroy();
      return;
    }
    if (this.unauthenticated >= this.limits.maxUnauthenticated) {
      // Strangers that never answer must not keep a late rank out: their
      // handshakes never end, a rank's takes a round trip. (Its 'close' counts it.)
      for (const c of this.conns) if (c.rank < 0 && !c.socket.destroyed) { this.evicted++; c.socket.destroy(); break; }
    }
    this.unauthenticated++;
    const conn: Conn = { socket, rank: -1, pendingGets: 0 };
    this.conns.add(conn);
    const challenge = nonce();
    let failed = false;
    // Refuse once; every later failure path on the same socket must not count again.
    const refuse = (): void => {
      if (failed) return;
      failed = true;
      this.refused++;
      splitter.stop();
      socket.destroy();
    };
    const authTimer = setTimeout(refuse, this.authTimeoutMs);
    authTimer.unref();

    const splitter = new LineSplitter(
      MAX_AUTH_LINE_BYTES,
      (line) => {
        if (conn.rank < 0) {
          const auth = parseAuth(line);
          if (!auth || auth.rank >= this.size || this.rankConn[auth.rank] !== undefined
              || !macEquals(auth.mac, authMac(this.jobKey, challenge, auth.rank))) {
            // Said, so that the rank stops retrying: this will not change.
            if (!socket.destroyed) socket.write(encode({ refused: auth && auth.rank < this.size && this.rankConn[auth.rank] !== undefined ? `rank ${auth.rank} is already connected` : 'wrong job key or rank' }));
            refuse();
            return;
          }
          clearTimeout(authTimer);
          this.unauthenticated--;
          conn.rank = auth.rank;
          this.rankConn[auth.rank] = conn;
          this.joinedRanks[auth.rank] = true;
          splitter.maxBytes = MAX_LINE_BYTES;
          socket.write(encode({ ok: true }));
          for (const cb of this.joinListeners) cb(auth.rank);
          return;
        }
        this.request(conn, line, splitter);
      },
      () => {
        if (conn.rank < 0) {
          refuse();
        } else {
          this.dropped++;
          socket.destroy();
        }
      },
    );

    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => splitter.push(chunk));
    socket.on('error', () => { /* 'close' follows and does the cleanup */ });
    socket.on('close', () => {
      clearTimeout(authTimer);
      splitter.stop();
      this.conns.delete(conn);
      if (conn.rank < 0) {
        this.unauthenticated--;
        // Leaving before authenticating (including a peer that only probed the port) is a refusal too.
        if (!failed) {
          failed = true;
          this.refused++;
        }
        return;
      }
      if (this.rankConn[conn.rank] === conn) this.rankConn[conn.rank] = undefined;
      this.forget(conn);
      if (!this.finalizedRanks[conn.rank] && !this.closing) this.lost(conn.rank);
    });
    socket.write(encode({ nonce: challenge.toString('hex') }));
  }

  /**
   * A rank's connection ended before it finalized: its process (or thread)
   * died. Tell every other rank at once, so that what waits on it fails
   * within milliseconds, also at ranks that never talked to it.
   */
  private lost(rank: number): void {
    this.lostRanks++;
    this.broadcast(encode({ event: 'lost', rank, why: 'its connection to the wire-up service ended before it finalized (the process or thread died)' }), rank);
  }

  /** One event line to every rank connected now, but `except`. */
  private broadcast(line: string, except = -1): void {
    for (const c of this.conns) if (c.rank >= 0 && c.rank !== except && !c.socket.destroyed) c.socket.write(line);
  }

  /** Ask every rank for its hang report now (--timeout is about to stop the job). */
  askReports(): void {
    this.broadcast(encode({ event: 'report' }));
  }

  /** Tell every rank that `rank` aborted the job with `code` (rank 0's service: each rank then exits). */
  broadcastAbort(rank: number, code: number, message: string): void {
    this.broadcast(encode({ event: 'abort', rank, code, message }));
  }

  /** Ranks reported lost (for tests and the launcher's summary). */
  lostRanks = 0;

  /** A get whose client stopped waiting: forget it silently. */
  private dropWaiter(key: string, waiter: GetWaiter): void {
    const list = this.getWaiters.get(key);
    if (!list) return;
    const i = list.indexOf(waiter);
    if (i < 0) return;
    list.splice(i, 1);
    if (list.length === 0) this.getWaiters.delete(key);
    waiter.conn.pendingGets--;
  }

  /** Drop the waiters a closed connection left behind. */
  private forget(conn: Conn): void {
    for (const [key, list] of this.getWaiters) {
      for (const w of list) if (w.conn === conn && w.timer) clearTimeout(w.timer);
      const kept = list.filter((w) => w.conn !== conn);
      if (kept.length === 0) this.getWaiters.delete(key);
      else if (kept.length !== list.length) this.getWaiters.set(key, kept);
    }
    this.fenceWaiters = this.fenceWaiters.filter((w) => w.conn !== conn);
  }

  private reply(conn: Conn, msg: KvReply): void {
    const s = conn.socket;
    if (s.destroyed) return;
    // A peer that sends requests but never reads the replies would grow our buffers without bound.
    if (s.writableLength > MAX_UNREAD_REPLY_BYTES) {
      this.dropped++;
      s.destroy();
      return;
    }
    s.write(encode(msg));
  }

  private request(conn: Conn, line: string, splitter: LineSplitter): void {
    const parsed = parseRequest(line);
    if (!('req' in parsed)) {
      if (parsed.id === undefined) {
        // Without an id there is nobody to answer; the peer is not speaking our protocol.
        this.dropped++;
        splitter.stop();
        conn.socket.destroy();
      } else {
        this.reply(conn, { id: parsed.id, ok: false, error: parsed.error });
      }
      return;
    }
    this.handle(conn, parsed.req);
  }

  private handle(conn: Conn, req: KvRequest): void {
    const rank = conn.rank;
    switch (req.op) {
      case 'put': {
        const err = this.put(req.key, req.value);
        this.reply(conn, err ? { id: req.id, ok: false, error: err } : { id: req.id, ok: true });
        return;
      }
      case 'get': {
        const v = this.store.get(req.key);
        if (v !== undefined) {
          this.reply(conn, { id: req.id, ok: true, value: v });
          return;
        }
        if (Buffer.byteLength(req.key) > this.limits.maxKeyBytes) {
          this.reply(conn, { id: req.id, ok: false, error: `key is longer than ${this.limits.maxKeyBytes} bytes` });
          return;
        }
        if (conn.pendingGets >= this.limits.maxPendingGets) {
          this.reply(conn, { id: req.id, ok: false, error: `more than ${this.limits.maxPendingGets} gets are waiting on this connection` });
          return;
        }
        conn.pendingGets++;
        const waiter: GetWaiter = { conn, id: req.id, timer: undefined };
        if (req.timeoutMs !== undefined && req.timeoutMs < MAX_TIMER_MS - GET_DROP_SLACK_MS) {
          // The client has given up by then (it times out on its own clock); the slack keeps
          // the server from ever answering first with an error the client would mistake for a failure.
          waiter.timer = setTimeout(() => this.dropWaiter(req.key, waiter), req.timeoutMs + GET_DROP_SLACK_MS);
          waiter.timer.unref();
        }
        const list = this.getWaiters.get(req.key);
        if (list) list.push(waiter);
        else this.getWaiters.set(req.key, [waiter]);
        return;
      }
      case 'fence': {
        const generation = ++this.fenceCount[rank];
        this.fenceWaiters.push({ conn, id: req.id, generation });
        this.releaseFences();
        return;
      }
      case 'finalize': {
        this.finalizedRanks[rank] = true;
        this.reply(conn, { id: req.id, ok: true });
        this.broadcast(encode({ event: 'finalized', rank }), rank);
        return;
      }
      case 'abort': {
        this.reply(conn, { id: req.id, ok: true });
        const code = req.code ?? 1;
        for (const cb of this.abortListeners) cb(rank, req.message, code);
        return;
      }
      case 'hang':
        this.reply(conn, { id: req.id, ok: true });
        for (const cb of this.hangListeners) cb(rank, req.report);
        return;
      case 'spawn': {
        const cb = this.spawnListener;
        if (cb === null) { this.reply(conn, { id: req.id, ok: false, error: 'this launcher does not start spawned ranks' }); return; }
        cb(rank, req).then((v) => this.reply(conn, { id: req.id, ok: true, value: v }), (e: unknown) => this.reply(conn, { id: req.id, ok: false, error: (e as Error)?.message ?? String(e) }));
        return;
      }
    }
  }

  /** Returns an error text, or undefined when stored (waiting gets are answered). */
  private put(key: string, value: string): string | undefined {
    const kb = Buffer.byteLength(key);
    // Measured as it travels (JSON-escaped), so every get reply carrying it fits in one line.
    const vb = Buffer.byteLength(JSON.stringify(value));
    if (kb > this.limits.maxKeyBytes) return `key is longer than ${this.limits.maxKeyBytes} bytes`;
    if (vb > this.limits.maxValueBytes) return `value for key '${key}' is longer than ${this.limits.maxValueBytes} bytes (JSON-encoded)`;
    const old = this.store.get(key);
    const freed = old === undefined ? 0 : kb + Buffer.byteLength(JSON.stringify(old));
    if (old === undefined && this.store.size >= this.limits.maxKeys) {
      return `the key-value service holds ${this.limits.maxKeys} keys already`;
    }
    if (this.storeBytes - freed + kb + vb > this.limits.maxTotalBytes) {
      return `the key-value service would exceed ${this.limits.maxTotalBytes} bytes`;
    }
    this.store.set(key, value);
    this.storeBytes += kb + vb - freed;
    const waiters = this.getWaiters.get(key);
    if (waiters) {
      this.getWaiters.delete(key);
      for (const w of waiters) {
        if (w.timer) clearTimeout(w.timer);
        w.conn.pendingGets--;
        this.reply(w.conn, { id: w.id, ok: true, value });
      }
    }
    return undefined;
  }

  /** A fence of generation g completes once every rank has called fence at least g times. */
  private releaseFences(): void {
    let min = Infinity;
    for (const c of this.fenceCount) min = Math.min(min, c);
    if (this.fenceWaiters.every((w) => w.generation > min)) return;
    const waiting: FenceWaiter[] = [];
    for (const w of this.fenceWaiters) {
      if (w.generation <= min) this.reply(w.conn, { id: w.id, ok: true });
      else waiting.push(w);
    }
    this.fenceWaiters = waiting;
  }
}
