// comm.spawn under railcomm run: `railcomm run -n 2 inter-spawn.mjs` spawns 3
// workers (this script with 'worker'), hands each a range to sum through the
// inter-communicator, gathers the results with ANY_SOURCE, merges, and both
// sides disconnect. Prints `SPAWN ok <sum>` at the parents' rank 0.
//   inter-spawn.mjs hang: the workers never finish (for the launcher-kill test)
//   inter-spawn.mjs missing: spawn a script that does not exist (each parent prints `MISSING <code>`)
//   inter-spawn.mjs vanish: the workers die at once; receives from them fail

import { init, ANY_SOURCE } from '../../dist/index.js';
import { assert } from './harness.mjs';

const args = process.argv.slice(2);
const role = args[0] === 'worker' ? 'worker' : 'parent';
const mode = (role === 'worker' ? args[1] : args[0]) ?? '';
const comm = await init();

if (role === 'worker') {
  const parent = comm.parent;
  assert.ok(parent !== null, 'a spawned rank has comm.parent');
  assert.equal(parent.remoteSize, Number(process.env.PARENTS ?? 2));
  assert.equal(parent.size, comm.size);
  console.log(`WORKER ${comm.rank} of ${comm.size} job ${parent.remoteJob}`);
  if (mode === 'hang') { console.log('HANGING'); await new Promise(() => setTimeout(() => undefined, 1e9)); }
  if (mode === 'vanish') process.kill(process.pid, 'SIGKILL');
  const range = new Float64Array(2);
  await parent.recv(range, 0, 1);
  let s = 0;
  for (let i = range[0]; i < range[1]; i++) s += i * i;
  await parent.send(new Float64Array([s]), comm.rank % parent.remoteSize, 2);
  const merged = await parent.merge(true);
  const total = new Float64Array(1);
  await merged.allreduce(new Float64Array([merged.rank]), total, 'sum');
  assert.equal(total[0], (merged.size * (merged.size - 1)) / 2);
  await parent.disconnect();
  await comm.finalize();
  process.exit(0);
}

if (mode === 'missing') {
  // A script that is not there: every parent's spawn rejects with ERR_BOOT where it is awaited.
  try {
    await comm.spawn('no-such-worker-script.mjs', [], 2);
    console.log('MISSING spawned');
  } catch (e) {
    console.log(`MISSING ${e.code}`);
  }
  await comm.finalize();
  process.exit(0);
}

if (mode === 'vanish') {
  // Workers killed before any traffic: a receive from ANY_SOURCE (and a
  // named one, and a probe's) must fail, not wait for ever (each parent prints `VANISHED <codes>`).
  const kids = await comm.spawn(process.argv[1], ['worker', mode], 2);
  // One at a time, each the first to need its worker: the probe opens worker 0's
  // connection, the ANY_SOURCE receive worker 1's; then both are known dead.
  const code = (p) => p.then(() => 'received', (e) => e.code);
  const codes = [
    await code(kids.probe(0, 5)),
    await code(kids.recv(new Float64Array(1), ANY_SOURCE, 2)),
    await code(kids.recv(new Float64Array(1), 1, 4)),
    await code(kids.recvObject(ANY_SOURCE, 3)),
  ];
  console.log(`VANISHED ${codes.join(' ')}`);
  await comm.finalize();
  process.exit(0);
}

const n = Number(process.env.WORKERS ?? 3);
const t0 = performance.now();
const kids = await comm.spawn(process.argv[1], ['worker', mode], n);
const ms = performance.now() - t0;
if (comm.rank === 0) console.log(`SPAWNED ${n} in ${ms.toFixed(1)} ms`);
assert.equal(kids.remoteSize, n);
assert.equal(kids.size, comm.size);
assert.equal(comm.parent, null);
if (comm.rank === 0) {
  for (let w = 0; w < n; w++) await kids.send(new Float64Array([w * 100, (w + 1) * 100]), w, 1);
}
let mine = 0;
const expectFrom = [];
for (let w = 0; w < n; w++) if (w % comm.size === comm.rank) expectFrom.push(w);
const seen = new Set();
for (let i = 0; i < expectFrom.length; i++) {
  const b = new Float64Array(1);
  const st = await kids.recv(b, ANY_SOURCE, 2);
  seen.add(st.source);
  mine += b[0];
}
assert.deepEqual([...seen].sort((a, b) => a - b), expectFrom);
const total = new Float64Array(1);
await comm.allreduce(new Float64Array([mine]), total, 'sum');
let expect = 0;
for (let i = 0; i < n * 100; i++) expect += i * i;
assert.equal(total[0], expect);
const merged = await kids.merge(false);
assert.equal(merged.size, comm.size + n);
assert.equal(merged.rank, comm.rank);
const t = new Float64Array(1);
await merged.allreduce(new Float64Array([merged.rank]), t, 'sum');
await kids.disconnect();
if (comm.rank === 0) console.log(`SPAWN ok ${total[0]}`);
await comm.finalize();
