// The CUDA component: the native addon's CUDA part (native/src/cuda.cc), which
// opens the driver library (libcuda.so.1, or RAILCOMM_CUDA_LIBRARY) at run time.
// Loading is lazy and in steps: the library (cheap), cuInit and the devices
// (once per process), then a device for this thread (once per thread rank).

import { loadBinary } from '../native/addon.js';
import { RailcommError, ErrorCode } from '../core/errors.js';

/** What cudaDeviceInfo reports of one device. */
export interface CudaDeviceInfo {
  name: string;
  /** PCI domain, bus and slot: the same GPU has the same triple in every process. */
  domain: number;
  bus: number;
  slot: number;
  major: number;
  minor: number;
  sms: number;
  /** Unified addressing (needed for CUDA IPC). */
  unified: number;
  memory: number;
}

/** cudaPointer's answer for an address the driver knows. */
export interface CudaPointerInfo {
  /** CUmemorytype: 1 host, 2 device, 4 unified. */
  type: number;
  device?: number;
  base?: bigint;
  size?: number;
  /** Unique per allocation for the life of the process (never reused). */
  bufferId?: bigint;
  /** Suitable for cuIpcGetMemHandle. */
  ipc?: boolean;
  managed?: boolean;
}

/** The addon's CUDA functions (all throw an Error whose code is the CUresult's name). */
export interface CudaDriver {
  cudaOpen(file: string): string;
  cudaDriverVersion(): number;
  cudaInit(): number;
  cudaDeviceInfo(ordinal: number): CudaDeviceInfo;
  cudaUse(ordinal: number): void;
  cudaCanAccessPeer(a: number, b: number): boolean;
  cudaAlloc(bytes: number): bigint;
  cudaFree(ptr: bigint): void;
  cudaPointer(ptr: bigint): CudaPointerInfo | null;
  cudaUpload(dst: bigint, src: ArrayBufferView): void;
  cudaDownload(dst: ArrayBufferView, src: bigint): void;
  cudaCopy(dst: bigint, src: bigint, bytes: number): void;
  cudaMemset(ptr: bigint, byte: number, bytes: number): void;
  cudaSynchronize(): void;
  cudaHostAlloc(bytes: number): ArrayBuffer;
  cudaIpcHandle(base: bigint): Uint8Array;
  cudaIpcOpen(handle: Uint8Array): bigint;
  cudaIpcClose(ptr: bigint): void;
  cudaModuleLoad(ptx: string): bigint;
  cudaFunction(module: bigint, name: string): bigint;
  cudaLaunch(fn: bigint, grid: number, block: number, dst: bigint, src: bigint, n: number): void;
}

interface DriverState {
  driver: CudaDriver | null;
  why: string;
  file: string;
  version: number;
  devices: CudaDeviceInfo[];
}

let state: DriverState | undefined;
/** The device this thread uses (set on first use), -1 before. */
let current = -1;
let wanted = -1;

/** The driver library's file name, as dlopen takes it. */
export function driverFile(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return env['RAILCOMM_CUDA_LIBRARY'] || 'libcuda.so.1';
}

/** Open the library and initialise the driver (once per thread's module instance; cuInit once per process). */
function load(): DriverState {
  if (state !== undefined) return state;
  const file = driverFile();
  state = { driver: null, why: '', file, version: 0, devices: [] };
  if (process.env['RAILCOMM_CUDA'] === '0') { state.why = 'switched off by RAILCOMM_CUDA=0'; return state; }
  if (process.platform !== 'linux') { state.why = `needs Linux (this is ${process.platform})`; return state; }
  const bin = loadBinary();
  if (!bin.ok) { state.why = `the native addon holds the CUDA part, and ${bin.why}`; return state; }
  const raw = bin.raw as Partial<CudaDriver>;
  if (typeof raw.cudaOpen !== 'function') { state.why = `the native addon (${bin.file}) was built without the CUDA part: rebuild it (npm run build:native)`; return state; }
  const d = raw as CudaDriver;
  const opened = d.cudaOpen(file);
  if (opened !== '') { state.why = opened; return state; }
  try {
    state.version = d.cudaDriverVersion();
    const count = d.cudaInit();
    if (count === 0) { state.why = `${file} loaded (CUDA ${versionText(state.version)}), but it sees no CUDA device`; return state; }
    for (let i = 0; i < count; i++) state.devices.push(d.cudaDeviceInfo(i));
  } catch (e) {
    state.why = `${file} loaded, but the driver did not initialise: ${(e as Error).message}`;
    return state;
  }
  state.driver = d;
  state.why = `${file}, CUDA ${versionText(state.version)}, ${devicesText(state.devices.length)}`;
  return state;
}

const devicesText = (count: number): string => `${count} device${count === 1 ? '' : 's'}`;

export function versionText(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/** Whether GPU memory can be used here (loads the driver on first call). */
export function cudaAvailable(): boolean {
  return load().driver !== null;
}

/** Why GPU memory can or cannot be used here. */
export function cudaWhy(): string {
  return load().why;
}

export function cudaDevices(): readonly CudaDeviceInfo[] {
  return load().devices;
}

export function cudaVersion(): number {
  return load().version;
}

/** The device a thread uses unless told otherwise: RAILCOMM_CUDA_DEVICE, else 0. */
function defaultDevice(): number {
  const e = process.env['RAILCOMM_CUDA_DEVICE'];
  if (e === undefined || e === '') return 0;
  const v = Number(e);
  if (!Number.isInteger(v) || v < 0) throw new RailcommError(ErrorCode.INVALID_ARG, `RAILCOMM_CUDA_DEVICE=${e}: expected a device ordinal (0, 1, ...)`);
  return v;
}

/** Pick the device this thread works on (before or after first use). */
export function selectDevice(ordinal: number): void {
  const s = load();
  if (s.driver === null) throw unavailable('cuda.setDevice');
  if (!Number.isInteger(ordinal) || ordinal < 0 || ordinal >= s.devices.length) {
    throw new RailcommError(ErrorCode.INVALID_ARG, `cuda.setDevice(${String(ordinal)}): this process sees ${devicesText(s.devices.length)} (0..${s.devices.length - 1})`);
  }
  wanted = ordinal;
  if (current !== -1 && current !== ordinal) use(s.driver, ordinal);
}

function use(d: CudaDriver, ordinal: number): void {
  try { d.cudaUse(ordinal); } catch (e) { throw cudaFailed(`selecting device ${ordinal}`, e); }
  current = ordinal;
}

/** The driver, with this thread's device selected; throws ERR_CUDA (saying why) where there is none. */
export function driver(what: string): CudaDriver {
  const s = load();
  if (s.driver === null) throw unavailable(what);
  if (current === -1) {
    const dev = wanted >= 0 ? wanted : defaultDevice();
    if (dev >= s.devices.length) throw new RailcommError(ErrorCode.INVALID_ARG, `device ${dev} (RAILCOMM_CUDA_DEVICE) does not exist: this process sees ${devicesText(s.devices.length)}`);
    use(s.driver, dev);
  }
  return s.driver;
}

/** The driver if this thread already uses it (no initialisation), else null. */
export function driverInUse(): CudaDriver | null {
  return current === -1 ? null : state?.driver ?? null;
}

/** This thread's device (selecting the default one if none yet). */
export function currentDevice(): number {
  driver('cuda.device');
  return current;
}

export function unavailable(what: string): RailcommError {
  return new RailcommError(ErrorCode.CUDA, `${what}: GPU memory is unavailable here (${cudaWhy()}); check cuda.available first, or install the NVIDIA driver (libcuda.so.1)`);
}

/** A driver call failed: ERR_CUDA naming what railcomm was doing and the CUresult. */
export function cudaFailed(what: string, e: unknown): RailcommError {
  if (e instanceof RailcommError) return e;
  if (e instanceof TypeError) throw e; // a bad argument from railcomm itself: a bug, not the driver
  const m = (e as Error)?.message ?? String(e);
  return new RailcommError(ErrorCode.CUDA, `${what} failed: ${m}`, { cause: e });
}

/** For tests: forget what was loaded (the addon keeps the library open). */
export function resetDriverForTests(): void {
  state = undefined;
  current = -1;
  wanted = -1;
}
