// What a rank learns from the environment its launcher gave it. `railcomm run`
// sets the RAILCOMM_* variables below; with none of them the rank is a world
// of size 1. Other launchers (Slurm, mpirun, env://) are detected here later.

import { RailcommError, ErrorCode } from '../core/errors.js';

export const ENV = {
  rank: 'RAILCOMM_RANK',
  size: 'RAILCOMM_SIZE',
  localRank: 'RAILCOMM_LOCAL_RANK',
  localSize: 'RAILCOMM_LOCAL_SIZE',
  kv: 'RAILCOMM_KV',
  jobKey: 'RAILCOMM_JOB_KEY',
  jobId: 'RAILCOMM_JOB_ID',
} as const;

export interface LaunchInfo {
  /** Which launcher started this rank ('railcomm' or 'singleton'). */
  launcher: 'railcomm' | 'singleton';
  why: string;
  rank: number;
  size: number;
  localRank: number;
  localSize: number;
  /** host:port of the key-value service, absent for a singleton. */
  kv?: { host: string; port: number };
  /** Secret every connection proves it knows (hex); a singleton makes its own. */
  jobKey: string;
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
      jobKey,
      jobId: env[ENV.jobId] !== undefined ? intVar(env, ENV.jobId, 0, 0xffffffff) : 0,
    };
  }
  return {
    launcher: 'singleton', why: `no launcher variables (${ENV.rank}) found`,
    rank: 0, size: 1, localRank: 0, localSize: 1, jobKey: '', jobId: 0,
  };
}
