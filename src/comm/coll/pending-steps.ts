// What is left of the shared-memory collective that waits on a phase: each
// async step that awaited a wait (shared.ts's "...After" methods, the
// leader's release in shared-phase.ts, RAILCOMM_CHECK's agreement) leaves its
// rest here, in the order the rests run (an outer step awaits the inner one).
// The event loop runs each rest once its wait settles. A synchronous
// collective of the same communicator that finds them runs them itself, in
// order, with phases that block (SharedCollectives.beginSync): as an MPI
// blocking call progresses the nonblocking ones started before it, a
// barrierSync right after an iallreduce that nobody awaited yet completes that
// iallreduce first, on every rank, whether its copy there had to wait or not.
// Whoever runs a step first runs it; the other finds it done. Nothing is
// allocated here unless a phase had to wait.
//
// The order: a step is made after the steps inside it (an outer step awaits
// the inner one's promise), so steps made one after another run in the order
// made. But a rest that waits again (a split round's second phase) makes its
// new steps while the steps outside it still wait: those go first, before
// them (the rounds after it must not start before its copy-out).

type Rest = () => Promise<void> | null;

interface Step {
  readonly rest: Rest;
  /** Run (or abandoned) by someone: the event loop's resume or drain(). */
  done: boolean;
  /** What its rest threw when drain() or runFirst() ran it: the collective's promise rejects with it. */
  failed: unknown;
  /** What its rest returned when runFirst() ran it (it waits again): the collective's promise waits for it too. */
  result: Promise<void> | null;
}

export class PendingSteps {
  private readonly steps: Step[] = [];
  /** Told when the first step of an empty list is made (a synchronous wait elsewhere may then run them: runFirst). */
  private readonly onFirst: () => void;

  constructor(onFirst: () => void = () => {}) {
    this.onFirst = onFirst;
  }

  /** Where new steps go while a rest runs (at the front, in the order made); -1: at the end. */
  private at = -1;

  /** Steps waiting to run. */
  get length(): number {
    return this.steps.length;
  }

  /** Once w settles, run rest, unless a synchronous call ran it first; the promise settles as the step's collective would. */
  after(w: Promise<void>, rest: Rest): Promise<void> {
    const s: Step = { rest, done: false, failed: undefined, result: null };
    if (this.steps.length === 0) this.onFirst();
    if (this.at < 0) this.steps.push(s);
    else this.steps.splice(this.at++, 0, s);
    return this.resume(w, s);
  }

  private async resume(w: Promise<void>, s: Step): Promise<void> {
    try {
      await w;
    } catch (e) {
      // The collective failed below this step: nothing of it runs any more.
      if (!s.done) this.abandon();
      throw e;
    }
    if (s.done) {
      if (s.failed !== undefined) throw s.failed;
      if (s.result !== null) await s.result;
      return;
    }
    this.take(s);
    let r: Promise<void> | null;
    try { r = this.runRest(s); } catch (e) { this.abandon(); throw e; }
    if (r !== null) await r;
  }

  /** s's rest, with the steps it makes put before those left. */
  private runRest(s: Step): Promise<void> | null {
    const before = this.at;
    this.at = 0;
    try { return s.rest(); } finally { this.at = before; }
  }

  private take(s: Step): void {
    s.done = true;
    const i = this.steps.indexOf(s);
    if (i >= 0) this.steps.splice(i, 1);
  }

  /** Every step left belongs to the collective that failed: none runs (their waits reject). */
  private abandon(): void {
    for (const s of this.steps) s.done = true;
    this.steps.length = 0;
  }

  /**
   * Run the first step now, its phases as they are (a synchronous wait of
   * another communicator runs it aside, once the wait it awaited is over:
   * the caller checked). Its rest may wait again: its new steps go first.
   */
  runFirst(): void {
    const s = this.steps.shift();
    if (s === undefined) return;
    s.done = true;
    try {
      s.result = this.runRest(s);
    } catch (e) {
      s.failed = e;
      this.abandon();
    }
  }

  /**
   * Run every step left, in order, at the call (the caller made phases block
   * and finished the wait the first one awaits): each rest must finish
   * without a promise (check throws if one did not). A rest that throws
   * fails its collective's promise, and the steps after it are dropped.
   */
  drain(check: (w: Promise<void> | null) => void): void {
    while (this.steps.length > 0) {
      const s = this.steps.shift()!;
      s.done = true;
      try {
        check(this.runRest(s));
      } catch (e) {
        s.failed = e;
        this.abandon();
        return;
      }
    }
  }
}
