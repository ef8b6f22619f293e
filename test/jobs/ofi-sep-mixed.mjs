// Processes that disagree on scalable endpoints (issue "ofi rail", item 5):
// process 0's thread ranks share one (init({ params: { ofiSep: true } })),
// process 1's open plain endpoints, as a process whose scalable endpoint
// could not open falls back to. A plain endpoint cannot name a context other
// than the first of a scalable endpoint, so with only ofi between them the
// exchange must fail at once with an error that says so, never hang.
//   RAILCOMM_OFI_PROVIDERS=sockets railcomm run -n 4 --threads-per-process 2 --rails ofi,self test/jobs/ofi-sep-mixed.mjs
import { init } from '../../dist/index.js';

const sep = Number(process.env.RAILCOMM_THREAD_BASE ?? 0) === 0;
const comm = await init({ params: { ofiSep: sep } });
const { rank, size } = comm;
for (let d = 0; d < size; d++) {
  if (d === rank) continue;
  const got = new Uint8Array(100);
  await Promise.all([comm.send(new Uint8Array(100).fill(rank), d, 7), comm.recv(got, d, 7)]);
}
console.log(`RESULT sep=${sep} exchanged with every rank`);
await comm.finalize();
