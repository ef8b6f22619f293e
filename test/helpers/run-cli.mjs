// Runs `railcomm run` from the built dist/ without the full CLI entry, so the
// launcher can be tested as its own process: argv after this script is `run`'s argv.
import { runCommand } from '../../dist/cli/run.js';

const code = await runCommand(process.argv.slice(2));
process.exit(code);
