// Free lists for hot-path objects (the tcp rail's write batches), so that
// steady-state traffic reuses memory instead of allocating per message.

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
