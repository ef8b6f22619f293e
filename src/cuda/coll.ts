// Collectives on device arrays. Every collective accepts them: the arguments
// are staged through host memory (inputs copied at the call, outputs copied
// back when the collective finished) and the host algorithm runs. A large
// allreduce whose send and receive are both device arrays runs the same ring
// (reduce-scatter + allgather, the same blocks and messages as the host ring,
// so ranks may mix host and device arrays) with the blocks moving as device
// messages and combined on the GPU by the element-wise kernel.

import { DeviceBuffer } from '../core/bytes.js';
import { RailcommError, ErrorCode } from '../core/errors.js';
import type { Params } from '../core/params.js';
import type { Logger } from '../core/log.js';
import { CollectivePlanner, checkRoot, type CollPlan } from '../comm/collectives.js';
import { checkOp, isCommutative, type ReduceArray } from '../comm/coll/ops.js';
import { displacements, mod, waitAllOrCancel, type CollComm } from '../comm/coll/engine.js';
import { signature } from '../comm/coll/check.js';
import { DeviceArray, allocDevice, type DeviceElements } from './memory.js';
import { currentDevice, driver, cudaFailed } from './driver.js';
import { gpuReducible, reduceOnDevice } from './kernels.js';
import { staging } from './staging.js';
import { deviceIrecv, deviceIsend, type DeviceLink } from './p2p.js';
import { cudaCounters } from './counters.js';

const IN = 1, OUT = 2, INOUT = 3;
type Arg = readonly [unknown, number];

const isDev = (v: unknown): v is DeviceArray => v instanceof DeviceBuffer;

/**
 * The collective planner of a communicator, aware of device arrays (host
 * arrays go straight to CollectivePlanner's algorithms, as before).
 */
export class DevicePlanner extends CollectivePlanner {
  private readonly link: () => DeviceLink;
  private readonly p: Params;
  private readonly me: number;
  private readonly n: number;

  constructor(rank: number, size: number, params: Params, log: Logger | null, link: () => DeviceLink) {
    super(rank, size, params, log);
    this.link = link;
    this.p = params;
    this.me = rank;
    this.n = size;
  }

  override bcast(buf: unknown, root: unknown, name = 'bcast'): CollPlan {
    if (!isDev(buf)) return super.bcast(buf, root, name);
    const rt = checkRoot(root, this.n, name);
    return this.staged(name, [[buf, this.me === rt ? IN : OUT]], ([b]) => super.bcast(b, root, name));
  }

  override reduce(send: unknown, recv: unknown, op: unknown, root: unknown): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.reduce(send, recv, op, root);
    return this.staged('reduce', [[send, IN], [recv, OUT]], ([s, r]) => super.reduce(s, r, op, root));
  }

  override allreduce(send: unknown, recv: unknown, op: unknown, what = 'allreduce'): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.allreduce(send, recv, op, what);
    const gpu = this.gpuAllreduce(send, recv, op, what);
    if (gpu !== null) return gpu;
    return this.staged(what, send === recv ? [[send, INOUT]] : [[send, IN], [recv, OUT]], (h) => super.allreduce(h[0], send === recv ? h[0] : h[1], op, what));
  }

  override gather(send: unknown, recv: unknown, root: unknown): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.gather(send, recv, root);
    return this.staged('gather', [[send, IN], [recv, OUT]], ([s, r]) => super.gather(s, r, root));
  }

  override gatherv(send: unknown, recv: unknown, counts: unknown, root: unknown, name = 'gatherv'): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.gatherv(send, recv, counts, root, name);
    return this.staged(name, [[send, IN], [recv, OUT]], ([s, r]) => super.gatherv(s, r, counts, root, name));
  }

  override scatter(send: unknown, recv: unknown, root: unknown): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.scatter(send, recv, root);
    return this.staged('scatter', [[send, IN], [recv, OUT]], ([s, r]) => super.scatter(s, r, root));
  }

  override scatterv(send: unknown, counts: unknown, recv: unknown, root: unknown): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.scatterv(send, counts, recv, root);
    // Elements of recv past counts[rank] are left as they are: it is copied in too.
    return this.staged('scatterv', [[send, IN], [recv, INOUT]], ([s, r]) => super.scatterv(s, counts, r, root));
  }

  override allgather(send: unknown, recv: unknown, name = 'allgather'): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.allgather(send, recv, name);
    return this.staged(name, [[send, IN], [recv, OUT]], ([s, r]) => super.allgather(s, r, name));
  }

  override allgatherv(send: unknown, recv: unknown, counts: unknown, name = 'allgatherv'): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.allgatherv(send, recv, counts, name);
    return this.staged(name, [[send, IN], [recv, INOUT]], ([s, r]) => super.allgatherv(s, r, counts, name));
  }

  override alltoall(send: unknown, recv: unknown, name = 'alltoall'): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.alltoall(send, recv, name);
    return this.staged(name, [[send, IN], [recv, OUT]], ([s, r]) => super.alltoall(s, r, name));
  }

  override alltoallv(send: unknown, sendCounts: unknown, recv: unknown, recvCounts: unknown, name = 'alltoallv'): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.alltoallv(send, sendCounts, recv, recvCounts, name);
    return this.staged(name, [[send, IN], [recv, INOUT]], ([s, r]) => super.alltoallv(s, sendCounts, r, recvCounts, name));
  }

  override reduceScatter(send: unknown, recv: unknown, counts: unknown, op: unknown): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.reduceScatter(send, recv, counts, op);
    return this.staged('reduceScatter', [[send, IN], [recv, INOUT]], ([s, r]) => super.reduceScatter(s, r, counts, op));
  }

  override scan(send: unknown, recv: unknown, op: unknown, exclusive: boolean): CollPlan {
    if (!isDev(send) && !isDev(recv)) return super.scan(send, recv, op, exclusive);
    // exscan leaves rank 0's recv as it is: copied in, so copying back keeps it.
    return this.staged(exclusive ? 'exscan' : 'scan', [[send, IN], [recv, exclusive ? INOUT : OUT]], ([s, r]) => super.scan(s, r, op, exclusive));
  }

  /**
   * Device arguments as host twins (page-locked where the pool allows):
   * inputs copied now, at the call; outputs copied back after the host
   * algorithm ran. Host arguments (and null) pass as they are.
   */
  private staged(name: string, args: readonly Arg[], build: (host: unknown[]) => CollPlan): CollPlan {
    const twins: unknown[] = [];
    const back: Array<[DeviceArray, ArrayBufferView]> = [];
    const held: Uint8Array[] = [];
    const seen = new Map<DeviceArray, ArrayBufferView>();
    const releaseAll = (): void => { for (const b of held) staging().release(b); held.length = 0; };
    let inner: CollPlan;
    try {
      for (const [v, role] of args) {
        if (!isDev(v)) { twins.push(v); continue; }
        const again = seen.get(v);
        if (again !== undefined) { twins.push(again); continue; }
        v.live(name);
        const bytes = v.byteLength;
        const st = bytes === 0 ? new Uint8Array(0) : staging().acquire(bytes);
        if (bytes > 0) held.push(st);
        const h = new (v.type as unknown as new (b: ArrayBufferLike, o: number, n: number) => ArrayBufferView)(st.buffer, st.byteOffset, v.length);
        if (role & IN) v.download(h);
        if (role & OUT) back.push([v, h]);
        seen.set(v, h);
        twins.push(h);
      }
      inner = build(twins);
    } catch (e) {
      releaseAll();
      throw e;
    }
    cudaCounters.stagedCollectives++;
    return {
      name: inner.name,
      algorithm: `${inner.algorithm}, device arrays staged through host memory`,
      ...(inner.sig !== undefined ? { sig: inner.sig } : {}),
      run: async (c) => {
        try {
          await inner.run(c);
          for (const [d, h] of back) d.upload(h);
        } finally {
          releaseAll();
        }
      },
    };
  }

  /**
   * The ring on the GPU, where the host planner would run the ring (so every
   * rank exchanges the same blocks whichever memory it passed) and the GPU
   * can combine this element type with this op; else null.
   */
  private gpuAllreduce(send: unknown, recv: unknown, op: unknown, what: string): CollPlan | null {
    if (!isDev(send) || !isDev(recv) || send.type !== recv.type || send.length !== recv.length) return null;
    const s = send, r = recv;
    s.live(what); r.live(what);
    const sample = new (s.type as unknown as new (n: number) => ReduceArray)(0);
    const o = checkOp(op, sample, what);
    const bytes = s.byteLength;
    const sharedPath = this.shared !== null && this.n > 1 && bytes <= this.p.collSharedMax;
    const ring = bytes >= this.p.collAllreduceRing && s.length >= this.n && this.n > 1 && isCommutative(o);
    // RAILCOMM_CUDA_REDUCE_MIN only chooses between the GPU and host staging of the same ring.
    if (sharedPath || !ring || bytes < this.p.cudaReduceMin || typeof o !== 'string' || !gpuReducible(s.type, o)) return null;
    const dev = currentDevice();
    if (s.device !== dev || r.device !== dev) return null;
    const plan: CollPlan = { name: what, algorithm: 'ring reduce-scatter + ring allgather on the GPU (device messages, element-wise kernel)', run: (c) => ringOnDevice(this.link(), c, s, r, o) };
    if (this.checking) plan.sig = signature(what, -1, o, sample, s.length, -1);
    return plan;
  }
}

let scratch: DeviceArray<Uint8Array> | null = null;

/** A device buffer of at least `bytes` for one received block (kept for the next call). */
function scratchOf(bytes: number): DeviceArray<Uint8Array> {
  if (scratch === null || scratch.freed || scratch.byteLength < bytes) {
    if (scratch !== null && !scratch.freed) scratch.free();
    scratch = allocDevice(Math.max(bytes, 1 << 20), Uint8Array);
  }
  return scratch;
}

/** The host ring's messages (coll/allreduce.ts, coll/allgather.ts), with device blocks and GPU combining. */
async function ringOnDevice(link: DeviceLink, c: CollComm, send: DeviceArray, recv: DeviceArray, op: string): Promise<void> {
  const p = c.size, rank = c.rank, n = send.length;
  const tag = c.tag;
  if (tag === undefined) throw new RailcommError(ErrorCode.PROTOCOL, 'internal: a device collective needs its tag (CollComm.tag)');
  const el = send.BYTES_PER_ELEMENT;
  const counts = Array.from({ length: p }, (_, i) => Math.floor(n / p) + (i < n % p ? 1 : 0));
  const disp = displacements(counts);
  const d = driver('allreduce');
  try {
    if (send.ptr !== recv.ptr) d.cudaCopy(recv.ptr, send.ptr, send.byteLength);
  } catch (e) { throw cudaFailed('allreduce (copying send into recv)', e); }
  const tmp = scratchOf(Math.max(...counts) * el);
  const block = (b: number): DeviceArray => recv.subarray(disp[b]!, disp[b]! + counts[b]!);
  const right = mod(rank + 1, p), left = mod(rank - 1, p);
  const ctx = link.collCtx;
  const tmpOf = (count: number): DeviceArray => new DeviceArray(tmp.allocation, tmp.byteOffset, count * el, Uint8Array, false);
  for (let s = 0; s < p - 1; s++) {
    const sb = mod(rank - s - 1, p), rb = mod(rank - s - 2, p);
    await waitAllOrCancel([deviceIrecv(link, tmpOf(counts[rb]!), left, tag, ctx, null), deviceIsend(link, block(sb), right, tag, ctx, null)]);
    reduceOnDevice(op, send.type, recv.ptr + BigInt(disp[rb]! * el), tmp.ptr, counts[rb]!);
  }
  for (let s = 0; s < p - 1; s++) {
    const sb = mod(rank - s, p), rb = mod(rank - s - 1, p);
    await waitAllOrCancel([deviceIrecv(link, block(rb), left, tag, ctx, null), deviceIsend(link, block(sb), right, tag, ctx, null)]);
  }
  cudaCounters.gpuReductions++;
}

export type { DeviceElements };
