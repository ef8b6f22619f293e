// The progress engine. Node sleeps in epoll between events, and on this kind
// of machine every wake-up costs tens of microseconds, so an MPI that only
// sleeps is slow. While requests are outstanding, progress keeps the event
// loop polling without blocking (a setImmediate chain: libuv then polls with a
// zero timeout) and runs the pollers of polled rails, until RAILCOMM_SPIN_US
// pass with no activity; then it sleeps until the next event. Nothing spins
// when nothing is outstanding. It also holds the loop open while requests are
// outstanding (a pending promise alone does not keep Node alive).

export type Poller = () => void;

export class Progress {
  private outstanding = 0;
  private spinning = false;
  private lastActivity = 0;
  private readonly spinMs: number;
  private readonly pollers: Poller[] = [];
  private readonly holder: NodeJS.Timeout;
  private readonly tick = (): void => this.spin();
  /** Passes of the spin loop (observability, tests). */
  spins = 0;

  /** spinUs: how long to keep polling after the last activity (0: never spin). */
  constructor(spinUs: number) {
    this.spinMs = spinUs / 1000;
    this.holder = setInterval(() => { /* only holds the loop */ }, 1 << 30);
    this.holder.unref();
  }

  get active(): number {
    return this.outstanding;
  }

  /** A request started: hold the loop open and start polling. */
  hold(): void {
    if (this.outstanding++ === 0) this.holder.ref();
    this.activity();
  }

  /** A request settled. */
  release(): void {
    if (--this.outstanding === 0) this.holder.unref();
  }

  /** Something happened (bytes arrived, a request started): keep polling a while longer. */
  activity(): void {
    if (this.spinMs <= 0) return;
    this.lastActivity = performance.now();
    if (!this.spinning && this.outstanding > 0) {
      this.spinning = true;
      setImmediate(this.tick);
    }
  }

  /** Rails that must be polled (shared-memory rings) register here. */
  addPoller(p: Poller): void {
    this.pollers.push(p);
  }

  private spin(): void {
    if (this.outstanding === 0 || performance.now() - this.lastActivity > this.spinMs) {
      this.spinning = false;
      return;
    }
    this.spins++;
    for (let i = 0; i < this.pollers.length; i++) this.pollers[i]!();
    setImmediate(this.tick);
  }

  dispose(): void {
    clearInterval(this.holder);
    this.outstanding = 0;
  }
}
