// Inter-communicators (MPI dynamic processes): accept/connect through a port,
// the roots' exchange of both groups (64-bit ids and rail addresses), context
// ids agreed by both jobs, and the InterCommunicator itself: point-to-point
// addresses the other group, barrier, merge into one Communicator, disconnect.

import os from 'node:os';
import { RailcommError, ErrorCode, type ErrorCodeName } from '../core/errors.js';
import { jobOf } from '../core/ids.js';
import { Communicator, type RequestOptions } from './communicator.js';
import type { World } from './world.js';
import type { Request, Status } from '../proto/request.js';
import type { Message } from './message.js';
import { ANY_SOURCE, ANY_TAG } from '../proto/matching.js';
import { checkRank } from './checks.js';
import { PortListener, connectPort, pairKey, parsePort, type PortConn } from './ports.js';

/**
 * Inter-communicators take context ids from a range of their own, agreed by
 * both jobs (the highest next free id of either group): an accept may wait
 * for a long time, and must not hold up split and dup meanwhile.
 */
const INTER_CONTEXT_BASE = 0x80000000;
/** Ids per inter-communicator: user point-to-point, and railcomm's own traffic (barrier, merge, disconnect), each with a spare. */
const INTER_CONTEXT_IDS = 4;
const TAG_BARRIER = 1, TAG_MERGE = 2, TAG_DISCONNECT = 3, TAG_MARKER = 4;

/** What every member tells the other job about itself. */
interface Member {
  /** 64-bit endpoint id (job << 32 | rank), decimal. */
  id: string;
  host: string;
  /** Rail addresses by component (tcp, udp). */
  addrs: Record<string, string[]>;
}

/** Per rank: ports it opened, the inter-context counter, the inter flows (one at a time). */
interface InterState {
  ports: Map<string, PortListener>;
  nextInter: number;
  chain: Promise<unknown>;
}

const states = new WeakMap<World, InterState>();

/** @internal */
export function interState(world: World): InterState {
  let s = states.get(world);
  if (s === undefined) {
    s = { ports: new Map(), nextInter: INTER_CONTEXT_BASE, chain: Promise.resolve() };
    states.set(world, s);
    const st = s;
    world.ctx.atClose(() => { for (const p of st.ports.values()) p.close(); st.ports.clear(); });
  }
  return s;
}

// ---- ports -------------------------------------------------------------------

/** @internal comm.openPort(): a listener at this rank with a fresh secret; the string names its addresses, port and secret. */
export async function openPort(world: World): Promise<string> {
  world.check('openPort');
  const p = await PortListener.open(world.ctx.params.handshakeTimeout);
  interState(world).ports.set(p.name, p);
  return p.name;
}

/** @internal comm.closePort(port): accepts waiting on it fail; connects to it fail at once. */
export async function closePort(world: World, port: string): Promise<void> {
  parsePort(port);
  const s = interState(world);
  const p = s.ports.get(port);
  if (p === undefined) throw new RailcommError(ErrorCode.INVALID_ARG, 'closePort: this rank did not open that port (or closed it already); close a port on the rank whose openPort() returned it');
  s.ports.delete(port);
  p.close();
}

// ---- accept / connect --------------------------------------------------------

/** What the root found out, sent to every member (or the error that stops them all). */
interface Outcome {
  error?: string;
  errorCode?: string;
  remote?: Member[];
  ctx?: number;
  /** Pair keys by "lowJob-highJob". */
  keys?: Record<string, string>;
  /** This side's group comes first in merge when both pass the same `high` (the accepting side). */
  first?: boolean;
}

function fail(o: Outcome): never {
  throw new RailcommError((o.errorCode as ErrorCodeName | undefined) ?? ErrorCode.BOOT, o.error ?? 'connecting the jobs failed');
}

function outcomeOf(e: unknown): Outcome {
  return { error: (e as Error)?.message ?? String(e), errorCode: e instanceof RailcommError ? e.code : ErrorCode.BOOT };
}

/** @internal
 * accept (port at root) or connect (to port, from root): collective over comm.
 * Returns once every member of both groups knows the other group.
 */
export function interConnect(comm: Communicator, side: 'accept' | 'connect', port: unknown, root: unknown, giveUp: Promise<never> | null = null): Promise<InterCommunicator> {
  const what = side;
  comm.world.check(what);
  const rt = checkRank(root, comm.size, 'root', false);
  const world = comm.world;
  const st = interState(world);
  const run = async (): Promise<InterCommunicator> => {
    const local = await comm.dup();
    const ctx = world.ctx;
    // Every member: the rails another job reaches it on, then what it tells the other job.
    let mine: Member | { error: string; code: string };
    try {
      await ctx.openInterJobRails();
      mine = { id: String(ctx.self), host: os.hostname(), addrs: ctx.interJobAddresses() };
    } catch (e) {
      mine = { error: `rank ${comm.rank}: ${(e as Error).message}`, code: e instanceof RailcommError ? e.code : ErrorCode.NO_RAIL };
    }
    const all = await local.allgatherObject({ m: mine, next: st.nextInter });
    const bad = all.find((x) => 'error' in x.m);
    if (bad !== undefined) {
      const b = bad.m as { error: string; code: string };
      throw new RailcommError(b.code as ErrorCodeName, `${what}: ${b.error}`);
    }
    const members = all.map((x) => x.m as Member);
    const next = Math.max(...all.map((x) => x.next));
    let conn: PortConn | null = null;
    let outcome: Outcome = {};
    if (comm.rank === rt) {
      try {
        const r = side === 'accept' ? await acceptAtRoot(st, port, members, next, ctx.params.connectTimeout, giveUp) : await connectAtRoot(port, members, next, ctx.params.connectTimeout);
        conn = r.conn;
        outcome = r.outcome;
      } catch (e) {
        outcome = outcomeOf(e);
      }
    }
    outcome = await local.bcastObject(outcome, rt);
    if (outcome.error !== undefined) fail(outcome);
    // Install: keys for the other job's rails, aliases for its ranks, the contexts.
    const remote = outcome.remote!;
    let inter: InterCommunicator;
    try {
      const myJob = ctx.launch.jobId;
      for (const j of new Set(remote.map((m) => jobOf(BigInt(m.id))))) {
        const key = outcome.keys![`${Math.min(myJob, j)}-${Math.max(myJob, j)}`];
        if (key === undefined) throw new RailcommError(ErrorCode.BOOT, `${what}: no key for job ${j}`);
        ctx.addPairKey(j, key);
      }
      const me = members[comm.rank]!;
      const aliases = ctx.addAliases(remote.map((m) => ({ id: BigInt(m.id), addrs: reachableAddrs(me, m) })));
      st.nextInter = Math.max(st.nextInter, outcome.ctx! + INTER_CONTEXT_IDS);
      inter = new InterCommunicator(world, local, aliases, outcome.ctx!, outcome.first!, jobOf(BigInt(remote[0]!.id)));
    } catch (e) {
      outcome = outcomeOf(e);
      inter = null as unknown as InterCommunicator;
    }
    // Nobody talks to the other job before every member of both has installed it
    // (a rank that does not know the other job yet refuses its connections).
    const ok = await local.allgatherObject(outcome.error ?? null);
    let status: Outcome = ok.some((x) => x !== null) ? { error: `${what}: ${ok.find((x) => x !== null)!}` } : {};
    if (comm.rank === rt && conn !== null) {
      try {
        conn.send(status.error === undefined ? { t: 'ready' } : { t: 'error', message: status.error });
        const theirs = await conn.next(ctx.params.connectTimeout, 'waiting for the other job to install this one');
        if (status.error === undefined && theirs['t'] !== 'ready') status = { error: `${what}: the other job failed: ${String(theirs['message'] ?? 'no reason given')}` };
      } catch (e) {
        if (status.error === undefined) status = outcomeOf(e);
      } finally {
        conn.close();
      }
    }
    status = await local.bcastObject(status, rt);
    if (status.error !== undefined) {
      if (inter !== null) ctx.detachAliases(inter.remoteWorld, 'connecting the jobs failed');
      fail(status);
    }
    return inter;
  };
  const p = st.chain.then(run, run);
  st.chain = p.catch(() => undefined);
  return p;
}

/**
 * The other job's addresses this member should use: on this host (same host
 * name and a network address in common, or neither has one) the loopback
 * ones, else the others (a loopback address reaches this host only).
 */
function reachableAddrs(me: Member, other: Member): Record<string, string[]> {
  const ip = (a: string): string => a.replace(/^\[/, '').split(/[\]:]/)[0]!;
  const loop = (a: string): boolean => /^127\./.test(ip(a)) || ip(a) === '::1';
  const ips = (m: Member): Set<string> => new Set(Object.values(m.addrs).flat().filter((a) => !loop(a)).map(ip));
  const mine = ips(me), theirs = ips(other);
  const sameHost = me.host === other.host && ((mine.size === 0 && theirs.size === 0) || [...theirs].some((x) => mine.has(x)));
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(other.addrs)) {
    const keep = v.filter((a) => loop(a) === sameHost);
    out[k] = keep.length > 0 ? keep : v;
  }
  return out;
}

function checkMembers(v: unknown, who: string): Member[] {
  if (!Array.isArray(v) || v.length === 0) throw new RailcommError(ErrorCode.BOOT, `${who} sent no members`);
  for (const m of v as unknown[]) {
    const o = m as Partial<Member>;
    if (typeof o !== 'object' || o === null || typeof o.id !== 'string' || !/^\d+$/.test(o.id) || typeof o.host !== 'string' || typeof o.addrs !== 'object' || o.addrs === null) {
      throw new RailcommError(ErrorCode.BOOT, `${who} sent a malformed member`);
    }
  }
  return v as Member[];
}

/** Keys for every pair of jobs across the two groups, from the port's secret and both roots' nonces. */
function keysFor(conn: PortConn, a: Member[], b: Member[]): Record<string, string> {
  const keys: Record<string, string> = {};
  const ja = new Set(a.map((m) => jobOf(BigInt(m.id))));
  const jb = new Set(b.map((m) => jobOf(BigInt(m.id))));
  for (const x of ja) {
    for (const y of jb) {
      if (x === y) throw new RailcommError(ErrorCode.BOOT, `both groups hold ranks of job ${x}: a job cannot connect to itself (start the other group as its own job)`);
      keys[`${Math.min(x, y)}-${Math.max(x, y)}`] = pairKey(conn.secret, conn.serverNonce, conn.clientNonce, x, y);
    }
  }
  return keys;
}

async function acceptAtRoot(st: InterState, port: unknown, members: Member[], next: number, timeoutMs: number, giveUp: Promise<never> | null): Promise<{ conn: PortConn; outcome: Outcome }> {
  parsePort(port);
  const listener = st.ports.get(port as string);
  if (listener === undefined) throw new RailcommError(ErrorCode.INVALID_ARG, 'accept: the root did not open that port (or closed it); call openPort() on the root and pass its string');
  for (;;) {
    const conn = await (giveUp === null ? listener.accept() : Promise.race([listener.accept(), giveUp]));
    let hello: Record<string, unknown>;
    try {
      hello = await conn.next(timeoutMs, 'waiting for the connecting job to introduce itself');
    } catch {
      conn.close();
      continue; // a connection that proved the secret and then went: wait for the next
    }
    try {
      if (hello['t'] !== 'hello') throw new RailcommError(ErrorCode.BOOT, 'the connecting job did not introduce itself');
      const remote = checkMembers(hello['members'], 'the connecting job');
      const keys = keysFor(conn, members, remote);
      const ctx = Math.max(next, Number(hello['next']) || 0);
      conn.send({ t: 'welcome', members, next: ctx });
      return { conn, outcome: { remote, ctx, keys, first: true } };
    } catch (e) {
      conn.send({ t: 'error', message: (e as Error).message });
      conn.close();
      throw e;
    }
  }
}

async function connectAtRoot(port: unknown, members: Member[], next: number, timeoutMs: number): Promise<{ conn: PortConn; outcome: Outcome }> {
  const conn = await connectPort(port as string, timeoutMs);
  try {
    conn.send({ t: 'hello', members, next });
    const w = await conn.next(timeoutMs, 'waiting for the accepting job (its root must call accept on that port)');
    if (w['t'] === 'error') throw new RailcommError(ErrorCode.BOOT, `connect: the accepting job refused: ${String(w['message'])}`);
    if (w['t'] !== 'welcome') throw new RailcommError(ErrorCode.BOOT, 'connect: the accepting job did not answer as expected');
    const remote = checkMembers(w['members'], 'the accepting job');
    const keys = keysFor(conn, members, remote);
    return { conn, outcome: { remote, ctx: Number(w['next']), keys, first: false } };
  } catch (e) {
    conn.close();
    throw e;
  }
}

// ---- the inter-communicator ----------------------------------------------------

/**
 * Two groups, this one and another job's (MPI inter-communicator): rank and
 * size are this group's; point-to-point names ranks of the other group
 * (remoteSize of them), so a receive from ANY_SOURCE takes any of theirs.
 */
export class InterCommunicator {
  /** This rank in its own group. */
  readonly rank: number;
  /** Ranks in this group. */
  readonly size: number;
  /** Ranks in the other group. */
  readonly remoteSize: number;
  /** The other group's job id (the high 32 bits of its ranks' endpoint ids). */
  readonly remoteJob: number;
  /** @internal World indices (aliases) of the other group's ranks. */
  readonly remoteWorld: readonly number[];
  /** Point-to-point with the other group: its group is theirs, its rank ours. */
  private readonly peer: Communicator;
  /** railcomm's own messages between the groups (barrier, merge, disconnect). */
  private readonly ctl: Communicator;
  /** This group alone (a dup of the communicator that connected). */
  private readonly local: Communicator;
  private readonly first: boolean;
  private disconnected = false;

  /** @internal */
  constructor(world: World, local: Communicator, remote: readonly number[], ctxId: number, first: boolean, remoteJob: number) {
    this.local = local;
    this.rank = local.rank;
    this.size = local.size;
    this.remoteSize = remote.length;
    this.remoteWorld = remote;
    this.remoteJob = remoteJob;
    this.first = first;
    this.peer = new Communicator(world, remote, local.rank, ctxId, ctxId + 1);
    this.ctl = new Communicator(world, remote, local.rank, ctxId + 2, ctxId + 3);
    // Their collective contexts are never used: a remote failure must not
    // revoke them at the other job's ranks (they number this job's ranks their own way).
    const p2p = world.ctx.p2p;
    p2p.registerContext(ctxId + 1, remote, false);
    p2p.registerContext(ctxId + 3, remote, false);
  }

  private get world(): World { return this.local.world; }

  private live(what: string): void {
    this.world.check(what);
    if (this.disconnected) throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: this inter-communicator was disconnected`);
  }

  // ---- point-to-point with the other group ----------------------------------

  send(buf: ArrayBufferView, dest: number, tag = 0): Promise<Status> { this.live('send'); return this.peer.send(buf, dest, tag); }
  recv(buf: ArrayBufferView, source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<Status> { this.live('recv'); return this.peer.recv(buf, source, tag); }
  isend(buf: ArrayBufferView, dest: number, tag = 0, opts?: RequestOptions): Request { this.live('isend'); return this.peer.isend(buf, dest, tag, opts); }
  irecv(buf: ArrayBufferView, source: number = ANY_SOURCE, tag: number = ANY_TAG, opts?: RequestOptions): Request { this.live('irecv'); return this.peer.irecv(buf, source, tag, opts); }
  sendrecv(sbuf: ArrayBufferView, dest: number, sendTag: number, rbuf: ArrayBufferView, source: number = ANY_SOURCE, recvTag: number = ANY_TAG): Promise<Status> {
    this.live('sendrecv');
    return this.peer.sendrecv(sbuf, dest, sendTag, rbuf, source, recvTag);
  }
  probe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<Status> { this.live('probe'); return this.peer.probe(source, tag); }
  iprobe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Status | undefined { this.live('iprobe'); return this.peer.iprobe(source, tag); }
  mprobe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<Message> { this.live('mprobe'); return this.peer.mprobe(source, tag); }
  improbe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Message | undefined { this.live('improbe'); return this.peer.improbe(source, tag); }
  recvBytes(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<{ data: Uint8Array; source: number; tag: number }> { this.live('recvBytes'); return this.peer.recvBytes(source, tag); }
  sendObject(value: unknown, dest: number, tag = 0): Promise<Status> { this.live('sendObject'); return this.peer.sendObject(value, dest, tag); }
  recvObject(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<{ value: unknown; source: number; tag: number }> { this.live('recvObject'); return this.peer.recvObject(source, tag); }

  // ---- collectives over both groups -----------------------------------------

  /** Every rank of both groups waits until all have entered. */
  async barrier(): Promise<void> {
    this.live('barrier');
    await this.rootsMeet(TAG_BARRIER, null);
  }

  /**
   * Both groups: every rank enters, the roots trade a value, every rank
   * leaves with the other root's value.
   */
  private async rootsMeet<T>(tag: number, value: T): Promise<T> {
    await this.local.barrier();
    let theirs: T = value;
    if (this.rank === 0) {
      const [, got] = await Promise.all([this.ctl.sendObject(value, 0, tag), this.ctl.recvObject(0, tag)]);
      theirs = got.value as T;
    }
    return this.local.bcastObject(theirs, 0);
  }

  /**
   * One ordinary Communicator over both groups (MPI_Intercomm_merge): the
   * group that passed high = false comes first; when both pass the same, the
   * accepting group does. Every rank of a group must pass the same high.
   * Collective over both groups.
   */
  async merge(high = false): Promise<Communicator> {
    this.live('merge');
    if (typeof high !== 'boolean') throw new RailcommError(ErrorCode.INVALID_ARG, `merge(high): high must be true or false, got ${typeof high}`);
    const world = this.world;
    return world.serialContext(async () => {
      const mine = await this.local.allgatherObject({ high, next: world.nextContextId });
      if (mine.some((x) => x.high !== mine[0]!.high)) throw new RailcommError(ErrorCode.INVALID_ARG, 'merge(high): every rank of a group must pass the same high');
      const next = Math.max(...mine.map((x) => x.next));
      const theirs = await this.rootsMeet(TAG_MERGE, { high: mine[0]!.high, next });
      const ctx = Math.max(next, theirs.next);
      world.nextContextId = Math.max(world.nextContextId, ctx + 2);
      const localFirst = mine[0]!.high !== theirs.high ? !mine[0]!.high : this.first;
      const own = Array.from({ length: this.size }, (_, i) => this.local.worldRankOf(i));
      const group = localFirst ? [...own, ...this.remoteWorld] : [...this.remoteWorld, ...own];
      return new Communicator(world, group, localFirst ? this.rank : this.remoteSize + this.rank, ctx, ctx + 1);
    });
  }

  /**
   * Collective over both groups: every message either group sent the other
   * before it has arrived, and afterwards the other job's ranks no longer
   * concern this one (their failures included). Communicators merged from it
   * lose the other group too. Idempotent.
   */
  async disconnect(): Promise<void> {
    if (this.disconnected) return;
    this.world.check('disconnect');
    const ctx = this.world.ctx;
    // A marker to every rank of theirs this rank talked with; each follows, in
    // that peer's order, whatever was sent before it. Who sent markers to whom
    // goes through the roots, so each rank waits for exactly its own.
    const talked: number[] = [];
    for (let r = 0; r < this.remoteSize; r++) {
      const ep = ctx.existingEndpoint(this.remoteWorld[r]!);
      if (ep !== undefined && ep.failure === null) talked.push(r);
    }
    const empty = new Uint8Array(0);
    const sends = talked.map((r) => this.ctl.isend(empty, r, TAG_MARKER));
    const mine = await this.local.allgatherObject(talked);
    const theirs = await this.rootsMeet(TAG_DISCONNECT, mine);
    const from: number[] = [];
    theirs.forEach((list, r) => { if (list.includes(this.rank)) from.push(r); });
    this.disconnected = true;
    await Promise.allSettled([...sends.map((s) => s.wait()), ...from.map((r) => this.ctl.recv(empty, r, TAG_MARKER))]);
    ctx.detachAliases(this.remoteWorld, 'its job was disconnected (disconnect())');
  }

  /** Counters of this rank (those of the other job's ranks under `jobs` and `peers`, as job:rank). */
  stats(): Record<string, unknown> {
    return this.world.ctx.stats();
  }
}
