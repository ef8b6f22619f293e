// The element-wise reduction kernels on the GPU (native/cuda/reduce.cu, shipped
// as PTX text in reduce-ptx.ts), loaded through the driver once per thread and
// launched on device addresses: dst[i] = dst[i] op src[i].

import { readFileSync } from 'node:fs';
import { cudaDevices, cudaFailed, currentDevice, driver } from './driver.js';
import { REDUCE_PTX } from './reduce-ptx.js';

const TYPE_NAMES = new Map<unknown, string>([
  [Float32Array, 'f32'], [Float64Array, 'f64'], [Int32Array, 'i32'], [Uint32Array, 'u32'], [BigInt64Array, 'i64'], [BigUint64Array, 'u64'],
]);
const OPS: ReadonlySet<string> = new Set(['sum', 'prod', 'min', 'max']);
const BLOCK = 256;

let module: bigint | null = null;
/** Why the kernels cannot load here ('' while they can). */
let failed = '';
const functions = new Map<string, bigint>();

/** Whether the GPU can combine arrays of this element type with this op. */
export function gpuReducible(type: unknown, op: unknown): boolean {
  return typeof op === 'string' && OPS.has(op) && TYPE_NAMES.has(type) && failed === '';
}

/** Why the kernels did not load ('' when they did, or were not tried yet). */
export function kernelsWhy(): string {
  return failed;
}

function load(): bigint {
  if (module !== null) return module;
  const d = driver('device reduction');
  // RAILCOMM_CUDA_PTX: another PTX file (the GPU test loads what nvcc just generated from reduce.cu).
  const file = process.env['RAILCOMM_CUDA_PTX'];
  try {
    module = d.cudaModuleLoad(file !== undefined && file !== '' ? readFileSync(file, 'utf8') : REDUCE_PTX);
  } catch (e) {
    failed = (e as Error).message;
    throw cudaFailed('loading the reduction kernels (PTX)', e);
  }
  return module;
}

/** dst[i] = dst[i] op src[i] for i < n elements of `type`, on this thread's device; returns once done. */
export function reduceOnDevice(op: string, type: unknown, dst: bigint, src: bigint, n: number): void {
  if (n === 0) return;
  const name = `railcomm_${op}_${TYPE_NAMES.get(type) ?? '?'}`;
  let fn = functions.get(name);
  const d = driver('device reduction');
  if (fn === undefined) {
    const m = load();
    try { fn = d.cudaFunction(m, name); } catch (e) { throw cudaFailed(`finding kernel ${name}`, e); }
    functions.set(name, fn);
  }
  const sms = cudaDevices()[currentDevice()]?.sms ?? 32;
  const grid = Math.max(1, Math.min(Math.ceil(n / BLOCK), sms * 16));
  try { d.cudaLaunch(fn, grid, BLOCK, dst, src, n); } catch (e) { throw cudaFailed(`kernel ${name} on ${n} elements`, e); }
}
