// comm.abort(code) from one rank (argv[3], default the last) while the others
// wait on it: every rank must end and the job exit with `code` (argv[2],
// default 7). Ranks that are not the aborting one print what ended their
// wait, if anything does.
//   railcomm run -n P [--threads] test/jobs/abort.mjs [code] [aborting rank]

import { init } from '../../dist/index.js';

const comm = await init();
const code = Number(process.argv[2] ?? 7);
const aborter = Number(process.argv[3] ?? comm.size - 1);
const other = aborter === comm.size - 1 ? 0 : comm.size - 1;
await comm.barrier();
if (comm.rank === aborter) {
  console.log(`ABORTING ${Date.now()}`);
  await comm.abort(code);
  console.log('NOT REACHED');
} else {
  try {
    await comm.recv(new Uint8Array(1), comm.rank === other ? aborter : other, 99);
    console.log('RESULT received');
  } catch (e) {
    console.log(`RESULT ${e.code} ${Date.now()}`);
  }
  await comm.finalize();
}
