// Point-to-point on device arrays, at the communicator: the memory type is
// known at the call. Small messages are staged through pinned host memory and
// sent as host messages (eager); larger ones are device requests that the
// protocol moves by CUDA IPC, a direct copy or pinned chunks (proto/rndv/device.ts).
// A device receive stages what arrives from host memory and uploads it at the end.

import { Request, KIND_RECV, KIND_SEND, COMPLETE } from '../proto/request.js';
import type { World } from '../comm/world.js';
import { ANY_SOURCE } from '../proto/matching.js';
import { landedOnDevice } from '../proto/rndv/device.js';
import type { DeviceArray } from './memory.js';
import { cudaFailed } from './driver.js';
import { staging } from './staging.js';
import { cudaCounters } from './counters.js';
import { mpsRunning, mpsText } from './mps.js';
import type { AbortSignalLike } from '../core/signal.js';

let mpsChecked = false;

/**
 * The first device message of a job whose processes share this host: without
 * MPS their contexts take turns on the GPU, and each small copy pays for it
 * (./mps.ts). Said once per host (local rank 0), at warn level.
 */
function checkMps(world: World): void {
  mpsChecked = true;
  const l = world.ctx.launch;
  if (l.localRank !== 0 || l.localSize <= Math.max(1, l.threads) || mpsRunning()) return;
  world.ctx.log.warn(`GPU messages between the ${l.localSize} ranks on this host: ${mpsText()}`);
}

/** What the device datapaths need of a communicator (Communicator.deviceLink). */
export interface DeviceLink {
  readonly world: World;
  readonly rank: number;
  worldRankOf(rank: number): number;
  readonly p2pCtx: number;
  readonly collCtx: number;
}

const EMPTY = new Uint8Array(0);

/**
 * Device sends carry a view of this as their buf: it gives the protocol the
 * size and is never read or written (their data moves by device copies).
 * One zero-filled buffer, grown as needed: untouched pages cost no memory.
 */
let sizeOnly = new ArrayBuffer(1 << 20);
function placeholder(bytes: number): Uint8Array {
  if (bytes > sizeOnly.byteLength) sizeOnly = new ArrayBuffer(Math.max(bytes, sizeOnly.byteLength * 2));
  return new Uint8Array(sizeOnly, 0, bytes);
}

/** Send a device array to `dest` (a rank of the communicator) on context ctx. */
export function deviceIsend(link: DeviceLink, d: DeviceArray, dest: number, tag: number, ctx: number, signal: AbortSignalLike | null): Request {
  const drv = d.live('send');
  const bytes = d.byteLength;
  const world = link.world;
  if (!mpsChecked) checkMps(world);
  let r: Request;
  if (bytes <= world.ctx.params.cudaEager) {
    // Staged: the bytes go to pinned host memory now, and out as a host message.
    const bounce = bytes === 0 ? EMPTY : staging().acquire(bytes);
    if (bytes > 0) {
      try { drv.cudaDownload(bounce, d.ptr); } catch (e) { staging().release(bounce); throw cudaFailed('send (cuMemcpyDtoH)', e); }
    }
    cudaCounters.eagerStaged++;
    r = new Request(KIND_SEND, bounce);
    if (bytes > 0) r.onSettled(() => staging().release(bounce));
  } else {
    r = new Request(KIND_SEND, placeholder(bytes));
    r.dev = d;
    const a = d.allocation;
    a.users++;
    r.onSettled(() => { a.users--; });
  }
  r.ctx = ctx;
  r.source = link.rank;
  r.tag = tag;
  world.track(r);
  if (signal !== null) r.bindSignal(signal);
  world.ctx.p2p.isend(r, link.worldRankOf(dest));
  return r;
}

/**
 * Receive into a device array. The protocol's request stages what comes from
 * host memory; the returned one completes once the data is on the device.
 */
export function deviceIrecv(link: DeviceLink, d: DeviceArray, source: number, tag: number, ctx: number, signal: AbortSignalLike | null): Request {
  d.live('recv');
  const bytes = d.byteLength;
  const world = link.world;
  if (!mpsChecked) checkMps(world);
  const stage = bytes === 0 ? EMPTY : staging().acquire(bytes);
  const inner = new Request(KIND_RECV, stage);
  inner.dev = d;
  inner.ctx = ctx;
  inner.matchSrc = source;
  inner.matchTag = tag;
  const outer = new Request(KIND_RECV, EMPTY);
  outer.canceller = { cancel: () => inner.cancel() };
  const a = d.allocation;
  a.users++;
  inner.onSettled(() => {
    a.users--;
    if (inner.state !== COMPLETE) { release(stage); outer.fail(inner.error!); return; }
    const n = inner.bytes;
    if (n > 0 && !landedOnDevice.has(inner)) {
      // It came from host memory (a staged or a host message): upload what arrived.
      try {
        d.live('recv').cudaUpload(d.ptr, n === stage.length ? stage : stage.subarray(0, n));
        cudaCounters.uploadedRecvs++;
      } catch (e) {
        release(stage);
        outer.fail(cudaFailed('recv (cuMemcpyHtoD)', e));
        return;
      }
    }
    release(stage);
    outer.complete(inner.source, inner.tag, n);
  });
  world.track(outer);
  world.track(inner);
  world.ctx.p2p.irecv(inner, source === ANY_SOURCE ? -1 : link.worldRankOf(source));
  if (signal !== null) outer.bindSignal(signal);
  return outer;
}

function release(stage: Uint8Array): void {
  if (stage.length > 0) staging().release(stage);
}
