// The synchronous calls over rails that progress only on the event loop
// (run with --rails tcp,self): ERR_NO_RAIL at the call, naming the peer, its
// rail and the async call to use; to this rank itself (self rail) they work.
//   railcomm run -n 2 --rails tcp,self test/jobs/sync-norail.mjs

import { init, ANY_SOURCE, ANY_TAG } from '../../dist/index.js';
import { runCases, assert } from './harness.mjs';

const comm = await init();
const me = comm.rank, peer = 1 - me;
const b = new Uint8Array(8);
const noRail = (fn, ...words) => assert.throws(fn, (e) => {
  assert.equal(e.code, 'ERR_NO_RAIL', e.message);
  for (const w of words) assert.ok(e.message.includes(w), `'${w}' in: ${e.message}`);
  return true;
});

const cases = [
  ['before any message: ERR_NO_RAIL, saying which rails this rank has', async () => {
    noRail(() => comm.sendSync(b, peer, 0), `rank ${peer}`, 'tcp', 'await comm.send()');
    noRail(() => comm.recvSync(b, peer, 0), `rank ${peer}`, 'await comm.recv()');
    noRail(() => comm.recvSync(b, ANY_SOURCE, 0), 'await comm.recv()');
    noRail(() => comm.barrierSync(), 'await comm.barrier()');
    noRail(() => comm.allreduceSync(new Float64Array(1), new Float64Array(1), 'sum'), 'await comm.allreduce()');
  }],
  ['after the lane exists: ERR_NO_RAIL naming the peer\'s rail', async () => {
    if (me === 0) { await comm.send(b, 1); await comm.recv(b, 1); } else { await comm.recv(b, 0); await comm.send(b, 0); }
    noRail(() => comm.sendSync(b, peer, 0), `rank ${peer}`, 'reached over tcp', 'await comm.send()');
    noRail(() => comm.sendrecvSync(b, peer, 0, new Uint8Array(8), peer, 0), 'tcp', 'await comm.sendrecv()');
    // To itself (self rail) from the peer (tcp), or from ANY_SOURCE: refused before anything is sent.
    noRail(() => comm.sendrecvSync(new Int32Array([777]), me, 2, new Int32Array(1), peer, 2), 'await comm.sendrecv()');
    noRail(() => comm.sendrecvSync(new Int32Array([778]), me, 3, new Int32Array(1), ANY_SOURCE, 3), 'await comm.sendrecv()');
    assert.equal(comm.iprobe(me, ANY_TAG), undefined, 'a refused sendrecvSync sent nothing');
  }],
  ['to itself they work (self rail)', async () => {
    comm.sendSync(new Int32Array([me + 5]), me, 3);
    const x = new Int32Array(1);
    const st = comm.recvSync(x, me, 3);
    assert.equal(x[0], me + 5);
    assert.equal(st.source, me);
  }],
];
const failed = await runCases(comm, cases, { timeoutMs: 30000 });
await comm.finalize();
process.exit(failed > 0 ? 1 : 0);
