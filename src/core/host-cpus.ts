// How many CPUs the job's ranks on this host share, for the oversubscription
// test (more ranks than CPUs: no spinning). Where a launcher says, its word,
// not this process's own affinity: a launcher that binds every rank to a
// core of its own (srun --cpu-bind, taskset per rank) leaves each rank one
// CPU while the ranks together have one each, and judging by the rank's own
// mask took spinning away from every bound rank (an 8-byte hop over shared
// memory went from 0.2 to 31 us). In order:
//   1. RAILCOMM_HOST_CPUS: railcomm run sets it for the ranks on its own host
//      to its own affinity (which a `taskset` of the whole job narrows too);
//      a user may set it with -x;
//   2. SLURM_CPUS_ON_NODE: the CPUs of the Slurm allocation on this node;
//   3. this process's affinity (os.availableParallelism()). A cgroup's cpuset
//      is not used: it cannot tell ranks bound one per core from a whole job
//      narrowed to fewer CPUs inside the container.

import os from 'node:os';

export const HOST_CPUS_VAR = 'RAILCOMM_HOST_CPUS';

export interface HostCpus {
  cpus: number;
  /** Where the count came from, for the init report. */
  from: string;
}

const COUNT = /^[1-9][0-9]*$/;

export function hostCpus(env: NodeJS.ProcessEnv = process.env): HostCpus {
  const set = env[HOST_CPUS_VAR];
  if (set !== undefined && COUNT.test(set)) return { cpus: Number(set), from: HOST_CPUS_VAR };
  const slurm = env['SLURM_CPUS_ON_NODE'];
  if (slurm !== undefined && COUNT.test(slurm)) return { cpus: Number(slurm), from: 'SLURM_CPUS_ON_NODE' };
  return { cpus: os.availableParallelism(), from: 'this process\'s affinity' };
}
