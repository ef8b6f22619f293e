// Wire format of the launcher's key-value service: newline-delimited JSON, one
// message per line, with a nonce/HMAC handshake before any request. Shared by
// KvServer and KvClient so both sides validate exactly the same shapes.

import { mac } from '../core/auth.js';

/** Longest line either side accepts once authenticated; longer closes the connection. */
export const MAX_LINE_BYTES = 1 << 20;
/** Longest line accepted before authentication: the handshake is tiny, so a stranger cannot make us buffer much. */
export const MAX_AUTH_LINE_BYTES = 1024;
/** Domain-separation label for the handshake MAC, so it cannot be replayed against a rail. */
export const KV_MAC_LABEL = 'railcomm-kv';

/** Server -> client, first line on every connection. */
export interface NonceMsg { nonce: string }
/** Client -> server, answer to the nonce. */
export interface AuthMsg { op: 'auth'; rank: number; mac: string }
/** Server -> client after a good AuthMsg. */
export interface AuthOkMsg { ok: true }
/** Server -> client after a bad AuthMsg, then it closes: retrying will not help. */
export interface RefusedMsg { refused: string }

export interface PutReq { id: number; op: 'put'; key: string; value: string }
export interface FenceReq { id: number; op: 'fence' }
/**
 * `timeoutMs` tells the server when the client stops waiting, so it can drop
 * the waiter instead of holding it until the key appears or the connection ends.
 */
export interface GetReq { id: number; op: 'get'; key: string; timeoutMs?: number }
export interface FinalizeReq { id: number; op: 'finalize' }
/** `code` is the exit status the launcher should report (1 when absent). */
export interface AbortReq { id: number; op: 'abort'; message: string; code?: number }
/** A rank's hang report (JSON of proto/hang.ts's HangReport), for the launcher to gather. */
export interface HangReq { id: number; op: 'hang'; report: string }
/**
 * Start `n` ranks of `command` as a new job that connects to `port` (comm.spawn).
 * Answered once that job has ended (value: its exit code), or with an error
 * when it cannot start; the spawning root accepts on the port meanwhile.
 */
export interface SpawnReq { id: number; op: 'spawn'; command: string[]; n: number; port: string; cwd: string }
export type KvRequest = PutReq | FenceReq | GetReq | FinalizeReq | AbortReq | HangReq | SpawnReq;
export type KvOp = KvRequest['op'];

/**
 * Server -> every other client, unasked: a rank's connection ended before it
 * finalized (its process or thread died). Ranks fail everything that waits on
 * it, also those that never talked to it.
 */
export interface LostEvent { event: 'lost'; rank: number; why: string }

/**
 * Server -> every client, unasked: a rank called comm.abort(code) and the
 * service (rank 0's, under launchers without one of their own) ends the job:
 * each rank exits with `code`.
 */
export interface AbortEvent { event: 'abort'; rank: number; code: number; message: string }

/**
 * Server -> every other client, unasked: a rank finalized. A rank still
 * waiting on it whose BYE never came (it never connected, or every lane to it
 * was lost) learns it can send no more (PeerFailures.peerFinalized).
 */
export interface FinalizedEvent { event: 'finalized'; rank: number }

/** Server -> every client, unasked: send your hang report now (the launcher stops the job at --timeout). */
export interface ReportEvent { event: 'report' }

export interface OkReply { id: number; ok: true; value?: string }
export interface ErrReply { id: number; ok: false; error: string }
export type KvReply = OkReply | ErrReply;

/** The handshake proof; the rank is bound in so one rank cannot pose as another with a replayed answer. */
export function authMac(jobKeyHex: string, nonceBytes: Uint8Array, rank: number): Buffer {
  return mac(jobKeyHex, KV_MAC_LABEL, nonceBytes, String(rank));
}

export function encode(msg: NonceMsg | AuthMsg | AuthOkMsg | RefusedMsg | KvRequest | KvReply | LostEvent | AbortEvent | FinalizedEvent | ReportEvent): string {
  return JSON.stringify(msg) + '\n';
}

type Obj = Record<string, unknown>;

function parseObject(line: string): Obj | undefined {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return undefined;
  }
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

const isId = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isHex = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length % 2 === 0 && /^[0-9a-f]+$/i.test(v);

export function parseNonce(line: string): Buffer | undefined {
  const o = parseObject(line);
  return o && isHex(o['nonce']) ? Buffer.from(o['nonce'], 'hex') : undefined;
}

export function parseAuth(line: string): { rank: number; mac: Buffer } | undefined {
  const o = parseObject(line);
  if (!o || o['op'] !== 'auth' || !isId(o['rank']) || !isHex(o['mac'])) return undefined;
  return { rank: o['rank'], mac: Buffer.from(o['mac'], 'hex') };
}

/** Why the service refused this rank for good, or undefined. */
export function parseRefused(line: string): string | undefined {
  const o = parseObject(line);
  return o !== undefined && typeof o['refused'] === 'string' ? o['refused'] : undefined;
}

export function parseAuthOk(line: string): boolean {
  const o = parseObject(line);
  return o !== undefined && o['ok'] === true;
}

/**
 * A request, or why it is bad. `id` is returned whenever it was readable so the
 * server can answer with an error instead of dropping the connection.
 */
export function parseRequest(line: string): { req: KvRequest } | { id?: number; error: string } {
  const o = parseObject(line);
  if (!o) return { error: 'not a JSON object' };
  const id = o['id'];
  if (!isId(id)) return { error: 'missing or bad "id"' };
  const bad = (error: string): { id: number; error: string } => ({ id, error });
  const str = (k: string): string | undefined => (typeof o[k] === 'string' ? (o[k] as string) : undefined);
  switch (o['op']) {
    case 'put': {
      const key = str('key');
      const value = str('value');
      if (key === undefined || value === undefined) return bad('put needs string "key" and "value"');
      return { req: { id, op: 'put', key, value } };
    }
    case 'get': {
      const key = str('key');
      if (key === undefined) return bad('get needs a string "key"');
      const t = o['timeoutMs'];
      if (t === undefined) return { req: { id, op: 'get', key } };
      if (typeof t !== 'number' || !(t >= 0)) return bad('get "timeoutMs" must be a non-negative number');
      return { req: { id, op: 'get', key, timeoutMs: t } };
    }
    case 'fence':
      return { req: { id, op: 'fence' } };
    case 'finalize':
      return { req: { id, op: 'finalize' } };
    case 'abort': {
      const message = str('message') ?? '';
      const code = o['code'];
      if (code !== undefined && !(typeof code === 'number' && Number.isInteger(code) && code >= 1 && code <= 255)) {
        return bad('abort "code" must be an integer in [1, 255]');
      }
      return { req: code === undefined ? { id, op: 'abort', message } : { id, op: 'abort', message, code } };
    }
    case 'hang': {
      const report = str('report');
      if (report === undefined) return bad('hang needs a string "report"');
      return { req: { id, op: 'hang', report } };
    }
    case 'spawn': {
      const command = o['command'];
      const n = o['n'];
      const port = str('port');
      const cwd = str('cwd');
      if (!Array.isArray(command) || command.length === 0 || !command.every((c) => typeof c === 'string')) return bad('spawn needs "command", a non-empty array of strings');
      if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) return bad('spawn "n" must be a positive integer');
      if (port === undefined || cwd === undefined) return bad('spawn needs string "port" and "cwd"');
      return { req: { id, op: 'spawn', command: command as string[], n, port, cwd } };
    }
    default:
      return bad(`unknown op ${JSON.stringify(o['op'])}`);
  }
}

/** An unasked event from the server, or undefined when the line is not one. */
export function parseEvent(line: string): LostEvent | AbortEvent | FinalizedEvent | ReportEvent | undefined {
  const o = parseObject(line);
  if (o && o['event'] === 'report') return { event: 'report' };
  if (o && o['event'] === 'finalized' && isId(o['rank'])) return { event: 'finalized', rank: o['rank'] };
  if (o && o['event'] === 'abort' && isId(o['rank'])) {
    const code = o['code'];
    if (typeof code !== 'number' || !Number.isInteger(code) || code < 1 || code > 255) return undefined;
    return { event: 'abort', rank: o['rank'], code, message: typeof o['message'] === 'string' ? o['message'] : 'abort' };
  }
  if (!o || o['event'] !== 'lost' || !isId(o['rank'])) return undefined;
  return { event: 'lost', rank: o['rank'], why: typeof o['why'] === 'string' ? o['why'] : 'its connection ended' };
}

export function parseReply(line: string): KvReply | undefined {
  const o = parseObject(line);
  if (!o || !isId(o['id'])) return undefined;
  if (o['ok'] === true) {
    const value = o['value'];
    if (value !== undefined && typeof value !== 'string') return undefined;
    return value === undefined ? { id: o['id'], ok: true } : { id: o['id'], ok: true, value };
  }
  if (o['ok'] === false) {
    return { id: o['id'], ok: false, error: typeof o['error'] === 'string' ? o['error'] : 'unspecified error' };
  }
  return undefined;
}

/**
 * Splits a byte stream into lines without ever holding more than `maxBytes`
 * of one line; splitting on bytes (not decoded text) keeps multi-byte UTF-8
 * characters that straddle chunks intact.
 */
export class LineSplitter {
  private parts: Buffer[] = [];
  private held = 0;
  private stopped = false;

  constructor(
    public maxBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onTooLong: () => void,
  ) {}

  /** Whether part of a line is held (its rest not arrived yet). */
  get holding(): boolean {
    return this.held > 0;
  }

  /** Returns false once the limit was exceeded; the caller should close the connection. */
  push(chunk: Buffer): boolean {
    let start = 0;
    while (!this.stopped) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      if (this.held + piece.length > this.maxBytes) return this.overflow();
      const line = this.held === 0 ? piece : Buffer.concat([...this.parts, piece]);
      this.parts = [];
      this.held = 0;
      start = nl + 1;
      this.onLine(line.toString('utf8'));
    }
    if (this.stopped) return false;
    const rest = chunk.subarray(start);
    if (rest.length > 0) {
      if (this.held + rest.length > this.maxBytes) return this.overflow();
      this.parts.push(rest);
      this.held += rest.length;
    }
    return true;
  }

  /** Drop everything from now on (the connection is being closed; later lines in a chunk must not run). */
  stop(): void {
    this.stopped = true;
    this.parts = [];
    this.held = 0;
  }

  private overflow(): false {
    this.stop();
    this.onTooLong();
    return false;
  }
}
