// README's performance table in one command: railcomm beside Open MPI and raw
// Node, interleaved rounds, Markdown + JSON + SVG with the commit and machine.
// The same as `railcomm bench --report`; --help lists the options.
//   node bench/report.mjs [--rounds 5] [--quick] [--only tcp,shm,...] [--out bench/results/report-X]
import { reportCommand } from '../dist/cli/bench-report.js';

process.exitCode = await reportCommand(process.argv.slice(2));
