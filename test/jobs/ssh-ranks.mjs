// Ranks started through ssh (railcomm run --hosts ... --rsh 'ssh ...'): each
// says which process started it (sshd's session, when ssh did), which rail
// carries its messages, then a ring of messages and an allreduce.
//   railcomm run --hosts a:2,b:1 --rsh 'ssh ...' --kv-host 127.0.0.1 test/jobs/ssh-ranks.mjs

import { readFileSync } from 'node:fs';
import { init } from '../../dist/index.js';
import { assert } from './harness.mjs';
import { shmJobPrefix } from '../../dist/native/addon.js';

const comm = await init();
const { rank, size } = comm;
let parent = '?';
try { parent = readFileSync(`/proc/${process.ppid}/comm`, 'utf8').trim(); } catch { /* not Linux */ }
console.log(`PARENT ${parent}`);
if (rank === 0) console.log(`SHMPREFIX ${shmJobPrefix(Number(process.env.RAILCOMM_JOB_ID), process.env.RAILCOMM_JOB_KEY)}`);
const right = (rank + 1) % size;
const left = (rank - 1 + size) % size;
const token = new Int32Array([rank]);
const got = new Int32Array(1);
await Promise.all([comm.send(token, right, 1), comm.recv(got, left, 1)]);
assert.equal(got[0], left, 'ring');
const sum = new Float64Array(1);
await comm.allreduce(new Float64Array([rank + 1]), sum, 'sum');
assert.equal(sum[0], (size * (size + 1)) / 2, 'allreduce');
console.log(`RAIL ${comm.world.ctx.endpointFor(right).lane?.rail.component ?? '?'}`);
console.log('DONE ok');
await comm.finalize();
