// NVIDIA's Multi-Process Service. Without it, processes that share a GPU take
// turns on it (time slices between their contexts): on the lent H100, two
// ranks that each upload a small message to the GPU right after the other
// did paid about 145 us an upload, against 7-8 us under MPS and nothing
// measurable for one process alone (bench/gpu/context-switch.mjs, bench
// RESULTS "GPU (issue 16): the lent H100"). Thread ranks of one process share
// one context and never pay it.

import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Where MPS clients find the control daemon: CUDA_MPS_PIPE_DIRECTORY, else the driver's default. */
export function mpsPipeDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return env['CUDA_MPS_PIPE_DIRECTORY'] || '/tmp/nvidia-mps';
}

/** Whether an MPS control daemon is reachable (its control pipe exists). */
export function mpsRunning(env: NodeJS.ProcessEnv = process.env): boolean {
  return existsSync(join(mpsPipeDirectory(env), 'control'));
}

/** The line `railcomm info` and the one-time hint show. */
export function mpsText(env: NodeJS.ProcessEnv = process.env): string {
  const dir = mpsPipeDirectory(env);
  return mpsRunning(env)
    ? `MPS: control daemon found (${dir}): processes sharing a GPU run in one context, no turns between them`
    : `MPS: not running (no ${join(dir, 'control')}): processes that share a GPU take turns on it, and a small copy right after another process's costs ~145 us on an H100 (7-8 us under MPS); start it with \`nvidia-cuda-mps-control -d\`, or run one process per GPU (thread ranks share one context)`;
}
