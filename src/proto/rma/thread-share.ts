// Hands registered SharedArrayBuffers between the worker-thread ranks of one
// process, so that one-sided operations between them touch the memory directly.
// A channel only hears what is posted after it exists: callers create it (open)
// before a collective step and offer their buffers after it.

import { BroadcastChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';

interface Offer {
  key: string;
  sab?: SharedArrayBuffer;
  off?: number;
  len?: number;
}

export class ThreadShare {
  private readonly chan: BroadcastChannel;
  private readonly got = new Map<string, Uint8Array>();
  private readonly waiters = new Map<string, (v: Uint8Array) => void>();

  constructor(jobId: number) {
    this.chan = new BroadcastChannel(`railcomm-rma-${jobId}-${process.pid}`);
    this.chan.onmessage = (e: unknown) => this.onOffer((e as { data: Offer }).data);
    this.chan.unref();
  }

  private onOffer(m: Offer): void {
    if (m.sab === undefined) { this.got.delete(m.key); return; }
    const bytes = new Uint8Array(m.sab, m.off ?? 0, m.len ?? 0);
    const w = this.waiters.get(m.key);
    if (w !== undefined) { this.waiters.delete(m.key); w(bytes); return; }
    this.got.set(m.key, bytes);
  }

  /** Offer shared bytes under a key every thread of the job agrees on (e.g. `${owner rank}/${region id}`). */
  offer(key: string, bytes: Uint8Array): void {
    if (!(bytes.buffer instanceof SharedArrayBuffer)) return;
    this.chan.postMessage({ key, sab: bytes.buffer, off: bytes.byteOffset, len: bytes.byteLength } satisfies Offer);
  }

  withdraw(key: string): void {
    this.chan.postMessage({ key } satisfies Offer);
  }

  /** The bytes offered under key, or null if they are not offered within timeoutMs. */
  take(key: string, timeoutMs: number): Promise<Uint8Array | null> {
    const have = this.got.get(key);
    if (have !== undefined) { this.got.delete(key); return Promise.resolve(have); }
    return new Promise((resolve) => {
      const t = setTimeout(() => { this.waiters.delete(key); resolve(null); }, timeoutMs);
      this.waiters.set(key, (v) => { clearTimeout(t); resolve(v); });
    });
  }

  /**
   * take() without the event loop (a synchronous collective attaching its
   * segment): reads the channel itself until the key is offered; null after timeoutMs.
   */
  takeSync(key: string, timeoutMs: number): Uint8Array | null {
    const deadline = Date.now() + timeoutMs;
    const nap = new Int32Array(new SharedArrayBuffer(4));
    for (;;) {
      const have = this.got.get(key);
      if (have !== undefined) { this.got.delete(key); return have; }
      // Node takes a BroadcastChannel here too (documented; @types/node says MessagePort only).
      const m = receiveMessageOnPort(this.chan as unknown as MessagePort);
      if (m !== undefined) { this.onOffer((m as { message: Offer }).message); continue; }
      if (Date.now() >= deadline) return null;
      // The offer is a postMessage away: a short nap instead of a hot loop.
      Atomics.wait(nap, 0, 0, 0.05);
    }
  }

  close(): void {
    this.chan.close();
  }
}

/**
 * The channel of this process's thread ranks, kept on `holder` (the RMA
 * engine): made by the first window or shared collective that needs it, and
 * closed when the context closes (finalize).
 */
export function sharedThreads(holder: { threadShare: ThreadShare | null }, jobId: number, atClose: (fn: () => void) => void): ThreadShare {
  if (holder.threadShare === null) {
    const share = new ThreadShare(jobId);
    holder.threadShare = share;
    atClose(() => share.close());
  }
  return holder.threadShare;
}
