// Whose turn it is on a communicator's shared segment: its collectives run
// one at a time, in call order (later ones queue, and the event loop stays
// open while one runs); the first attaches the segment (over point-to-point,
// or at the call for a synchronous one); a collective that has to wait on a
// phase leaves its rests in PendingSteps, which a synchronous call of the
// communicator runs itself before its own (beginSync). What each collective
// does in the segment is shared.ts, which extends this class.

import { RailcommError, ErrorCode, finalized } from '../../core/errors.js';
import type { CollComm } from './engine.js';
import { Phases, controlBytes } from './shared-phase.js';
import type { SharedHost } from './shared-host-api.js';
import { PendingSteps } from './pending-steps.js';
import type { AsideWork } from '../../proto/progress.js';

const DONE = Promise.resolve();

/** A shared collective waiting for the one before it (later()). */
interface Queued {
  readonly c: CollComm;
  readonly f: () => Promise<void> | null;
  readonly resolve: () => void;
  readonly reject: (e: unknown) => void;
  /** f was called: by go(), or by a synchronous call that came first (finishAtCall, stepAside). */
  taken: boolean;
  /** What f threw when a synchronous call ran it. */
  failed: unknown;
  /** What f returned when a synchronous wait elsewhere ran it (stepAside): go() waits for it too. */
  result: Promise<void> | null;
}

export abstract class SharedTurns implements AsideWork {
  protected readonly host: SharedHost;
  protected readonly rank: number;
  protected readonly size: number;
  protected seg: Uint8Array | null = null;
  protected phases: Phases | null = null;
  protected dataOff = 0;
  /**
   * Shared-memory collectives run one at a time per communicator; later ones
   * wait in the queue. Holds not settled yet: more than one when stepAside()
   * started a queued collective while the one before it, over here, had
   * still to settle on the loop.
   */
  private holds = 0;
  private readonly queue: Queued[] = [];
  /** The queued collective go() runs now (its f may not have started: go() awaited the set-up). */
  private current: Queued | null = null;
  private broken: RailcommError | null = null;
  /** The rests of the running collective, once a phase had to wait: a synchronous call runs them (beginSync). */
  protected readonly steps = new PendingSteps(() => this.host.addAside(this));

  constructor(host: SharedHost, rank: number, size: number) {
    this.host = host;
    this.rank = rank;
    this.size = size;
  }

  /** The segment is attached: later calls need no point-to-point (the CollComm goes unused). */
  get attached(): boolean {
    return this.seg !== null;
  }

  /**
   * Run f after the previous shared collective of this communicator (phases
   * must not interleave), with the segment attached. f returns null when it
   * finished without waiting. The common case (idle, attached, peers already
   * there) then costs no promise of its own and holds nothing open: every hop
   * costs here (an 8-byte allreduce takes well under a microsecond).
   */
  run(c: CollComm, f: () => Promise<void> | null): Promise<void> {
    if (this.idle) {
      let w: Promise<void> | null;
      try { w = f(); } catch (e) { return Promise.reject(e); }
      return w === null ? DONE : this.hold(w);
    }
    return this.later(c, f);
  }

  /** Queue f (a method of its own: closures here would cost a context on every run()). */
  private later(c: CollComm, f: () => Promise<void> | null): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ c, f, resolve, reject, taken: false, failed: undefined, result: null });
      // A synchronous wait elsewhere may have to start it (stepAside).
      this.host.addAside(this);
      if (this.holds === 0) this.next();
    });
  }

  private async go(q: Queued): Promise<void> {
    if (this.broken !== null) throw this.broken;
    if (this.seg === null) {
      // A failed set-up leaves the ranks disagreeing on the segment: never try again.
      try { await this.setup(q.c); } catch (e) { this.broken = e as RailcommError; throw e; }
    }
    // Between the set-up's end and this line, a synchronous call may have run f (finishAtCall).
    if (q.taken) {
      if (q.failed !== undefined) throw q.failed;
      if (q.result !== null) await q.result;
      return;
    }
    q.taken = true;
    const w = q.f();
    if (w !== null) await w;
  }

  /** A collective of this communicator waits on a phase: its steps are left to run. */
  get pendingAside(): boolean {
    return this.steps.length > 0 || this.queue.length > 0 || (this.current !== null && !this.current.taken);
  }

  /**
   * A synchronous wait elsewhere (another communicator's collective, a
   * recvSync) runs this one's next step once the phase it waits on is over,
   * as MPI's blocking calls progress the nonblocking ones: the peers may
   * wait for this rank's next arrival before they can send or arrive where
   * that wait waits. Its phases stay as they are (they do not block): a step
   * that waits again leaves new steps for the next look. Not while a
   * synchronous call of this communicator runs (it runs them itself).
   */
  stepAside(): boolean {
    const ph = this.phases;
    // (Broken: what a failed wait left is not run; its collective rejects on the loop.)
    if (ph === null || ph.sync || this.broken !== null || !ph.waitOver()) return false;
    if (this.steps.length > 0) {
      this.steps.runFirst();
      return true;
    }
    // No step left and no wait pending: the collective before is over here (its promise
    // settles on the loop). That holds because every wait of a shared collective goes
    // through steps.after() (shared.ts, shared-phase.ts, checked.ts): a bare await there
    // would leave work this test cannot see. The next one starts now (its peers may wait
    // for it): the one go() runs if it has not called it yet (its set-up just ended),
    // else the queue's first.
    const c = this.current;
    if (c !== null && !c.taken) {
      c.taken = true;
      try { c.result = c.f(); } catch (e) { c.failed = e; }
      return true;
    }
    const q = this.queue.shift();
    if (q === undefined) return false;
    q.taken = true;
    let w: Promise<void> | null;
    try { w = q.f(); } catch (e) { q.reject(e); return true; }
    if (w === null) q.resolve();
    else this.hold(w).then(q.resolve, q.reject);
    return true;
  }

  /** Run rest once w (a phase's wait) settles, or at a synchronous call that comes first (pending-steps.ts). */
  after(w: Promise<void>, rest: () => Promise<void> | null): Promise<void> {
    return this.steps.after(w, rest);
  }

  /** Attached, nothing running or queued, not broken: a collective may start at once. */
  get idle(): boolean {
    return this.holds === 0 && this.seg !== null && this.broken === null && this.queue.length === 0;
  }

  /** Later collectives queue, and the event loop stays open, until w settles. */
  protected hold(w: Promise<void>): Promise<void> {
    this.holds++;
    this.host.keep(true);
    return w.then(this.doneOk, this.doneErr);
  }

  private readonly doneOk = (): void => { this.finish(); };
  private readonly doneErr = (e: unknown): never => { this.finish(); throw e; };

  private finish(): void {
    this.host.keep(false);
    if (--this.holds > 0) return;
    this.current = null;
    this.next();
  }

  private next(): void {
    const q = this.queue.shift();
    if (q === undefined) return;
    this.current = q;
    this.hold(this.go(q)).then(q.resolve, q.reject);
  }

  private async setup(c: CollComm): Promise<void> {
    this.onAttached(await this.host.attach(c, this.segmentBytes()));
  }

  private segmentBytes(): number {
    this.dataOff = controlBytes(this.size);
    return this.dataOff + 2 * this.size * this.host.slotBytes;
  }

  /** The segment is mapped: its phases. */
  private onAttached(seg: Uint8Array): void {
    this.seg = seg;
    const ctrl = new Int32Array(seg.buffer, seg.byteOffset, this.dataOff / 4);
    // A member that died mid-phase leaves this communicator's shared state incoherent: never use it again.
    this.phases = new Phases(this.host, ctrl, this.rank, this.size, (e) => { this.broken = e; }, this.size <= this.host.flatMax, this.steps);
    const phases = this.phases;
    this.host.atFinalize(() => {
      phases.leave();
      // Collectives of this rank still running: they fail (ERR_FINALIZED) rather than never settle.
      if (this.holds > 0 || this.queue.length > 0) {
        const e = finalized('a collective of this communicator still running at finalize() (await every collective before finalize())');
        this.broken ??= e;
        phases.stop(e);
      }
    });
  }

  // ---- synchronous calls ----------------------------------------------------

  /**
   * Begin a synchronous collective: the segment attached (now, at the call,
   * over blocking point-to-point on the call's tag, for the first one),
   * phases that block, and every collective of this communicator started
   * before it finished first, here (finishAtCall()). Every call of it is
   * paired with endSync().
   */
  beginSync(what: string, barrier: (() => void) | null): void {
    if (this.broken !== null) throw this.broken;
    if (this.holds > 0 || this.queue.length > 0) {
      // The first collective attaches the segment over point-to-point, which only the event loop completes.
      if (this.seg === null) {
        throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: this communicator's first collective, which sets up its shared memory, is still running, and it completes only on the event loop, which a synchronous call does not run; await it before calling ${what}`);
      }
      this.phases!.sync = true;
      try { this.finishAtCall(); } catch (e) { this.phases!.sync = false; throw e; }
      if (this.broken !== null) { this.phases!.sync = false; throw this.broken; }
      return;
    }
    if (this.seg === null) {
      if (barrier === null) throw new RailcommError(ErrorCode.PROTOCOL, `internal: ${what} found the segment unattached without a way to attach it`);
      // A failed set-up leaves the ranks disagreeing on the segment: never try again.
      try { this.onAttached(this.host.attachSync(barrier, this.rank, this.segmentBytes())); } catch (e) { this.broken = e as RailcommError; throw e; }
    }
    this.phases!.sync = true;
  }

  /**
   * The collectives started before a synchronous call and not finished (an
   * async one not awaited yet, or one whose copy here waits on a phase that
   * the others have passed): finish them at the call, in order, with phases
   * that block, as MPI's blocking calls progress nonblocking ones. Refusing
   * instead left ranks disagreeing (the others' copies had finished: they
   * went on into the synchronous call and paired it with this rank's next
   * collective). Their promises settle on the loop's next turn.
   */
  private finishAtCall(): void {
    // The running one first: not started yet (its set-up just ended), or its steps.
    const c = this.current;
    if (c !== null && !c.taken) {
      c.taken = true;
      try { SharedTurns.syncLeak(c.f()); } catch (e) { c.failed = e; }
    }
    this.phases!.finishWait();
    this.steps.drain(SharedTurns.syncLeak);
    while (this.queue.length > 0 && this.broken === null) {
      const q = this.queue.shift()!;
      q.taken = true;
      try { SharedTurns.syncLeak(q.f()); } catch (e) { q.reject(e); continue; }
      q.resolve();
    }
    for (const q of this.queue.splice(0)) q.reject(this.broken);
  }

  endSync(): void {
    if (this.phases !== null) this.phases.sync = false;
  }

  /** A shared collective that returned a promise in a synchronous call: a bug, said as one. */
  static syncLeak(w: Promise<void> | null): void {
    if (w !== null) {
      void w.catch(() => undefined);
      throw new RailcommError(ErrorCode.PROTOCOL, 'internal: a synchronous shared-memory collective waited on a promise');
    }
  }
}
