// How many CPUs the job's ranks on this host share, for the oversubscription
// test (more ranks than CPUs: no spinning). Not this process's own affinity:
// a launcher that binds every rank to a core of its own (srun --cpu-bind,
// mpirun --bind-to core, taskset per rank) leaves each rank one CPU while the
// ranks together have one each, and judging by the rank's own mask took
// spinning away from every bound rank (an 8-byte hop over shared memory went
// from 0.2 to 31 us). In order of trust:
//   1. RAILCOMM_HOST_CPUS: railcomm run sets it for the ranks on its own host
//      (its own affinity, which a whole-job `taskset` narrows too);
//   2. the cpuset of this process's cgroup: the allocation of a batch job
//      (Slurm) or a container, which binding a rank inside it does not narrow;
//   3. this process's affinity (os.availableParallelism()).

import { readFileSync } from 'node:fs';
import os from 'node:os';

export const HOST_CPUS_VAR = 'RAILCOMM_HOST_CPUS';

export interface HostCpus {
  cpus: number;
  /** Where the count came from, for the init report. */
  from: string;
}

export function hostCpus(env: NodeJS.ProcessEnv = process.env): HostCpus {
  const set = env[HOST_CPUS_VAR];
  if (set !== undefined && /^[1-9][0-9]*$/.test(set)) return { cpus: Number(set), from: `${HOST_CPUS_VAR} (the launcher's CPUs)` };
  const cg = cgroupCpus();
  if (cg !== null) return { cpus: cg.cpus, from: `cgroup cpuset ${cg.file}` };
  return { cpus: os.availableParallelism(), from: 'this process\'s affinity' };
}

/** The CPU count of this process's cgroup cpuset (v2 or v1), or null where there is none to read. */
function cgroupCpus(): { cpus: number; file: string } | null {
  let lines: string[];
  try { lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n'); } catch { return null; }
  const candidates: string[] = [];
  for (const line of lines) {
    const [, controllers, path] = line.split(':');
    if (path === undefined) continue;
    if (controllers === '') candidates.push(`/sys/fs/cgroup${path === '/' ? '' : path}/cpuset.cpus.effective`);
    else if (controllers!.split(',').includes('cpuset')) candidates.push(`/sys/fs/cgroup/cpuset${path === '/' ? '' : path}/cpuset.effective_cpus`);
  }
  for (const file of candidates) {
    let text: string;
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    const n = countCpuList(text);
    if (n > 0) return { cpus: n, file };
  }
  return null;
}

/** CPUs in a kernel CPU list such as "0-3,8,10-11" (0 when it cannot be read). */
export function countCpuList(text: string): number {
  let n = 0;
  for (const part of text.trim().split(',')) {
    if (part === '') continue;
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (m === null) return 0;
    const lo = Number(m[1]), hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) return 0;
    n += hi - lo + 1;
  }
  return n;
}
