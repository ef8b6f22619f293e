// What a rank learns from the environment its launcher gave it, in this
// order: railcomm run (RAILCOMM_*), Open MPI's mpirun (OMPI_COMM_WORLD_*),
// MPICH's hydra (PMI_*), the env:// convention (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), Slurm's srun (SLURM_*); with none, a world of one.
// Under mpirun and srun --mpi=pmix the launcher's PMIx server does the wire-up
// (PMIX_NAMESPACE, PMIX_RANK, PMIX_SERVER_URI*); without PMIx, rank 0 hosts a
// key-value service at MASTER_ADDR:MASTER_PORT (derived from the step under Slurm).

import { createHash } from 'node:crypto';
import { RailcommError, ErrorCode } from '../core/errors.js';
import { expandHostlist } from './hostlist.js';

export const ENV = {
  rank: 'RAILCOMM_RANK',
  size: 'RAILCOMM_SIZE',
  localRank: 'RAILCOMM_LOCAL_RANK',
  localSize: 'RAILCOMM_LOCAL_SIZE',
  kv: 'RAILCOMM_KV',
  jobKey: 'RAILCOMM_JOB_KEY',
  jobId: 'RAILCOMM_JOB_ID',
  /** A job comm.spawn started: the port its ranks connect back to (comm.parent). */
  parentPort: 'RAILCOMM_PARENT_PORT',
  /** railcomm run's pid, for the processes it starts on its own host (launcher-tie.ts launcherGone). */
  launcherPid: 'RAILCOMM_LAUNCHER_PID',
} as const;

export type LauncherName = 'railcomm' | 'openmpi' | 'slurm' | 'hydra' | 'env' | 'singleton';

export interface LaunchInfo {
  /** Which launcher started this rank. */
  launcher: LauncherName;
  why: string;
  rank: number;
  size: number;
  localRank: number;
  localSize: number;
  /** host:port of railcomm run's key-value service. */
  kv?: { host: string; port: number };
  /** host:port of the service rank 0 hosts (launchers other than railcomm run, when PMIx is not used). */
  master?: { host: string; port: number };
  /** The launcher runs a PMIx server for this rank (mpirun, srun --mpi=pmix). */
  pmix?: { namespace: string; rank: number };
  /** How init() wired this rank up (set by init(); shown by railcomm info and init step 1). */
  wireup?: string;
  /** Secret every connection proves it knows (hex); a singleton makes its own. */
  jobKey: string;
  /** Ranks that are threads of this process (railcomm run --threads); 1 for a process rank. */
  threads: number;
  /** World rank of the first thread rank of this process (this rank for a process rank). */
  threadBase: number;
  /** False when no RAILCOMM_JOB_KEY was given and one was derived from public facts. */
  jobKeySecret: boolean;
  jobId: number;
}

function intVar(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number {
  const raw = env[name];
  const n = Number(raw);
  if (raw === undefined || raw === '' || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new RailcommError(ErrorCode.BOOT, `environment variable ${name}='${raw ?? ''}' is not an integer in [${min}, ${max}]; start the job with 'railcomm run'`);
  }
  return n;
}

export function parseHostPort(text: string, what: string): { host: string; port: number } {
  const i = text.lastIndexOf(':');
  const host = i > 0 ? text.slice(0, i).replace(/^\[|\]$/g, '') : '';
  const port = Number(text.slice(i + 1));
  if (!host || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new RailcommError(ErrorCode.BOOT, `${what}='${text}' is not host:port`);
  }
  return { host, port };
}

const hash32 = (text: string): number => createHash('sha256').update(text).digest().readUInt32LE(0);

/**
 * Without RAILCOMM_JOB_KEY, ranks started by another launcher share no secret:
 * derive a key every rank can compute. It keeps jobs apart, not intruders out.
 */
function jobKeyFor(env: NodeJS.ProcessEnv, jobText: string): { key: string; secret: boolean } {
  const k = env[ENV.jobKey];
  if (k !== undefined && k !== '') {
    if (!/^[0-9a-f]{16,}$/i.test(k)) throw new RailcommError(ErrorCode.BOOT, `${ENV.jobKey} must be a hex secret of at least 16 digits`);
    return { key: k, secret: true };
  }
  return { key: createHash('sha256').update(`railcomm-public-job-key|${jobText}`).digest('hex'), secret: false };
}

function masterFrom(env: NodeJS.ProcessEnv, who: string): { host: string; port: number } {
  const host = env['MASTER_ADDR'];
  const port = env['MASTER_PORT'];
  if (!host || !port) {
    throw new RailcommError(ErrorCode.BOOT, `started by ${who}, but MASTER_ADDR and MASTER_PORT are not set: railcomm's ranks meet at a service rank 0 hosts there (for mpirun: -x MASTER_ADDR=<host of rank 0> -x MASTER_PORT=<free port>)`);
  }
  return parseHostPort(`${host}:${port}`, 'MASTER_ADDR:MASTER_PORT');
}

/**
 * The launcher's PMIx server, when its variables are there and name the same
 * rank as the launcher's own (a process started by an inner launcher inherits
 * PMIX_* of its parent: that identity is not its own).
 */
export function pmixFrom(env: NodeJS.ProcessEnv, rankVar: string): { namespace: string; rank: number } | undefined {
  const ns = env['PMIX_NAMESPACE'];
  const rank = env['PMIX_RANK'];
  if (!ns || rank === undefined || rank === '' || rank !== env[rankVar]) return undefined;
  if (!Object.keys(env).some((k) => k.startsWith('PMIX_SERVER_URI'))) return undefined;
  return { namespace: ns, rank: Number(rank) };
}

function others(env: NodeJS.ProcessEnv, rankVar: string, sizeVar: string, launcher: LauncherName, why: string,
  localRankVar: string | undefined, localSizeVar: string | undefined, master: { host: string; port: number } | undefined, jobText: string,
  pmix?: { namespace: string; rank: number }): LaunchInfo {
  const size = intVar(env, sizeVar, 1, 0x7fffffff);
  const rank = intVar(env, rankVar, 0, size - 1);
  const localSize = localSizeVar !== undefined && env[localSizeVar] !== undefined ? intVar(env, localSizeVar, 1, size)
    : master !== undefined && /^(127\.|localhost$|::1$)/.test(master.host) ? size : 1;
  const localRank = localRankVar !== undefined && env[localRankVar] !== undefined ? intVar(env, localRankVar, 0, size - 1) : 0;
  const { key, secret } = jobKeyFor(env, jobText);
  const info: LaunchInfo = { launcher, why, rank, size, localRank, localSize, jobKey: key, jobKeySecret: secret, jobId: hash32(jobText), threads: 1, threadBase: rank };
  if (master !== undefined) info.master = master;
  if (pmix !== undefined) info.pmix = pmix;
  return info;
}

export function detectLaunch(env: NodeJS.ProcessEnv = process.env): LaunchInfo {
  if (env[ENV.rank] !== undefined && env[ENV.size] !== undefined) {
    const size = intVar(env, ENV.size, 1, 0x7fffffff);
    const rank = intVar(env, ENV.rank, 0, size - 1);
    const kvText = env[ENV.kv];
    const jobKey = env[ENV.jobKey];
    if (!kvText) throw new RailcommError(ErrorCode.BOOT, `${ENV.rank} is set but ${ENV.kv} is not; start the job with 'railcomm run'`);
    if (!jobKey || !/^[0-9a-f]{16,}$/i.test(jobKey)) throw new RailcommError(ErrorCode.BOOT, `${ENV.jobKey} must be a hex secret of at least 16 digits`);
    return {
      launcher: 'railcomm',
      why: `${ENV.rank} and ${ENV.size} are set`,
      rank, size,
      localRank: env[ENV.localRank] !== undefined ? intVar(env, ENV.localRank, 0, size - 1) : rank,
      localSize: env[ENV.localSize] !== undefined ? intVar(env, ENV.localSize, 1, size) : size,
      kv: parseHostPort(kvText, ENV.kv),
      jobKey, jobKeySecret: true,
      jobId: env[ENV.jobId] !== undefined ? intVar(env, ENV.jobId, 0, 0xffffffff) : 0,
      threads: env['RAILCOMM_THREADS'] !== undefined ? intVar(env, 'RAILCOMM_THREADS', 1, size) : 1,
      threadBase: env['RAILCOMM_THREAD_BASE'] !== undefined ? intVar(env, 'RAILCOMM_THREAD_BASE', 0, size - 1) : rank,
    };
  }
  if (env['OMPI_COMM_WORLD_RANK'] !== undefined && env['OMPI_COMM_WORLD_SIZE'] !== undefined) {
    const ns = env['PMIX_NAMESPACE'] ?? env['OMPI_MCA_ess_base_jobid'] ?? '';
    const pmix = pmixFrom(env, 'OMPI_COMM_WORLD_RANK');
    // With PMIx, MASTER_ADDR/MASTER_PORT are only the fallback for a missing PMIx module.
    const master = pmix !== undefined && !(env['MASTER_ADDR'] && env['MASTER_PORT']) ? undefined : masterFrom(env, "Open MPI's mpirun");
    return others(env, 'OMPI_COMM_WORLD_RANK', 'OMPI_COMM_WORLD_SIZE', 'openmpi',
      `OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE are set (Open MPI mpirun${pmix !== undefined ? `, PMIx namespace ${pmix.namespace}` : ''})`,
      'OMPI_COMM_WORLD_LOCAL_RANK', 'OMPI_COMM_WORLD_LOCAL_SIZE', master, `openmpi|${ns}|${env['MASTER_ADDR']}|${env['MASTER_PORT']}`, pmix);
  }
  if (env['PMI_RANK'] !== undefined && env['PMI_SIZE'] !== undefined) {
    return others(env, 'PMI_RANK', 'PMI_SIZE', 'hydra', 'PMI_RANK and PMI_SIZE are set (MPICH hydra)',
      'MPI_LOCALRANKID', 'MPI_LOCALNRANKS', masterFrom(env, "MPICH's mpiexec"), `hydra|${env['PMI_ID'] ?? ''}|${env['MASTER_ADDR']}|${env['MASTER_PORT']}`);
  }
  if (env['RANK'] !== undefined && env['WORLD_SIZE'] !== undefined) {
    return others(env, 'RANK', 'WORLD_SIZE', 'env', 'RANK and WORLD_SIZE are set (env://)',
      'LOCAL_RANK', 'LOCAL_WORLD_SIZE', masterFrom(env, 'env://'), `env|${env['MASTER_ADDR']}|${env['MASTER_PORT']}`);
  }
  // Slurm last: an inner launcher (mpiexec, torchrun, railcomm run) inside an
  // allocation inherits SLURM_* from the batch shell. Only an srun step sets
  // SLURM_STEP_NUM_TASKS, so a bare `node app.js` in sbatch stays a singleton.
  if (env['SLURM_PROCID'] !== undefined && env['SLURM_STEP_NUM_TASKS'] !== undefined) {
    const job = env['SLURM_JOB_ID'] ?? '0', step = env['SLURM_STEP_ID'] ?? '0';
    let master: { host: string; port: number };
    if (env['MASTER_ADDR'] && env['MASTER_PORT']) master = masterFrom(env, 'Slurm');
    else {
      const nodes = expandHostlist(env['SLURM_STEP_NODELIST'] ?? env['SLURM_JOB_NODELIST'] ?? '');
      if (nodes.length === 0) throw new RailcommError(ErrorCode.BOOT, 'started by Slurm, but SLURM_STEP_NODELIST is empty; set MASTER_ADDR and MASTER_PORT');
      // Every rank of the step computes the same port from the job and step ids.
      master = { host: nodes[0]!, port: 20000 + (hash32(`${job}.${step}`) % 20000) };
    }
    const pmix = pmixFrom(env, 'SLURM_PROCID');
    const info = others(env, 'SLURM_PROCID', 'SLURM_STEP_NUM_TASKS', 'slurm',
      `SLURM_PROCID and SLURM_STEP_NUM_TASKS are set (srun, job ${job} step ${step}${pmix !== undefined ? `, PMIx namespace ${pmix.namespace}` : ''})`,
      'SLURM_LOCALID', undefined, master, `slurm|${job}|${step}`, pmix);
    // A step on one node: every rank is on this host.
    if ((env['SLURM_STEP_NUM_NODES'] ?? env['SLURM_NNODES']) === '1') info.localSize = info.size;
    return info;
  }
  return {
    launcher: 'singleton', why: 'no launcher variables found (RAILCOMM_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, RANK, SLURM_PROCID with SLURM_STEP_NUM_TASKS)',
    rank: 0, size: 1, localRank: 0, localSize: 1, jobKey: '', jobKeySecret: true, jobId: 0, threads: 1, threadBase: 0,
  };
}
