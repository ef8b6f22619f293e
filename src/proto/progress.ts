// The progress engine. Node sleeps in epoll between events, and on this kind
// of machine every wake-up costs tens of microseconds, so an MPI that only
// sleeps is slow. While requests are outstanding, progress keeps the event
// loop polling without blocking (a setImmediate chain: libuv then polls with a
// zero timeout) and polls the shared-memory rails, spinning on them for a
// few microseconds a turn, until RAILCOMM_SPIN_US pass with no activity; then
// it arms the polled rails' doorbells and sleeps until the next event.
// Nothing spins when nothing is outstanding. It also holds the loop open while
// requests are outstanding (a pending promise alone does not keep Node alive).

/**
 * Work of the event loop that a synchronous wait runs aside: a shared-memory
 * collective of another communicator waiting on a phase (coll/shared-turns.ts).
 */
export interface AsideWork {
  /** Run what can run now without blocking; true if something did. */
  stepAside(): boolean;
  /** Something is left to run. */
  readonly pendingAside: boolean;
}

export interface Poller {
  /** Deliver what waits; true if anything happened. */
  poll(): boolean;
  /** Arm a wake-up; false (nothing armed) when data already waits. */
  sleep(wake: () => void): boolean;
  /**
   * This rank stops polling for a while without sleeping on the rail (it has
   * nothing outstanding, or waits on memory of its own): hand back ring space
   * consumed but not yet returned, so that a sender waiting for it is rung.
   */
  settle(): void;
}

/** How long one pass spins on polled rails before letting the event loop run (ms). */
const TURN_MS = 0.05;
/**
 * Passes in a row that may run as microtasks (right after the user's code
 * posts a request, without an event-loop turn) before one setImmediate lets
 * sockets and timers run.
 */
const MICRO_PASSES = 1024;
/** Polls per microtask pass while nothing arrives (bench/node-facts.mjs: a tbsm poll costs tens of ns). */
const MICRO_POLLS = 32;
/**
 * ...doubling on each pass that found nothing, up to this many (tens of
 * microseconds): every pass allocates a promise reaction, and a rank that
 * waited a millisecond queued hundreds of them (bench/wait-garbage.mjs).
 */
const MICRO_POLLS_MAX = 1024;
/** ...and at most this long (ms) between two event-loop turns. */
const MICRO_MS = 1;
/**
 * How long a blocking receive may poll at the call in all before it posts a
 * Request (ms), watching its source's ring alone. Progress would spin on the
 * rings meanwhile anyway; this only keeps the caller's own code from running,
 * so it stays well under the event loop's 1 ms between turns (MICRO_MS).
 */
const RECV_SPIN_MS = 0.02;
/** Polls of one brief wait in a synchronous call (a power of two; about 0.1-0.2 ms here). */
const SYNC_BRIEF_POLLS = 2048;
/**
 * A clock reading not taken yet. A double, as readings are: a field that
 * starts as a small integer (-1) and later holds a reading changes its
 * representation, which deoptimizes every function that reads it.
 */
const UNSET = -Infinity;
/** queueMicrotask costs 0.43 us a call here, a resolved promise's reaction 0.23 (bench/node-facts.mjs). */
const RESOLVED = Promise.resolve();

export class Progress {
  private outstanding = 0;
  private spinning = false;
  /**
   * Passes in a row that found nothing, and when that run began (UNSET: not
   * measured yet). The clock is read once per 64 idle passes, not per pass:
   * performance.now() costs more than a poll here.
   */
  private idlePasses = 0;
  private idleSince = UNSET;
  private readonly spinMs: number;
  private readonly pollers: Poller[] = [];
  private readonly holder: NodeJS.Timeout;
  private readonly tick = (): void => this.spin(false);
  private readonly microTick = (): void => this.spin(true);
  private microPasses = 0;
  private microSince = UNSET;
  /** Polls of the next idle microtask pass (MICRO_POLLS, doubling to MICRO_POLLS_MAX while nothing arrives). */
  private microPolls = MICRO_POLLS;
  private readonly wake = (): void => this.woken();
  /** Reasons to deliver what arrives even with nothing outstanding (passive-target windows). */
  private serving = 0;
  private idleArmed = false;

  /** spinUs: how long to keep polling after the last activity (0: never spin). */
  constructor(spinUs: number) {
    this.spinMs = spinUs / 1000;
    this.holder = setInterval(() => { /* only holds the loop */ }, 1 << 30);
    this.holder.unref();
  }

  get active(): number {
    return this.outstanding;
  }

  /** Held requests plus waits that hold the loop themselves (shared-memory collectives): the hang report's 'busy'. */
  get waiting(): number {
    return this.outstanding + this.kept;
  }

  /**
   * A request started: start polling, and make sure the loop stays open. While
   * progress spins, its own setImmediate/microtask chain keeps the loop open,
   * so the holder is ref'd only when progress goes to sleep (or cannot spin):
   * an eager send that completes at once never toggles it, which took two
   * calls into libuv per message.
   */
  hold(): void {
    this.outstanding++;
    if (this.spinMs <= 0 && this.pollers.length === 0) this.setRef(true);
    this.activity();
  }

  /** A request settled. */
  release(): void {
    this.completions++;
    if (--this.outstanding === 0 && this.kept === 0) this.setRef(false);
  }

  /**
   * Operations completed so far: every held request or one-sided operation
   * that settled, and what completed at the call without being held (fast
   * paths). The hang report watches it move. A double from the start, as
   * the traffic counters (core/counters.ts): a small-message job passes 2^31
   * in minutes, and a field that outgrows a small integer deoptimizes every
   * function that bumps it (the blocking send and receive among them).
   */
  completions = -0;

  /** An operation completed at the call, never held (blocking send/recv fast paths). */
  completedAtOnce(): void {
    this.completions++;
  }

  /**
   * Hold the loop open for a wait that polls its own memory and sleeps on its
   * own doorbell (shared-memory collectives): no progress passes for it.
   */
  keep(on: boolean): void {
    if (on) this.settleAll();
    this.kept += on ? 1 : -1;
    if (this.kept > 0) this.setRef(true);
    else if (this.outstanding === 0) this.setRef(false);
  }
  private kept = 0;
  private refd = false;

  private setRef(on: boolean): void {
    if (on === this.refd) return;
    this.refd = on;
    if (on) this.holder.ref();
    else this.holder.unref();
  }

  /** Something happened (bytes arrived, a request started): keep polling a while longer. */
  activity(): void {
    this.idlePasses = 0;
    this.idleSince = UNSET;
    if (!this.spinning && this.outstanding > 0 && (this.spinMs > 0 || this.pollers.length > 0)) {
      this.spinning = true;
      this.schedule();
    }
  }

  /**
   * While serving, a polled rail's doorbell stays armed with nothing
   * outstanding, and what arrives is delivered: one-sided operations and lock
   * requests to this rank's windows need it (a target that only waits on a
   * timer must still answer). Sleeping costs no CPU.
   */
  serve(on: boolean): void {
    this.serving += on ? 1 : -1;
    if (on && this.outstanding === 0 && !this.spinning) this.sleepIdle();
  }

  private woken(): void {
    if (this.outstanding > 0 || this.serving === 0) { this.activity(); return; }
    this.sleepIdle();
  }

  /** Nothing outstanding: deliver what waits, then arm the doorbells again. */
  private sleepIdle(): void {
    if (this.idleArmed) return;
    for (let i = 0; i < 64 && this.pollAll(); i++) { /* drain */ }
    if (this.outstanding > 0) { this.activity(); return; }
    for (const p of this.pollers) {
      if (!p.sleep(this.wake)) { this.idleArmed = true; setImmediate(this.idleRetry); return; }
    }
  }

  private readonly idleRetry = (): void => {
    this.idleArmed = false;
    if (this.outstanding === 0 && this.serving > 0) this.sleepIdle();
  };

  private settleAll(): void {
    for (let i = 0; i < this.pollers.length; i++) this.pollers[i]!.settle();
  }

  /** Rails that must be polled (shared-memory rings) register here. */
  addPoller(p: Poller): void {
    this.pollers.push(p);
  }

  /**
   * A blocking receive's short wait, before it becomes a Request: true when
   * it may poll at all (progress would spin: polled rails, not
   * oversubscribed, RAILCOMM_SPIN_US > 0). Its RECV_SPIN_MS count from the
   * first clock read in pollBriefly, not from here: a clock read costs 48 ns
   * here, and most waits end after a few polls.
   */
  beginBrief(): boolean {
    this.briefUntil = UNSET;
    this.briefPolls = 0;
    return (this.spinMs > 0 || this.syncing) && this.pollers.length > 0;
  }

  /**
   * A synchronous call (comm.recvSync and its kin) waits at the call until it
   * completes: its receive keeps the at-call slot even where progress would
   * not spin (oversubscribed), since nothing else can deliver meanwhile.
   */
  syncing = false;

  /** Whether progress spins (RAILCOMM_SPIN_US > 0, not oversubscribed): a synchronous wait spins as long before it blocks. */
  get spinBudgetMs(): number {
    return this.spinMs;
  }

  /** Polled rails registered (a synchronous wait needs some). */
  get polled(): boolean {
    return this.pollers.length > 0;
  }

  /**
   * One synchronous pass over every polled rail, outside the event loop (the
   * synchronous calls' wait): delivers what waits and re-drives blocked
   * senders, so outstanding async requests on these rails move too (their
   * continuations run once the caller yields). True if anything happened.
   */
  pollSync(): boolean {
    return this.pollAll();
  }

  /** What a synchronous wait runs aside, while it has some. */
  private readonly asides = new Set<AsideWork>();

  /** w has work a synchronous wait should run (dropped once it has none). */
  addAside(w: AsideWork): void {
    this.asides.add(w);
  }

  /**
   * A synchronous wait's pass over the work it runs aside: as MPI's blocking
   * calls progress nonblocking ones, a recvSync or another communicator's
   * synchronous collective moves a collective that waits on a phase (whose
   * peers may wait for this rank's next step before they send or arrive).
   * True if something moved. Cheap when there is none (the common case).
   */
  stepAsides(): boolean {
    if (this.asides.size === 0) return false;
    let any = false;
    for (const w of this.asides) {
      if (!w.pendingAside) { this.asides.delete(w); continue; }
      if (w.stepAside()) any = true;
    }
    return any;
  }

  /**
   * Poll one peer's ring synchronously (the one a blocking receive waits on)
   * until something arrives (true) or the wait begun by beginBrief has lasted
   * RECV_SPIN_MS (false). The other rings wait meanwhile: the wait is short,
   * and looking at every ring each time would lengthen each hop. The polls
   * are counted across the calls of one wait, and the clock read every 256 of
   * them: traffic that is not for the waiting receive (each arrival returns
   * true) cannot keep the wait going past its deadline.
   */
  pollBriefly(from: { poll(): boolean }): boolean {
    for (;;) {
      const any = from.poll();
      // Over (what this last poll delivered is delivered; the caller looks at its slot).
      if (this.briefOver()) return false;
      if (any) return true;
    }
  }

  /** One more poll of the brief wait begun by beginBrief: true once it has lasted RECV_SPIN_MS. */
  briefOver(): boolean {
    // A synchronous call waits on regardless (it only comes up for air between
    // brief waits): polls are counted, not timed. A clock read allocates on
    // Node 20 (performance.now() builds an hrtime array), and a rank waiting
    // for a slow peer read it every 64 polls: megabytes a second of garbage.
    if (this.syncing) return (++this.briefPolls & (SYNC_BRIEF_POLLS - 1)) === 0;
    if ((++this.briefPolls & 255) !== 0) return false;
    const now = performance.now();
    if (this.briefUntil < 0) { this.briefUntil = now + RECV_SPIN_MS; return false; }
    return now >= this.briefUntil;
  }

  /** When the current brief wait ends (performance.now() ms; UNSET: not measured yet), and its polls so far. */
  private briefUntil = UNSET;
  private briefPolls = 0;

  private pollAll(): boolean {
    let any = false;
    for (let i = 0; i < this.pollers.length; i++) if (this.pollers[i]!.poll()) any = true;
    return any;
  }

  /**
   * One pass. As a microtask it polls once and queues itself again behind
   * whatever else is queued (the user's continuations must not wait for us);
   * as a macrotask (nothing else queued) it may spin on the rings a moment.
   */
  private spin(micro: boolean): void {
    if (this.outstanding === 0) {
      this.spinning = false;
      this.microPasses = 0;
      this.microSince = UNSET;
      if (this.serving > 0) this.sleepIdle();
      else this.settleAll();
      return;
    }
    let any = false;
    if (this.pollers.length > 0) {
      any = this.pollAll();
      if (micro && !any && this.spinMs > 0) {
        // Nothing else is queued behind this pass either (the user's
        // continuations ran before it): poll a few more times before queueing
        // the next pass, since every pass allocates a promise reaction and a
        // waiting rank would otherwise feed the young generation a steady
        // stream of them (scavenges are the latency tail).
        const n = this.microPolls;
        for (let i = 0; i < n && !any; i++) any = this.pollAll();
        if (!any && n < MICRO_POLLS_MAX) this.microPolls = n * 2;
      }
      if (!micro && !any && this.spinMs > 0) {
        // A macrotask pass has nothing queued behind it: spin on the rings a
        // moment, looking at the clock every 1024 polls (a reading allocates on Node 20).
        const until = performance.now() + TURN_MS;
        for (let i = 1; !any; i++) {
          if ((i & 1023) === 0 && performance.now() >= until) break;
          any = this.pollAll();
        }
      }
    }
    if (any) {
      this.idlePasses = 0;
      this.idleSince = UNSET;
      this.microPolls = MICRO_POLLS;
    } else if (this.spinMs <= 0 || !micro || (++this.idlePasses & (this.microPolls > 64 ? 3 : 63)) === 0) {
      const now = performance.now();
      if (this.idleSince < 0) this.idleSince = now;
      if (this.spinMs <= 0 || now - this.idleSince > this.spinMs) {
        this.spinning = false;
        this.microPasses = 0;
        this.microSince = UNSET;
        this.sleep();
        return;
      }
    }
    this.schedule();
  }

  /**
   * Next pass: as a microtask while rings are polled (a message from another
   * thread is picked up without an event-loop turn), but every MICRO_PASSES
   * passes as a macrotask so that sockets and timers run too.
   */
  private schedule(): void {
    if (this.pollers.length > 0 && this.spinMs > 0 && this.microPasses < MICRO_PASSES) {
      // Bounded by time as well (the clock is first read at pass 64, so short
      // chains never read it; long passes, while nothing arrives, read it
      // every 4): busy rings must not keep timers and sockets waiting more
      // than about a millisecond.
      const n = ++this.microPasses;
      if ((n & (this.microPolls > 64 ? 3 : 63)) === 0) {
        const now = performance.now();
        if (this.microSince === UNSET) this.microSince = now;
        else if (now - this.microSince > MICRO_MS) this.microPasses = MICRO_PASSES;
      }
      if (this.microPasses < MICRO_PASSES) {
        void RESOLVED.then(this.microTick);
        return;
      }
    }
    this.microPasses = 0;
    this.microSince = UNSET;
    setImmediate(this.tick);
  }

  /** Stop spinning: polled rails ring us when data arrives. */
  private sleep(): void {
    // Requests wait with no pass queued: only the holder keeps the loop open now.
    if (this.outstanding > 0) this.setRef(true);
    for (const p of this.pollers) {
      if (!p.sleep(this.wake)) { this.activity(); return; }
    }
  }

  dispose(): void {
    clearInterval(this.holder);
    this.outstanding = 0;
    this.serving = 0;
  }
}
