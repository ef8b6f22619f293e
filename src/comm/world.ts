// State shared by every communicator of this rank: the protocol context, the
// wire-up store, the keep-alive, and what finalize() must wait for.

import { stopWatchingParent } from '../boot/launcher-tie.js';
import v8 from 'node:v8';
import { DeviceBuffer, deviceWhereHostOnly } from '../core/bytes.js';
import type { Context } from '../proto/context.js';
import type { KeyValueStore } from '../boot/kv.js';
import { finalized, RailcommError, ErrorCode } from '../core/errors.js';
import { formatStats } from '../core/stats-table.js';
import { KIND_SEND, type Request, type RequestWatcher } from '../proto/request.js';
import { reportWhenAsked, HangWatch, type HangReport, type HangWait } from '../proto/hang.js';
import type { InterCommunicator } from './inter.js';

export class World implements RequestWatcher {
  readonly ctx: Context;
  readonly kv: KeyValueStore | null;
  isFinalized = false;
  private sendsOutstanding = 0;
  private drained: Array<() => void> = [];
  /** In a spawned job: the inter-communicator to the job that spawned it (comm.parent). */
  parent: InterCommunicator | null = null;
  /** Next free communicator context id (0/1 are the world's). */
  nextContextId = 2;
  private contextChain: Promise<unknown> = Promise.resolve();

  /**
   * Context-id agreements (split, dup) run one at a time on this rank: two at
   * once would both read the same next free id.
   */
  serialContext<T>(f: () => Promise<T>): Promise<T> {
    const run = this.contextChain.then(f, f);
    this.contextChain = run.catch(() => undefined);
    return run;
  }
  private readonly hangWatch: HangWatch | null;

  constructor(ctx: Context, kv: KeyValueStore | null) {
    this.ctx = ctx;
    this.kv = kv;
    const t = ctx.params.hangTimeout;
    // Under railcomm run the launcher gathers every rank's report into one picture.
    const sink = kv?.hangReport !== undefined ? (r: HangReport): void => kv.hangReport!(JSON.stringify(r)) : null;
    const src = {
      outstanding: () => ctx.progress.waiting,
      settledCount: () => ctx.progress.completions,
      waits: () => this.hangWaits(),
    };
    this.hangWatch = t > 0 ? new HangWatch(src, t, ctx.log, ctx.worldRank, sink) : null;
    // --timeout: the launcher asks every rank, also with RAILCOMM_HANG_TIMEOUT=0.
    if (sink !== null) kv?.onReportAsked?.(() => { if (!this.isFinalized) reportWhenAsked(src, ctx.worldRank, t, sink); });
  }

  /**
   * What this rank waits for, for a hang report (the timer's, and a
   * synchronous call's): the rails' own state first (frames held out of
   * order, transmits in flight: a report keeps its first MAX_REPORTED_WAITS
   * waits, and a rank with hundreds of posted receives cut these off, a
   * stalled udp;ofi_rxd job, 2026-11-27), then its point-to-point and
   * one-sided waits, and last the messages that wait for a receive.
   */
  hangWaits(): HangWait[] {
    const ctx = this.ctx;
    const out: HangWait[] = [];
    for (const r of ctx.rails) { const s = r.describeState?.() ?? null; if (s !== null) out.push({ peer: null, what: s }); }
    ctx.lanes.silentWaits(out, performance.now());
    ctx.p2p.waits(out);
    ctx.rma.waits(out);
    ctx.p2p.unexpectedWaits(out);
    // Another job's rank (ports, spawn) is no rank of this job's picture: named job:rank instead.
    for (const w of out) {
      if (typeof w.peer === 'number' && w.peer >= ctx.launch.size) { w.what += ` [${ctx.nameOf(w.peer)}]`; w.peer = null; }
    }
    return out;
  }

  /** Called for every request this rank starts. */
  track(r: Request): void {
    r.watcher = this;
    this.ctx.progress.hold();
    if (r.kind === KIND_SEND) this.sendsOutstanding++;
  }

  requestSettled(r: Request): void {
    this.ctx.progress.release();
    if (r.kind === KIND_SEND && --this.sendsOutstanding === 0 && this.drained.length > 0) {
      const d = this.drained;
      this.drained = [];
      for (const f of d) f();
    }
  }

  check(what: string): void {
    if (this.isFinalized) throw finalized(what);
  }

  /** finalize(): complete outstanding sends, tell the launcher, close rails. Idempotent. */
  private finalizing: Promise<void> | null = null;
  finalize(): Promise<void> {
    this.finalizing ??= this.doFinalize();
    return this.finalizing;
  }

  private async doFinalize(): Promise<void> {
    this.isFinalized = true;
    // Tell the peers first: a send of ours they will never match fails there
    // and comes back refused, instead of both sides waiting for each other.
    this.ctx.beginFinalize();
    if (this.sendsOutstanding > 0) {
      this.ctx.progress.hold();
      await new Promise<void>((resolve) => this.drained.push(resolve));
      this.ctx.progress.release();
    }
    // Receives and probes still posted can never complete now.
    this.ctx.p2p.failAllWaiting(finalized('a receive or probe still pending at finalize()'));
    if (this.ctx.params.stats) {
      const st = this.ctx.stats();
      process.stderr.write(this.ctx.params.statsFormat === 'json' ? `railcomm stats ${JSON.stringify(st)}\n` : formatStats(st));
    }
    if (this.kv !== null) {
      await this.kv.finalize().catch(() => undefined);
    }
    this.hangWatch?.dispose();
    await this.ctx.close();
    this.kv?.close();
    // Done with the job: what the program does next may outlive the launcher.
    stopWatchingParent();
  }
}

export function serialize(value: unknown): Uint8Array {
  // v8 would serialise a device array as an empty object: refuse it, saying what to do.
  if (value instanceof DeviceBuffer) deviceWhereHostOnly('an object message (sendObject, bcastObject, ...)');
  return v8.serialize(value);
}

/** A value sent by sendObject or an object collective; `from` names the message in the error when its bytes are not one. */
export function deserialize(bytes: Uint8Array, from: () => string): unknown {
  try {
    return v8.deserialize(bytes);
  } catch (e) {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${from()} is not a value serialised by railcomm (${(e as Error).message}); a message sent with send() is received with recv() or recvBytes()`, { cause: e });
  }
}
