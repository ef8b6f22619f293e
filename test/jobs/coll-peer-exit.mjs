// A rank dies in the middle of a run of allreduces: every survivor's
// collective fails with ERR_PEER_FAILED within seconds (none waits forever on
// a survivor that gave up), and survivors' point-to-point still works.
import { init } from '../../dist/index.js';

process.on('SIGTERM', () => {}); // stay to report; the launcher stops the job anyway
const comm = await init();
const t0 = Date.now();
let code = 'none';
try {
  for (let i = 0; i < 100000; i++) {
    if (comm.rank === 2 && i === 50) process.exit(4);
    const out = new Float64Array(4);
    await comm.allreduce(new Float64Array([comm.rank, 1, 2, 3]), out, 'sum');
  }
} catch (e) {
  code = e.code;
}
console.log(`RESULT collective: ${code} after ${Date.now() - t0} ms`);
if (comm.rank === 0) { await comm.send(new Int32Array([1]), 1, 9); }
if (comm.rank === 1) { const v = new Int32Array(1); await comm.recv(v, 0, 9); console.log(`RESULT survivors talk: ${v[0] === 1 ? 'ok' : 'wrong'}`); }
process.exit(0);
