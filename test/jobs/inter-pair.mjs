// Two jobs started separately meet through a port passed in a file:
//   railcomm run -n 3 inter-pair.mjs accept FILE   and   railcomm run -n 2 inter-pair.mjs connect FILE
// Cases: sizes, point-to-point both ways (ANY_SOURCE, eager and rendezvous
// sizes), probe, objects, barrier, merge with collectives, split and a window,
// disconnect. Both jobs run the same cases in the same order.

import { readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { init, ANY_SOURCE, ANY_TAG } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern, rejectsWith } from './harness.mjs';

const [role, file] = process.argv.slice(2);
const comm = await init();
const accepting = role === 'accept';

async function portFromFile() {
  const until = Date.now() + 30000;
  while (!existsSync(file)) {
    if (Date.now() > until) throw new Error(`no port in ${file} after 30 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return readFileSync(file, 'utf8').trim();
}

let inter;
if (accepting) {
  const port = comm.rank === 0 ? await comm.openPort() : '';
  if (comm.rank === 0) { writeFileSync(`${file}.tmp`, port); renameSync(`${file}.tmp`, file); }
  inter = await comm.accept(port, 0);
  if (comm.rank === 0) await comm.closePort(port);
} else {
  const port = comm.rank === 0 ? await portFromFile() : '';
  inter = await comm.connect(port, 0);
}

const SIZES = [0, 8, 70000, 1 << 20];

const failed = await runCases(comm, [
  ['sizes', async () => {
    assert.equal(inter.rank, comm.rank);
    assert.equal(inter.size, comm.size);
    assert.equal(inter.remoteSize, accepting ? 2 : 3);
    assert.equal(comm.parent, null);
  }],
  ['p2p-each-pair', async () => {
    // Every rank sends every remote rank one message of each size; receives name their source.
    const sends = [];
    for (let r = 0; r < inter.remoteSize; r++) {
      for (const [i, n] of SIZES.entries()) sends.push(inter.isend(pattern(n, inter.rank * 10 + i), r, 100 + i));
    }
    for (let r = 0; r < inter.remoteSize; r++) {
      for (const [i, n] of SIZES.entries()) {
        const buf = new Uint8Array(n);
        const st = await inter.recv(buf, r, 100 + i);
        assert.equal(st.source, r);
        assert.equal(st.tag, 100 + i);
        assert.equal(st.bytes, n);
        assert.ok(samePattern(buf, n, r * 10 + i), `bytes from remote rank ${r}, size ${n}`);
      }
    }
    await Promise.all(sends.map((s) => s.wait()));
  }],
  ['p2p-any-source', async () => {
    // The accepting group's rank 0 takes one message from every remote rank with ANY_SOURCE.
    if (accepting) {
      if (inter.rank === 0) {
        const seen = new Set();
        for (let i = 0; i < inter.remoteSize; i++) {
          const b = new Int32Array(1);
          const st = await inter.recv(b, ANY_SOURCE, 7);
          assert.equal(b[0], 1000 + st.source);
          seen.add(st.source);
        }
        assert.equal(seen.size, inter.remoteSize);
      }
    } else {
      await inter.send(new Int32Array([1000 + inter.rank]), 0, 7);
    }
  }],
  ['probe-objects', async () => {
    if (accepting && inter.rank === 1) {
      await inter.sendObject({ from: 'A', n: [1, 2, 3], big: 12345678901234567890n }, 1, 9);
      const m = await inter.recvObject(1, 10);
      assert.deepEqual(m.value, { ok: true });
    } else if (!accepting && inter.rank === 1) {
      const st = await inter.probe(ANY_SOURCE, 9);
      assert.equal(st.source, 1);
      assert.ok(inter.iprobe(1, 9) !== undefined);
      const { value, source, tag } = await inter.recvObject(ANY_SOURCE, ANY_TAG);
      assert.deepEqual(value, { from: 'A', n: [1, 2, 3], big: 12345678901234567890n });
      assert.equal(source, 1);
      assert.equal(tag, 9);
      await inter.sendObject({ ok: true }, 1, 10);
    }
  }],
  ['bad-rank', async () => {
    // Ranks of an inter-communicator's point-to-point are the other group's.
    await rejectsWith(() => inter.send(new Uint8Array(1), inter.remoteSize, 0), 'ERR_RANK');
  }],
  ['barrier', async () => {
    for (let i = 0; i < 3; i++) await inter.barrier();
  }],
  ['merge-collectives-window', async () => {
    const merged = await inter.merge(!accepting);
    assert.equal(merged.size, 5);
    assert.equal(merged.rank, accepting ? comm.rank : 3 + comm.rank);
    const sum = new Float64Array(1);
    await merged.allreduce(new Float64Array([merged.rank]), sum, 'sum');
    assert.equal(sum[0], 0 + 1 + 2 + 3 + 4);
    const b = new Int32Array(4);
    if (merged.rank === 4) b.set([4, 3, 2, 1]);
    await merged.bcast(b, 4);
    assert.deepEqual([...b], [4, 3, 2, 1]);
    const all = new Int32Array(5);
    await merged.allgather(new Int32Array([merged.rank * 11]), all);
    assert.deepEqual([...all], [0, 11, 22, 33, 44]);
    const objs = await merged.allgatherObject({ r: merged.rank, job: accepting ? 'A' : 'B' });
    assert.deepEqual(objs.map((o) => o.job).join(''), 'AAABB');
    // split across the jobs: even and odd merged ranks
    const half = await merged.split(merged.rank % 2, merged.rank);
    const hs = new Float64Array(1);
    await half.allreduce(new Float64Array([1]), hs, 'sum');
    assert.equal(hs[0], merged.rank % 2 === 0 ? 3 : 2);
    // point-to-point on the merged communicator, across the jobs
    const ring = new Int32Array(1);
    await merged.sendrecv(new Int32Array([merged.rank]), (merged.rank + 1) % 5, 3, ring, (merged.rank + 4) % 5, 3);
    assert.equal(ring[0], (merged.rank + 4) % 5);
    // a window: everyone puts its rank into the next rank's memory
    const win = await merged.allocWindow(8);
    await win.fence();
    await win.put(new Int32Array([merged.rank + 1]), (merged.rank + 1) % 5, 0);
    await win.fence();
    assert.equal(new Int32Array(win.buffer.buffer, win.buffer.byteOffset, 2)[0], ((merged.rank + 4) % 5) + 1);
    const old = await win.fetchAndOp(1, 0, 4, 'sum', 'i32');
    assert.ok(old >= 0 && old < 5);
    await win.fence();
    if (merged.rank === 0) assert.equal(new Int32Array(win.buffer.buffer, win.buffer.byteOffset, 2)[1], 5);
    await win.free();
  }],
  ['stats-show-job', async () => {
    const st = inter.stats();
    const jobs = Object.keys(st.jobs ?? {});
    assert.deepEqual(jobs, [String(inter.remoteJob)], JSON.stringify(st.jobs));
    const j = st.jobs[jobs[0]];
    assert.equal(j.ranks, inter.remoteSize);
    assert.ok(j.bytesSent > 0 && j.bytesRecv > 0, JSON.stringify(j));
    assert.ok(Object.keys(st.peers).some((k) => k.startsWith(`${inter.remoteJob}:`)));
  }],
  ['disconnect', async () => {
    // A message sent just before disconnect still arrives.
    if (accepting && inter.rank === 0) await inter.send(new Uint8Array([42]), 0, 77);
    if (!accepting && inter.rank === 0) {
      const b = new Uint8Array(1);
      const r = inter.irecv(b, 0, 77);
      await inter.disconnect();
      await r.wait();
      assert.equal(b[0], 42);
    } else {
      await inter.disconnect();
    }
    await rejectsWith(() => inter.send(new Uint8Array(1), 0, 0), 'ERR_INVALID_ARG');
  }],
]);
await comm.finalize();
process.exit(failed === 0 ? 0 : 1);
