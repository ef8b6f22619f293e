// An intrusive doubly linked list: queue entries carry their own links, so
// enqueue and remove-from-the-middle (match, cancel) allocate nothing.

export interface Linked {
  prev: Linked | null;
  next: Linked | null;
  list: List<Linked> | null;
}

export class List<T extends Linked> {
  head: T | null = null;
  tail: T | null = null;
  length = 0;

  push(x: T): void {
    x.prev = this.tail;
    x.next = null;
    x.list = this as unknown as List<Linked>;
    if (this.tail !== null) this.tail.next = x;
    else this.head = x;
    this.tail = x;
    this.length++;
  }

  remove(x: T): void {
    if (x.list !== (this as unknown as List<Linked>)) return;
    if (x.prev !== null) x.prev.next = x.next;
    else this.head = x.next as T | null;
    if (x.next !== null) x.next.prev = x.prev;
    else this.tail = x.prev as T | null;
    x.prev = x.next = null;
    x.list = null;
    this.length--;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let x = this.head; x !== null; x = x.next as T | null) yield x;
  }
}
