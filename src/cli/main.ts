#!/usr/bin/env node
// The `railcomm` command: run a job, describe this machine's rails, or benchmark.

import { runCommand } from './run.js';
import { infoCommand } from './info.js';
import { benchCommand } from './bench.js';

const HELP = `railcomm: message passing for Node.js

  railcomm run -n N [--threads | --threads-per-process K] [--hosts LIST] [--timeout S] [--rails LIST] [--stats] [--] script [args]
  railcomm info [--params] [--json]
  railcomm bench [latency,bw,allreduce,bcast,allgather,alltoall,put,get,atomic,wireup] [-n N] [--threads] [--rails LIST] [--sync] [--sizes LIST] [--json]

'railcomm <command> --help' tells more.`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  switch (cmd) {
    case 'run': return runCommand(rest);
    case 'info': return infoCommand(rest);
    case 'bench': return benchCommand(rest);
    case undefined: case '-h': case '--help': case 'help':
      process.stdout.write(HELP + '\n');
      return cmd === undefined ? 2 : 0;
    default:
      process.stderr.write(`railcomm: unknown command '${cmd}'\n\n${HELP}\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err: unknown) => {
    process.stderr.write(`railcomm: ${(err as Error)?.message ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
