// Ports (MPI_Open_port): a small listener at the root that another job's root
// connects to, proving a fresh random secret (HMAC over both sides' nonces);
// after that, newline-delimited JSON between the two roots (inter.ts).

import net from 'node:net';
import os from 'node:os';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { RailcommError, ErrorCode } from '../core/errors.js';

/** What a port string starts with. */
export const PORT_SCHEME = 'railcomm://';
/** Longest line before the secret is proven (a stranger cannot make us buffer much). */
const MAX_AUTH_LINE = 1024;
/** Longest line afterwards: a group's members and their rail addresses. */
const MAX_LINE = 64 << 20;

export interface PortAddress {
  hosts: string[];
  port: number;
  secret: Buffer;
}

/** `railcomm://10.0.0.5,127.0.0.1:41234/<secret hex>`: every address the listener is reached at, its port, the secret. */
export function formatPort(a: PortAddress): string {
  return `${PORT_SCHEME}${a.hosts.map((h) => (h.includes(':') ? `[${h}]` : h)).join(',')}:${a.port}/${a.secret.toString('hex')}`;
}

export function parsePort(text: unknown): PortAddress {
  const bad = (why: string): RailcommError => new RailcommError(ErrorCode.INVALID_ARG, `port ${JSON.stringify(String(text)).slice(0, 200)} ${why}; pass the string openPort() returned, unchanged`);
  if (typeof text !== 'string') throw bad('is not a string');
  if (!text.startsWith(PORT_SCHEME)) throw bad(`does not start with ${PORT_SCHEME}`);
  const rest = text.slice(PORT_SCHEME.length);
  const slash = rest.lastIndexOf('/');
  if (slash < 0) throw bad('has no secret');
  const secretHex = rest.slice(slash + 1);
  if (!/^[0-9a-f]{32,}$/i.test(secretHex) || secretHex.length % 2 !== 0) throw bad('has no hex secret');
  const where = rest.slice(0, slash);
  const colon = where.lastIndexOf(':');
  const port = Number(where.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 1 || port > 65535) throw bad('has no port number');
  const hosts = where.slice(0, colon).split(',').map((h) => h.replace(/^\[|\]$/g, '')).filter((h) => h !== '');
  if (hosts.length === 0) throw bad('names no host');
  return { hosts, port, secret: Buffer.from(secretHex, 'hex') };
}

function hmac(secret: Buffer, ...parts: Array<string | Buffer>): Buffer {
  const h = createHmac('sha256', secret);
  for (const p of parts) h.update(p);
  return h.digest();
}

function same(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The key the ranks of two connected jobs prove to each other (tcp, udp): both roots derive it. */
export function pairKey(secret: Buffer, serverNonce: Buffer, clientNonce: Buffer, jobA: number, jobB: number): string {
  const [lo, hi] = jobA < jobB ? [jobA, jobB] : [jobB, jobA];
  return hmac(secret, 'railcomm-pair', serverNonce, clientNonce, String(lo), String(hi)).toString('hex');
}

/** This host's addresses for a port string: its network addresses first, loopback last. */
function hostAddresses(): string[] {
  const net4: string[] = [];
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) net4.push(a.address);
  }
  return [...net4, '127.0.0.1'];
}

/**
 * One connection between the roots of two jobs, secret proven both ways:
 * JSON objects, one a line, and a way to wait for the next one.
 */
export class PortConn {
  readonly socket: net.Socket;
  readonly serverNonce: Buffer;
  readonly clientNonce: Buffer;
  readonly secret: Buffer;
  private readonly lines: unknown[] = [];
  private waiter: { resolve: (v: unknown) => void; reject: (e: RailcommError) => void } | null = null;
  private error: RailcommError | null = null;

  constructor(socket: net.Socket, splitter: LineReader, secret: Buffer, serverNonce: Buffer, clientNonce: Buffer) {
    this.socket = socket;
    this.secret = secret;
    this.serverNonce = serverNonce;
    this.clientNonce = clientNonce;
    splitter.max = MAX_LINE;
    splitter.onTooLong = () => this.broken(`sent a line longer than ${MAX_LINE} bytes`);
    socket.on('close', () => this.broken('closed the connection'));
    splitter.listen((line) => {
      let v: unknown;
      try { v = JSON.parse(line); } catch { this.broken('sent a line that is not JSON'); return; }
      if (this.waiter !== null) { const w = this.waiter; this.waiter = null; w.resolve(v); } else this.lines.push(v);
    });
  }

  send(msg: unknown): void {
    if (!this.socket.destroyed) this.socket.write(JSON.stringify(msg) + '\n');
  }

  /** The next message from the other root; ERR_TIMEOUT after timeoutMs (0: wait as long as it takes). */
  next(timeoutMs: number, what: string): Promise<Record<string, unknown>> {
    if (this.lines.length > 0) return Promise.resolve(this.lines.shift() as Record<string, unknown>);
    if (this.error !== null) return Promise.reject(this.error);
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          this.waiter = null;
          reject(new RailcommError(ErrorCode.TIMEOUT, `the other job's root did not answer within ${timeoutMs} ms (RAILCOMM_CONNECT_TIMEOUT) while ${what}`));
        }, timeoutMs);
      }
      this.waiter = {
        resolve: (v) => { if (timer) clearTimeout(timer); resolve(v as Record<string, unknown>); },
        reject: (e) => { if (timer) clearTimeout(timer); reject(e); },
      };
    });
  }

  private broken(why: string): void {
    if (this.error !== null) return;
    this.error = new RailcommError(ErrorCode.BOOT, `the other job's root ${why} before the jobs were connected`);
    this.socket.destroy();
    if (this.waiter !== null) { const w = this.waiter; this.waiter = null; w.reject(this.error); }
  }

  close(): void {
    this.error ??= new RailcommError(ErrorCode.BOOT, 'the connection between the roots was closed');
    this.socket.end();
    this.socket.unref();
  }
}

/** Lines from a socket, never holding more than `max` bytes of one; held until someone listens. */
class LineReader {
  max = MAX_AUTH_LINE;
  onTooLong: () => void = () => undefined;
  private listener: ((line: string) => void) | null = null;
  private readonly held: string[] = [];
  private parts: Buffer[] = [];
  private bytes = 0;

  push(chunk: Buffer): void {
    let at = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, at);
      if (nl < 0) break;
      const piece = chunk.subarray(at, nl);
      if (this.bytes + piece.length > this.max) { this.onTooLong(); return; }
      const line = this.parts.length === 0 ? piece.toString('utf8') : Buffer.concat([...this.parts, piece]).toString('utf8');
      this.parts = [];
      this.bytes = 0;
      at = nl + 1;
      if (this.listener !== null) this.listener(line); else this.held.push(line);
    }
    const rest = chunk.subarray(at);
    if (rest.length === 0) return;
    if (this.bytes + rest.length > this.max) { this.onTooLong(); return; }
    this.parts.push(Buffer.from(rest));
    this.bytes += rest.length;
  }

  /** Lines go to fn from now on, those held first (null: hold them). */
  listen(fn: ((line: string) => void) | null): void {
    this.listener = fn;
    while (fn !== null && this.listener === fn && this.held.length > 0) fn(this.held.shift()!);
  }
}

/** Reads one line (a JSON object) during a handshake. */
function nextLine(reader: LineReader, socket: net.Socket, timeoutMs: number, what: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const done = (f: () => void): void => { clearTimeout(timer); socket.off('close', onClose); reader.listen(null); f(); };
    const onClose = (): void => done(() => reject(new RailcommError(ErrorCode.BOOT, `the connection closed while ${what}`)));
    const timer = setTimeout(() => done(() => reject(new RailcommError(ErrorCode.TIMEOUT, `no answer within ${timeoutMs} ms while ${what}`))), timeoutMs);
    socket.once('close', onClose);
    reader.onTooLong = () => done(() => reject(new RailcommError(ErrorCode.BOOT, `a line longer than ${reader.max} bytes while ${what}`)));
    reader.listen((line) => {
      let v: unknown;
      try { v = JSON.parse(line); } catch { done(() => reject(new RailcommError(ErrorCode.BOOT, `not JSON while ${what}`))); return; }
      done(() => resolve(typeof v === 'object' && v !== null ? v as Record<string, unknown> : {}));
    });
  });
}

/**
 * A port: listens on every address of this host, proves and checks the secret
 * for each connection, and hands proven connections to accept() in order.
 */
export class PortListener {
  readonly name: string;
  private readonly server: net.Server;
  private readonly secret: Buffer;
  private readonly proven: PortConn[] = [];
  private readonly waiting: Array<{ resolve: (c: PortConn) => void; reject: (e: RailcommError) => void }> = [];
  private closed = false;
  /** Connections that did not prove the secret (wrong secret, garbage, too slow). */
  refused = 0;

  private constructor(server: net.Server, secret: Buffer, name: string, private readonly handshakeMs: number) {
    this.server = server;
    this.secret = secret;
    this.name = name;
  }

  static async open(handshakeMs: number): Promise<PortListener> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e) => reject(new RailcommError(ErrorCode.BOOT, `openPort: cannot listen: ${e.message}`, { cause: e })));
      server.listen(0, '0.0.0.0', () => resolve());
    });
    const port = (server.address() as net.AddressInfo).port;
    const secret = randomBytes(32);
    const p = new PortListener(server, secret, formatPort({ hosts: hostAddresses(), port, secret }), handshakeMs);
    server.on('connection', (s) => p.onConnection(s));
    // Nothing waits on a port until accept(): it must not keep the program alive.
    server.unref();
    return p;
  }

  private onConnection(s: net.Socket): void {
    if (this.closed) { s.destroy(); return; }
    s.setNoDelay(true);
    const reader = new LineReader();
    s.on('data', (c: Buffer) => reader.push(c));
    s.on('error', () => { /* close follows */ });
    const sn = randomBytes(16);
    s.write(JSON.stringify({ port: 1, nonce: sn.toString('hex') }) + '\n');
    nextLine(reader, s, this.handshakeMs, 'proving the port secret').then((m) => {
      const cn = typeof m['nonce'] === 'string' ? Buffer.from(m['nonce'], 'hex') : Buffer.alloc(0);
      const proof = typeof m['mac'] === 'string' ? Buffer.from(m['mac'], 'hex') : Buffer.alloc(0);
      if (cn.length !== 16 || !same(proof, hmac(this.secret, 'railcomm-port-C', sn, cn))) {
        this.refused++;
        s.end(JSON.stringify({ refused: 'wrong port secret' }) + '\n');
        s.destroySoon();
        return;
      }
      s.write(JSON.stringify({ mac: hmac(this.secret, 'railcomm-port-S', cn, sn).toString('hex') }) + '\n');
      const conn = new PortConn(s, reader, this.secret, sn, cn);
      const w = this.waiting.shift();
      if (w !== undefined) { this.refresh(); w.resolve(conn); return; }
      this.proven.push(conn);
      s.once('close', () => { const i = this.proven.indexOf(conn); if (i >= 0) this.proven.splice(i, 1); });
    }, () => { this.refused++; s.destroy(); });
  }

  /** The next connection that proved the secret (waits as long as it takes, like MPI_Comm_accept). */
  accept(): Promise<PortConn> {
    if (this.closed) return Promise.reject(closedPort(this.name));
    const c = this.proven.shift();
    if (c !== undefined) return Promise.resolve(c);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.refresh();
    });
  }

  /** Keep the program alive only while an accept waits. */
  private refresh(): void {
    if (this.waiting.length > 0) this.server.ref(); else this.server.unref();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.server.close();
    for (const c of this.proven.splice(0)) c.socket.destroy();
    for (const w of this.waiting.splice(0)) w.reject(closedPort(this.name));
  }
}

function closedPort(name: string): RailcommError {
  return new RailcommError(ErrorCode.BOOT, `port ${name.replace(/\/[0-9a-f]+$/i, '/...')} was closed (closePort) while accept() waited on it`);
}

/**
 * Connect to a port and prove its secret; every address it names is tried at
 * once and the first that answers wins. ERR_BOOT when nothing listens at any
 * (the port was closed or its job ended) or the secret is wrong; ERR_TIMEOUT
 * when no address answers within timeoutMs.
 */
export function connectPort(port: string, timeoutMs: number): Promise<PortConn> {
  const a = parsePort(port);
  const shown = port.replace(/\/[0-9a-f]+$/i, '/...');
  return new Promise((resolve, reject) => {
    let settled = false;
    let left = a.hosts.length;
    const sockets: net.Socket[] = [];
    const errors: string[] = [];
    const finish = (err: RailcommError | null, conn?: PortConn): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const s of sockets) if (conn === undefined || s !== conn.socket) s.destroy();
      if (err !== null) reject(err); else resolve(conn!);
    };
    const timer = setTimeout(() => finish(new RailcommError(ErrorCode.TIMEOUT,
      `connect: no answer from port ${shown} within ${timeoutMs} ms (RAILCOMM_CONNECT_TIMEOUT)${errors.length > 0 ? ` (${errors.join('; ')})` : ''}: check that the accepting job runs and that this host reaches it`)), timeoutMs);
    const gone = (host: string, why: string, refused: boolean): void => {
      errors.push(`${host}: ${why}`);
      if (refused) { finish(new RailcommError(ErrorCode.BOOT, `connect: port ${shown} refused this job: ${why}; pass the port string the accepting job's openPort() returned, unchanged`)); return; }
      if (--left === 0) finish(new RailcommError(ErrorCode.BOOT, `connect: nothing accepts at port ${shown} (${errors.join('; ')}): the port was closed (closePort) or its job ended`));
    };
    for (const host of a.hosts) {
      const s = net.connect({ host, port: a.port, noDelay: true });
      sockets.push(s);
      const reader = new LineReader();
      let done = false;
      s.on('data', (c: Buffer) => reader.push(c));
      s.on('error', (e: NodeJS.ErrnoException) => { if (!done) { done = true; gone(host, e.code ?? e.message, false); } });
      s.once('connect', () => {
        nextLine(reader, s, timeoutMs, 'waiting for the port to introduce itself').then((hello) => {
          const sn = typeof hello['nonce'] === 'string' ? Buffer.from(hello['nonce'], 'hex') : Buffer.alloc(0);
          if (hello['port'] !== 1 || sn.length !== 16) throw new RailcommError(ErrorCode.BOOT, 'it is not a railcomm port');
          const cn = randomBytes(16);
          s.write(JSON.stringify({ nonce: cn.toString('hex'), mac: hmac(a.secret, 'railcomm-port-C', sn, cn).toString('hex') }) + '\n');
          return nextLine(reader, s, timeoutMs, 'proving the port secret').then((ok) => {
            if (typeof ok['refused'] === 'string') { done = true; gone(host, ok['refused'], true); return; }
            const proof = typeof ok['mac'] === 'string' ? Buffer.from(ok['mac'], 'hex') : Buffer.alloc(0);
            if (!same(proof, hmac(a.secret, 'railcomm-port-S', cn, sn))) throw new RailcommError(ErrorCode.BOOT, 'the listener does not know the port secret');
            done = true;
            finish(null, new PortConn(s, reader, a.secret, sn, cn));
          });
        }).catch((e: unknown) => {
          if (done) return;
          done = true;
          s.destroy();
          gone(host, (e as Error).message, false);
        });
      });
    }
  });
}
