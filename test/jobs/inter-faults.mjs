// Failures between two jobs started separately (a port passed in a file):
//   railcomm run -n 2 inter-faults.mjs a FILE     (accepts)
//   railcomm run -n 3 -x RAILCOMM_CONNECT_TIMEOUT=3000 inter-faults.mjs b FILE
// B first connects with a wrong secret (refused, both jobs carry on), to a
// closed port and to an unreachable one (each fails in time), then for real;
// then B's rank 2 is killed mid-exchange: A's pending receives from it fail
// with ERR_PEER_FAILED (also A's rank 1's, which never exchanged anything
// with it, and its ANY_SOURCE receive; and A's rank 0's from B's rank 1, which
// dies when B stops) and nothing else of A does (A exits 0).

import { readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import { init, ANY_SOURCE } from '../../dist/index.js';
import { runCases, assert, rejectsWith } from './harness.mjs';

const [role, file] = process.argv.slice(2);
const comm = await init();

async function fromFile() {
  const until = Date.now() + 30000;
  while (!existsSync(file)) {
    if (Date.now() > until) throw new Error(`nothing in ${file} after 30 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return JSON.parse(readFileSync(file, 'utf8'));
}

if (role === 'a') {
  let port = '';
  if (comm.rank === 0) {
    port = await comm.openPort();
    const closed = await comm.openPort();
    await comm.closePort(closed);
    const wrong = port.replace(/\/[0-9a-f]+$/, `/${'ab'.repeat(32)}`);
    const unreachable = port.replace(/^railcomm:\/\/[^/]*:\d+\//, 'railcomm://192.0.2.1:9/');
    writeFileSync(`${file}.tmp`, JSON.stringify({ port, wrong, closed, unreachable }));
    renameSync(`${file}.tmp`, file);
  }
  // The stranger with the wrong secret comes first: refused at the port, while this accept waits on.
  const inter = await comm.accept(port, 0);
  const failed = await runCases(comm, [
    ['carry-on', async () => {
      const b = new Int32Array(1);
      for (let r = comm.rank; r < inter.remoteSize; r += comm.size) {
        await inter.send(new Int32Array([10 + r]), r, 1);
        await inter.recv(b, r, 2);
        assert.equal(b[0], 20 + r);
      }
    }],
    ['killed-peer', async () => {
      if (comm.rank === 0) {
        const hello = new Int32Array(1);
        await inter.recv(hello, 2, 4);                      // a connection to B's rank 2 exists: mid-exchange
        const pending = inter.irecv(new Int32Array(1), 2, 5); // never sent: B's rank 2 dies first
        // B's rank 1 and this rank never wrote to each other: this receive opens the connection,
        // which breaks when B's launcher stops B (its rank 2 was killed).
        const unmet = inter.irecv(new Int32Array(1), 1, 5);
        const t0 = Date.now();
        await inter.send(new Int32Array([1]), 2, 3);         // "die now"
        const e = await rejectsWith(pending.wait(), 'ERR_PEER_FAILED');
        assert.match(e.message, new RegExp(`${inter.remoteJob}:2`), e.message);
        console.log(`KILLED-PEER failed in ${Date.now() - t0} ms: ${e.message}`);
        await rejectsWith(unmet.wait(), 'ERR_PEER_FAILED');
      } else {
        // B's rank 2 and this rank never wrote to each other: the receive itself opens the
        // connection (no wire-up service announces the other job's deaths here), so its death shows.
        // So does an ANY_SOURCE receive (a recvObject: a probe first), which opens one to every rank of B.
        const any = rejectsWith(inter.recvObject(ANY_SOURCE, 7), 'ERR_PEER_FAILED');
        const e = await rejectsWith(inter.irecv(new Int32Array(1), 2, 6).wait(), 'ERR_PEER_FAILED');
        console.log(`SILENT-PEER failed: ${e.message}`);
        await any;
      }
      // Nothing else of this job notices: its own traffic goes on.
      const s = new Float64Array(1);
      await comm.allreduce(new Float64Array([1]), s, 'sum');
      assert.equal(s[0], comm.size);
      const o = await comm.allgatherObject(comm.rank);
      assert.deepEqual(o, [0, 1]);
    }],
    ['still-fine-later', async () => {
      await new Promise((r) => setTimeout(r, 500));
      const back = new Int32Array(1);
      await comm.sendrecv(new Int32Array([comm.rank]), 1 - comm.rank, 9, back, 1 - comm.rank, 9);
      assert.equal(back[0], 1 - comm.rank);
    }],
  ]);
  await comm.finalize();
  process.exit(failed === 0 ? 0 : 1);
} else {
  const ports = comm.rank === 0 ? await fromFile() : { port: '', wrong: '', closed: '', unreachable: '' };
  const limit = Number(process.env.RAILCOMM_CONNECT_TIMEOUT);
  let inter = null;
  const failed = await runCases(comm, [
    ['wrong-secret', async () => {
      const e = await rejectsWith(comm.connect(ports.wrong, 0), 'ERR_BOOT');
      assert.match(e.message, /refused|secret/, e.message);
    }],
    ['closed-port', async () => {
      const t0 = Date.now();
      const e = await rejectsWith(comm.connect(ports.closed, 0), 'ERR_BOOT');
      assert.ok(Date.now() - t0 < limit + 2000, `took ${Date.now() - t0} ms`);
      assert.match(e.message, /closed|nothing accepts/, e.message);
    }],
    ['unreachable-port', async () => {
      const t0 = Date.now();
      let err;
      try { await comm.connect(ports.unreachable, 0); } catch (e) { err = e; }
      assert.ok(err !== undefined && (err.code === 'ERR_TIMEOUT' || err.code === 'ERR_BOOT'), String(err));
      const ms = Date.now() - t0;
      assert.ok(ms < limit + 2000, `took ${ms} ms`);
      if (comm.rank === 0) console.log(`UNREACHABLE ${err.code} in ${ms} ms`);
    }],
    ['silent-port', async () => {
      // Something listens there but never answers (a port behind a firewall that drops): ERR_TIMEOUT in time.
      const server = net.createServer(() => undefined);
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const silent = `railcomm://127.0.0.1:${server.address().port}/${'cd'.repeat(32)}`;
      const t0 = Date.now();
      await rejectsWith(comm.connect(silent, 0), 'ERR_TIMEOUT');
      const ms = Date.now() - t0;
      assert.ok(ms < limit + 2000, `took ${ms} ms`);
      if (comm.rank === 0) console.log(`SILENT ERR_TIMEOUT in ${ms} ms`);
      server.close();
    }],
    ['connect', async () => {
      inter = await comm.connect(ports.port, 0);
      assert.equal(inter.remoteSize, 2);
    }],
    ['carry-on', async () => {
      const b = new Int32Array(1);
      await inter.recv(b, comm.rank % 2, 1);
      assert.equal(b[0], 10 + comm.rank);
      await inter.send(new Int32Array([20 + comm.rank]), comm.rank % 2, 2);
    }],
  ]);
  if (failed > 0) process.exit(1);
  if (comm.rank === 2) {
    await inter.send(new Int32Array([1]), 0, 4);
    await inter.recv(new Int32Array(1), 0, 3);
    process.kill(process.pid, 'SIGKILL');
  }
  // The others wait until their launcher stops them (B's rank 2 died).
  await new Promise(() => setTimeout(() => undefined, 1e9));
}
