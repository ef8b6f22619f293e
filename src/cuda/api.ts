// The `cuda` namespace of railcomm's public API (DESIGN 4b): whether GPU
// memory can be used here and why not, typed device arrays (alloc, wrap), the
// device this thread works on, and the component's report for `railcomm info`.

import { mpsText } from './mps.js';
import { cudaAvailable, cudaDevices, cudaVersion, cudaWhy, currentDevice, cudaFailed, driver, driverFile, selectDevice, versionText, type CudaDeviceInfo } from './driver.js';
import { allocDevice, liveAllocations, wrapDevice, type DeviceArray, type DeviceElements, type ElementType } from './memory.js';
import { placeText } from '../proto/cuda-ipc.js';
import { staging } from './staging.js';
import { cudaCounters } from './counters.js';
import { kernelsWhy } from './kernels.js';

/**
 * The `cuda` namespace's shape, written out: declarations inferred from the
 * object would name `Uint8Array<ArrayBufferLike>`, which TypeScript before 5.7
 * cannot read (the public types must compile there too).
 */
export interface Cuda {
  /** Whether GPU memory can be used here (the driver loaded and sees a device). Loads the driver on first use. */
  readonly available: boolean;
  /** Why GPU memory can or cannot be used here (the library, CUDA version and devices, or what is missing). */
  readonly why: string;
  /** The devices this process sees. */
  readonly devices: readonly CudaDeviceInfo[];
  /** The device this thread allocates on and copies with (RAILCOMM_CUDA_DEVICE, or 0, unless setDevice chose). */
  readonly device: number;
  /** Work on device `ordinal` from now on (this thread: each thread rank chooses its own). */
  setDevice(ordinal: number): void;
  /** `length` elements of `type` (default Uint8Array) in GPU memory, on this thread's device; contents undefined. */
  alloc<T extends DeviceElements = Uint8Array>(length: number, type?: ElementType<T>): DeviceArray<T>;
  /**
   * `length` elements of `type` at device address `ptr` (bigint): memory another
   * library allocated. Checked with cuPointerGetAttribute; free() forgets it
   * (peers that opened it close it) and never frees the memory itself.
   */
  wrap<T extends DeviceElements = Uint8Array>(ptr: bigint, length: number, type?: ElementType<T>): DeviceArray<T>;
  /** Wait for every piece of GPU work this thread's context has queued (cuCtxSynchronize). */
  synchronize(): void;
  /** Counters of this rank's device datapaths and staging memory. */
  stats(): Record<string, unknown>;
}

export const cuda: Cuda = {
  /** Whether GPU memory can be used here (the driver loaded and sees a device). Loads the driver on first use. */
  get available(): boolean {
    return cudaAvailable();
  },

  /** Why GPU memory can or cannot be used here (the library, CUDA version and devices, or what is missing). */
  get why(): string {
    return cudaWhy();
  },

  /** The devices this process sees. */
  get devices(): readonly CudaDeviceInfo[] {
    return cudaDevices();
  },

  /** The device this thread allocates on and copies with (RAILCOMM_CUDA_DEVICE, or 0, unless setDevice chose). */
  get device(): number {
    return currentDevice();
  },

  /** Work on device `ordinal` from now on (this thread: each thread rank chooses its own). */
  setDevice(ordinal: number): void {
    selectDevice(ordinal);
  },

  /** `length` elements of `type` (default Uint8Array) in GPU memory, on this thread's device; contents undefined. */
  alloc<T extends DeviceElements = Uint8Array>(length: number, type?: ElementType<T>): DeviceArray<T> {
    return allocDevice(length, (type ?? Uint8Array) as ElementType<T>);
  },

  /**
   * `length` elements of `type` at device address `ptr` (bigint): memory another
   * library allocated. Checked with cuPointerGetAttribute; free() forgets it
   * (peers that opened it close it) and never frees the memory itself.
   */
  wrap<T extends DeviceElements = Uint8Array>(ptr: bigint, length: number, type?: ElementType<T>): DeviceArray<T> {
    return wrapDevice(ptr, length, (type ?? Uint8Array) as ElementType<T>);
  },

  /** Wait for every piece of GPU work this thread's context has queued (cuCtxSynchronize). */
  synchronize(): void {
    try { driver('cuda.synchronize').cudaSynchronize(); } catch (e) { throw cudaFailed('cuda.synchronize', e); }
  },

  /** Counters of this rank's device datapaths and staging memory. */
  stats(): Record<string, unknown> {
    return { ...cudaCounters, allocations: liveAllocations(), staging: { ...staging().counters } };
  },
};

/** The CUDA component for `railcomm info`: available or why not, the devices, and whether IPC can join them. */
export function cudaReport(): { available: boolean; lines: string[] } {
  if (!cudaAvailable()) return { available: false, lines: [`unavailable (${cudaWhy()})`] };
  const devs = cudaDevices();
  const lines = [`available: ${driverFile()}, CUDA ${versionText(cudaVersion())}, ${devs.length} device${devs.length === 1 ? '' : 's'}`];
  devs.forEach((d, i) => {
    lines.push(`device ${i}: ${d.name}, compute ${d.major}.${d.minor}, ${d.sms} SMs, ${(d.memory / 2 ** 30).toFixed(1)} GiB, PCI ${placeText(d)}${d.unified ? '' : ', no unified addressing (no CUDA IPC)'}`);
  });
  // IPC between processes: on one device always (unified addressing); across devices where peer access works.
  let ipc = devs.some((d) => d.unified) ? 'CUDA IPC between processes on one device' : 'no CUDA IPC (no unified addressing)';
  if (devs.length > 1) {
    try {
      const d = driver('railcomm info');
      const pairs: string[] = [];
      for (let a = 0; a < devs.length; a++) for (let b = 0; b < devs.length; b++) if (a !== b && d.cudaCanAccessPeer(a, b)) pairs.push(`${a}->${b}`);
      ipc += pairs.length > 0 ? `; across devices where peer access works: ${pairs.join(' ')}` : '; not across devices (no peer access)';
    } catch (e) {
      ipc += `; peer access unknown (${(e as Error).message})`;
    }
  }
  lines.push(ipc);
  lines.push(mpsText());
  const k = kernelsWhy();
  if (k !== '') lines.push(`reduction kernels: unusable (${k}): device allreduce goes through host memory`);
  return { available: true, lines };
}
