// Collectives through shared memory, for a communicator whose ranks all map
// one segment (worker threads of one process). Each rank has two slots
// (alternating by phase) and a flag on its own cache line: a phase is "write
// my slot, raise my flag to the phase number, wait until every flag has
// reached it", after which every rank reads what it needs straight from the
// others' slots. A rank reaching phase s+2 (which reuses phase s's slots) has
// seen every flag at s+1, so everyone finished reading phase s: two slots
// suffice and no second handshake is needed. Reductions combine the slots in
// rank order on every rank, so every rank gets the same bits.

import { RailcommError, ErrorCode } from '../../core/errors.js';
import { reduceInto, type Op, type ReduceArray } from './ops.js';
import type { CollComm } from './engine.js';

const LINE = 64;
const LINE_I32 = LINE / 4;
/** Int32 index of the doorbell word sleepers wait on. */
const BELL = 0;
/** How long one spin burst runs before the event loop gets a turn (ms). */
const BURST_MS = 0.05;
/** How long a sleeper waits before checking that its peers are alive (ms). */
const CHECK_MS = 100;

/** What the shared path needs from its communicator. */
export interface SharedHost {
  /** Spin this long (ms) before sleeping; 0 when ranks outnumber cores. */
  readonly spinMs: number;
  /** Bytes of one slot. */
  readonly slotBytes: number;
  /** Make (rank 0) or map (others) the segment; collective over c. */
  attach(c: CollComm, bytes: number): Promise<Uint8Array>;
  /** Throws ERR_PEER_FAILED if a member is known dead. */
  checkAlive(): void;
}

type Ctor = new (b: ArrayBufferLike, o: number, n: number) => ReduceArray;

export class SharedCollectives {
  private readonly host: SharedHost;
  private readonly rank: number;
  private readonly size: number;
  private seg: Uint8Array | null = null;
  private ctrl: Int32Array | null = null;
  private dataOff = 0;
  private seq = 0;
  /** Shared-memory collectives run one at a time per communicator (phases must not interleave). */
  private chain: Promise<unknown> = Promise.resolve();
  private broken: RailcommError | null = null;

  constructor(host: SharedHost, rank: number, size: number) {
    this.host = host;
    this.rank = rank;
    this.size = size;
  }

  get slotBytes(): number {
    return this.host.slotBytes;
  }

  /** Run f after the previous shared collective of this communicator, with the segment attached. */
  run(c: CollComm, f: () => Promise<void>): Promise<void> {
    const go = async (): Promise<void> => {
      if (this.broken !== null) throw this.broken;
      if (this.seg === null) await this.setup(c);
      await f();
    };
    const p = this.chain.then(go, go);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private async setup(c: CollComm): Promise<void> {
    this.dataOff = LINE * (this.size + 1);
    const bytes = this.dataOff + 2 * this.size * this.host.slotBytes;
    this.seg = await this.host.attach(c, bytes);
    this.ctrl = new Int32Array(this.seg.buffer, this.seg.byteOffset, this.dataOff / 4);
  }

  /** My slot for the next phase (write into it, then call arrive()). */
  private slot(r: number, phase: number): number {
    return this.seg!.byteOffset + this.dataOff + ((phase & 1) * this.size + r) * this.host.slotBytes;
  }

  private view(like: ReduceArray, r: number, phase: number, n: number): ReduceArray {
    return new (like.constructor as Ctor)(this.seg!.buffer, this.slot(r, phase), n);
  }

  private arrive(): number {
    const s = (this.seq = (this.seq + 1) | 0);
    const ctrl = this.ctrl!;
    Atomics.store(ctrl, (this.rank + 1) * LINE_I32, s);
    Atomics.add(ctrl, BELL, 1);
    Atomics.notify(ctrl, BELL);
    return s;
  }

  private allArrived(s: number): boolean {
    const ctrl = this.ctrl!;
    for (let r = 0; r < this.size; r++) if (((Atomics.load(ctrl, (r + 1) * LINE_I32) - s) | 0) < 0) return false;
    return true;
  }

  /** Wait until every rank arrived at phase s: spin a while (in bursts), then sleep on the doorbell. */
  private async waitAll(s: number): Promise<void> {
    if (this.allArrived(s)) return;
    const spinMs = this.host.spinMs;
    if (spinMs > 0) {
      const until = performance.now() + spinMs;
      for (;;) {
        const burst = performance.now() + BURST_MS;
        for (let i = 1; ; i++) {
          if (this.allArrived(s)) return;
          if ((i & 63) === 0 && performance.now() > burst) break;
        }
        if (performance.now() > until) break;
        await new Promise<void>((r) => setImmediate(r));
      }
    }
    const ctrl = this.ctrl!;
    for (;;) {
      const bell = Atomics.load(ctrl, BELL);
      if (this.allArrived(s)) return;
      const w = Atomics.waitAsync(ctrl, BELL, bell, CHECK_MS);
      if (w.async) await w.value;
      if (this.allArrived(s)) return;
      try {
        this.host.checkAlive();
      } catch (e) {
        // A member died mid-phase: this communicator's shared state is no longer coherent.
        this.broken = e as RailcommError;
        throw e;
      }
    }
  }

  /** One phase with nothing to exchange. */
  async barrier(): Promise<void> {
    await this.waitAll(this.arrive());
  }

  /** root's bytes to everyone, a slot at a time. */
  async bcast(bytes: Uint8Array, root: number): Promise<void> {
    const slot = this.host.slotBytes;
    for (let off = 0; off < bytes.byteLength || off === 0; off += slot) {
      const n = Math.min(slot, bytes.byteLength - off);
      const phase = this.seq + 1;
      if (this.rank === root) new Uint8Array(this.seg!.buffer, this.slot(root, phase), n).set(bytes.subarray(off, off + n));
      await this.waitAll(this.arrive());
      if (this.rank !== root) bytes.set(new Uint8Array(this.seg!.buffer, this.slot(root, phase), n), off);
      if (bytes.byteLength === 0) break;
    }
  }

  /** Reduce send into recv on every rank (allreduce) or on root only (reduce, root >= 0). */
  async reduce(send: ReduceArray, recv: ReduceArray | null, op: Op, root: number): Promise<void> {
    const per = Math.max(1, Math.floor(this.host.slotBytes / send.BYTES_PER_ELEMENT));
    const total = send.length;
    for (let at = 0; at < total || at === 0; at += per) {
      const n = Math.min(per, total - at);
      const phase = this.seq + 1;
      const mine = this.view(send, this.rank, phase, n);
      mine.set(send.subarray(at, at + n) as never);
      await this.waitAll(this.arrive());
      if (recv !== null && (root < 0 || root === this.rank) && n > 0) {
        const out = recv.subarray(at, at + n) as ReduceArray;
        out.set(this.view(send, 0, phase, n) as never);
        for (let r = 1; r < this.size; r++) reduceInto(op, out, this.view(send, r, phase, n), n);
      }
      if (total === 0) break;
    }
  }

  /** Every rank's send (equal lengths) into recv in rank order. */
  async allgather(send: ReduceArray, recv: ReduceArray): Promise<void> {
    const per = Math.max(1, Math.floor(this.host.slotBytes / send.BYTES_PER_ELEMENT));
    const len = send.length;
    for (let at = 0; at < len || at === 0; at += per) {
      const n = Math.min(per, len - at);
      const phase = this.seq + 1;
      this.view(send, this.rank, phase, n).set(send.subarray(at, at + n) as never);
      await this.waitAll(this.arrive());
      for (let r = 0; r < this.size; r++) recv.set(this.view(send, r, phase, n) as never, r * len + at);
      if (len === 0) break;
    }
  }
}

export function peerFailedError(rank: number, cause: RailcommError): RailcommError {
  return new RailcommError(ErrorCode.PEER_FAILED, `a shared-memory collective cannot finish: rank ${rank} failed`, { cause });
}
