// Holds the event loop open while operations are outstanding. A pending
// promise alone does not keep Node alive, and railcomm's listeners are
// unref'd so that a finished rank exits; this ref'd timer bridges the gap.

export class KeepAlive {
  private count = 0;
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => { /* only holds the loop */ }, 1 << 30);
    this.timer.unref();
  }

  hold(): void {
    if (this.count++ === 0) this.timer.ref();
  }

  release(): void {
    if (--this.count === 0) this.timer.unref();
  }

  get outstanding(): number {
    return this.count;
  }

  dispose(): void {
    clearInterval(this.timer);
  }
}
