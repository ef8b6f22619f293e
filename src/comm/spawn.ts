// comm.spawn (MPI_Comm_spawn) and comm.parent: the root opens a private port
// and asks railcomm run, through its wire-up service, to start the ranks as a
// new job told that port (RAILCOMM_PARENT_PORT); their init() connects back.

import { RailcommError, ErrorCode, type ErrorCodeName } from '../core/errors.js';
import type { Communicator } from './communicator.js';
import { checkRank, shown } from './checks.js';
import { closePort, interConnect, openPort, type InterCommunicator } from './inter.js';

function checkArgs(script: unknown, args: unknown, n: unknown): { command: string[]; n: number } {
  if (typeof script !== 'string' || script === '') throw new RailcommError(ErrorCode.INVALID_ARG, `spawn(script, args, n): script must be the path of a script or program, got ${JSON.stringify(script)}`);
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) throw new RailcommError(ErrorCode.INVALID_ARG, 'spawn(script, args, n): args must be an array of strings');
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) throw new RailcommError(ErrorCode.INVALID_ARG, `spawn(script, args, n): n must be a positive integer, got ${shown(n)}`);
  return { command: [script, ...(args as string[])], n };
}

/** comm.spawn: collective over comm; script, args and n matter at root. */
export async function spawnJob(comm: Communicator, script: unknown, args: unknown, n: unknown, root: unknown): Promise<InterCommunicator> {
  const world = comm.world;
  world.check('spawn');
  const rt = checkRank(root, comm.size, 'root', false);
  let start: { port?: string; error?: string; code?: string } = {};
  let ended: Promise<string> | null = null;
  if (comm.rank === rt) {
    try {
      const req = checkArgs(script, args, n);
      const kv = world.kv;
      if (kv?.spawn === undefined) {
        const by = world.ctx.launch.launcher;
        throw new RailcommError(ErrorCode.BOOT, `spawn: ${by === 'singleton' ? 'this program was started without a launcher' : `this job was started by ${by}, not railcomm run`}, and only railcomm run starts spawned ranks: run it as 'railcomm run -n N app.js', or start the workers as a job of their own and join them with openPort()/accept() here and connect() there`);
      }
      const port = await openPort(world);
      start = { port };
      ended = kv.spawn({ ...req, port, cwd: process.cwd() });
      // The job may fail to start, or end before it connects: then the accept must not wait for ever.
      ended.catch(() => undefined);
    } catch (e) {
      start = { error: (e as Error).message, code: e instanceof RailcommError ? e.code : ErrorCode.BOOT };
    }
  }
  start = await comm.bcastObject(start, rt);
  if (start.error !== undefined) throw new RailcommError((start.code ?? ErrorCode.BOOT) as ErrorCodeName, start.error);
  const giveUp = ended === null ? null : ended.then(
    (code) => { throw new RailcommError(ErrorCode.BOOT, `spawn: the spawned job ended (exit code ${code}) before its ranks connected; check that the script calls init()`); },
    (e: unknown) => { throw new RailcommError(ErrorCode.BOOT, `spawn: railcomm run could not start the job: ${(e as Error)?.message ?? String(e)}`, { cause: e }); },
  );
  // Raced by the accept only once its set-up is done (a dup, the rails, an
  // allgather): a job refused at once (no such script) must not reject first, unhandled.
  giveUp?.catch(() => undefined);
  try {
    return await interConnect(comm, 'accept', start.port!, rt, giveUp);
  } finally {
    if (comm.rank === rt) await closePort(world, start.port!).catch(() => undefined);
  }
}

/** In init(): a spawned job's ranks connect to the port their parent job's root opened. */
export async function connectParent(comm: Communicator, port: string): Promise<InterCommunicator> {
  return interConnect(comm, 'connect', port, 0);
}
