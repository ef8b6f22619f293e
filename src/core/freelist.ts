// Free lists for hot-path objects and fixed-size buffers, so that steady-state
// traffic reuses memory instead of allocating per message.

export class FreeList<T> {
  private readonly items: T[] = [];
  private readonly create: () => T;
  private readonly max: number;
  created = 0;

  constructor(create: () => T, max = 1024) {
    this.create = create;
    this.max = max;
  }

  get(): T {
    const item = this.items.pop();
    if (item !== undefined) return item;
    this.created++;
    return this.create();
  }

  put(item: T): void {
    if (this.items.length < this.max) this.items.push(item);
  }

  get available(): number {
    return this.items.length;
  }
}

/** A pool of equally sized byte buffers (bounce buffers, write batches). */
export class BufferPool {
  private readonly list: FreeList<Buffer>;
  readonly bufferSize: number;

  constructor(bufferSize: number, max = 64) {
    this.bufferSize = bufferSize;
    this.list = new FreeList(() => Buffer.allocUnsafeSlow(bufferSize), max);
  }

  get(): Buffer { return this.list.get(); }
  put(buf: Buffer): void { if (buf.length === this.bufferSize) this.list.put(buf); }
  get created(): number { return this.list.created; }
}
