// comm.abort(code): end every rank of the job with that exit code, as
// MPI_Abort. Under railcomm run the launcher's key-value service hears it and
// stops every rank (the job exits with `code`). Where rank 0 hosts the
// wire-up service (env://, mpirun or srun without PMIx) that service tells
// every rank, and each exits with `code`. Under PMIx this rank exits with the
// code, which mpirun turns into the end of the job and which the other ranks
// see as a failed peer.

import { isMainThread } from 'node:worker_threads';
import { RailcommError, ErrorCode } from '../core/errors.js';
import { KvClient } from '../boot/kv-client.js';
import { kindOf } from './checks.js';
import type { World } from './world.js';

/** How long the launcher may take to confirm before the rank exits anyway. */
const CONFIRM_MS = 2000;

export function checkAbortCode(code: unknown): number {
  if (typeof code !== 'number' || !Number.isInteger(code)) throw new RailcommError(ErrorCode.INVALID_ARG, `abort(code): code ${kindOf(code)}; pass an exit code 1..255`);
  if (code < 1 || code > 255) throw new RailcommError(ErrorCode.INVALID_ARG, `abort(code): code ${code} is not an exit code in 1..255 (abort ends the job as a failure; to end normally, call finalize() and let the program return)`);
  return code;
}

/** Ends the job; the promise never settles (the rank exits). */
export function abortJob(world: World, rank: number, code: number): Promise<never> {
  const launch = world.ctx.launch;
  const where = isMainThread ? '' : ' (a thread rank)';
  process.stderr.write(`railcomm: rank ${rank}${where} called abort(${code}); ending every rank of the job\n`);
  const kv = world.kv;
  if (launch.launcher === 'railcomm' && kv instanceof KvClient) {
    // The launcher stops every rank and exits with `code`; this rank leaves once it has heard the request.
    const timer = setTimeout(() => process.exit(code), CONFIRM_MS);
    kv.abort(`comm.abort(${code})`, code).then(() => { clearTimeout(timer); process.exit(code); }, () => { clearTimeout(timer); process.exit(code); });
  } else if (kv?.abortJob !== undefined) {
    // Rank 0 hosts the wire-up service (env://, mpirun or srun without PMIx): it tells every rank.
    const timer = setTimeout(() => process.exit(code), CONFIRM_MS);
    const leave = (): void => { clearTimeout(timer); setTimeout(() => process.exit(code), rank === 0 ? 200 : 0); };
    kv.abortJob(`comm.abort(${code})`, code).then(leave, leave);
  } else {
    // No launcher of ours to tell: exiting with the code is what mpirun and srun
    // (--kill-on-bad-exit) act on, and the peers see this rank fail.
    process.exit(code);
  }
  return new Promise<never>(() => undefined);
}
