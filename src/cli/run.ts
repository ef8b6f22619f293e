// `railcomm run`: start N ranks (processes, or worker threads in a few processes)
// around a key-value service, prefix their output with the rank, and make the job live
// and die as one: the first failure, an abort, a timeout or a signal stops every rank.
// The job itself starts in job.ts; the command line is read in run-args.ts.

import { placeRanks } from './hosts.js';
import { scriptProblem } from './program.js';
import { UsageError } from './usage-error.js';
import { resolveParams } from '../core/params.js';
import { startJob } from './job.js';
import type { Job } from './job-options.js';
import { parseRunArgs, usage, type ParsedRun } from './run-args.js';

export type { HostSlots } from './hosts.js';
export type { Job, JobOptions, JobResult, RankExit, RankOutput } from './job-options.js';
export { startJob } from './job.js';
export { usage } from './run-args.js';

/** `railcomm run ...` (argv after the word `run`); resolves with the process exit code. */
export async function runCommand(argv: string[]): Promise<number> {
  let parsed: ParsedRun | 'help';
  try {
    parsed = parseRunArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`railcomm run: ${err.message}\n\n${usage()}`);
    return 2;
  }
  if (parsed === 'help') {
    process.stdout.write(usage());
    return 0;
  }
  // A script that cannot run stops here, in one line, before any rank starts.
  const o = parsed.opts;
  // So does a RAILCOMM_ parameter every rank would refuse (each would throw it at init()).
  try {
    resolveParams({}, { ...process.env, ...o.env });
  } catch (err) {
    process.stderr.write(`railcomm run: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  let problem: string | undefined;
  try {
    problem = scriptProblem(o.command, o.cwd ?? process.cwd(), placeRanks(o.np, o.hosts).some((p) => p.local), o.threadsPerProcess !== undefined);
  } catch {
    problem = undefined; // startJob says what is wrong with the placement
  }
  if (problem !== undefined) {
    process.stderr.write(`railcomm run: ${problem}\n`);
    return 2;
  }
  let job: Job;
  try {
    job = await startJob(parsed.opts);
  } catch (err) {
    process.stderr.write(`railcomm run: cannot start the job: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  const result = await job.wait();
  return result.code;
}
