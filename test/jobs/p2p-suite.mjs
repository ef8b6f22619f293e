// Point-to-point behaviour as a user checks it, batched into one job:
//   railcomm run -n 4 test/jobs/p2p-suite.mjs
// Each case runs on every rank; see harness.mjs for the output format.

import { init, ANY_SOURCE, ANY_TAG, waitAll, waitAny, RailcommError } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern, rejectsWith, throwsWith } from './harness.mjs';
import { atCallCase } from './at-call-case.mjs';

const comm = await init();
const { rank, size } = comm;
const right = (rank + 1) % size;
const left = (rank - 1 + size) % size;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const SIZES = [0, 1, 7, 1023, 1024, 1025, 16383, 16384, 16385, 65535, 65536, 65537, 300000, 1 << 20, (1 << 20) + 3, 4 << 20, 16 << 20];

const cases = [
  ['ring', async () => {
    const t = new Int32Array(1);
    if (rank === 0) { await comm.send(t, right, 5); await comm.recv(t, left, 5); assert.equal(t[0], (size * (size - 1)) / 2); }
    else { await comm.recv(t, left, 5); t[0] += rank; await comm.send(t, right, 5); }
  }],

  ['send status and recv status', async () => {
    if (rank === 0) {
      const st = await comm.send(new Uint8Array(12), 1, 77);
      assert.deepEqual(st, { source: 0, tag: 77, bytes: 12 });
    } else if (rank === 1) {
      const st = await comm.recv(new Uint8Array(100), 0, 77);
      assert.deepEqual(st, { source: 0, tag: 77, bytes: 12 });
    }
  }],

  ['order from one sender (mixed tags and sizes)', async () => {
    const N = 600;
    if (rank === 1) {
      const reqs = [];
      for (let i = 0; i < N; i++) {
        const n = i % 50 === 0 ? 70000 : i % 7 === 0 ? 20000 : 8;
        const b = new Uint8Array(Math.max(n, 4));
        new DataView(b.buffer).setUint32(0, i, true);
        reqs.push(comm.isend(b, 0, i % 3));
      }
      await waitAll(reqs);
    } else if (rank === 0) {
      const buf = new Uint8Array(70000);
      for (let i = 0; i < N; i++) {
        const st = await comm.recv(buf, 1, ANY_TAG);
        assert.equal(new DataView(buf.buffer).getUint32(0, true), i);
        assert.equal(st.tag, i % 3);
      }
    }
  }],

  ['order per tag when receiving selectively', async () => {
    if (rank === 2) {
      for (let i = 0; i < 30; i++) await comm.send(new Int32Array([i]), 3, i % 2 === 0 ? 10 : 11);
    } else if (rank === 3) {
      const v = new Int32Array(1);
      for (let i = 1; i < 30; i += 2) { await comm.recv(v, 2, 11); assert.equal(v[0], i); }
      for (let i = 0; i < 30; i += 2) { await comm.recv(v, 2, 10); assert.equal(v[0], i); }
    }
  }],

  ['receives of messages that are already here: selective, wildcard, truncated', async () => {
    // Rank 1's tag-99 message arrives after the others (one ordered stream),
    // so every receive below finds its message queued already.
    if (size < 2) return;
    if (rank === 1) {
      for (let i = 0; i < 6; i++) await comm.send(new Int32Array([i, i]), 0, 20 + (i % 3));
      await comm.send(pattern(100, 4), 0, 23);
      await comm.send(new Uint8Array(0), 0, 99);
    } else if (rank === 0) {
      await comm.recv(new Uint8Array(0), 1, 99);
      const v = new Int32Array(2);
      let st = await comm.recv(v, 1, 22);
      assert.deepEqual([st.source, st.tag, st.bytes, v[0]], [1, 22, 8, 2]);
      st = await comm.recv(v, ANY_SOURCE, 20);
      assert.deepEqual([st.source, st.tag, v[0]], [1, 20, 0]);
      st = await comm.recv(v, 1, ANY_TAG);
      assert.deepEqual([st.tag, v[0]], [21, 1]);
      await rejectsWith(comm.recv(new Uint8Array(10), 1, 23), 'ERR_TRUNCATE');
      for (const [tag, val] of [[20, 3], [21, 4], [22, 5]]) { st = await comm.recv(v, 1, tag); assert.equal(v[0], val); }
      assert.equal(comm.iprobe(1, ANY_TAG), undefined, 'nothing left');
    }
  }],

  ['blocking receives that wait at the call keep MPI matching (posted first, truncation, rendezvous, others queued)', () => atCallCase(comm)],

  ['ANY_SOURCE collects every sender', async () => {
    if (rank === 0) {
      const seen = new Set();
      const v = new Int32Array(1);
      for (let i = 1; i < size; i++) {
        const st = await comm.recv(v, ANY_SOURCE, 3);
        assert.equal(v[0], st.source * 10);
        seen.add(st.source);
      }
      assert.equal(seen.size, size - 1);
    } else {
      await comm.send(new Int32Array([rank * 10]), 0, 3);
    }
  }],

  ['every size from 0 to 16 MiB across each threshold', async () => {
    if (rank === 0) {
      for (const [i, n] of SIZES.entries()) await comm.send(pattern(n, i), 1, 20 + i);
      for (const [i, n] of SIZES.entries()) {
        const b = new Uint8Array(n);
        const st = await comm.recv(b, 1, 40 + i);
        assert.equal(st.bytes, n);
        assert.ok(samePattern(b, n, i + 100), `echo of ${n} bytes corrupted`);
      }
    } else if (rank === 1) {
      for (const [i, n] of SIZES.entries()) {
        const b = new Uint8Array(n + 5);
        const st = await comm.recv(b, 0, 20 + i);
        assert.equal(st.bytes, n, `size ${n}`);
        assert.ok(samePattern(b, n, i), `${n} bytes corrupted`);
      }
      for (const [i, n] of SIZES.entries()) await comm.send(pattern(n, i + 100), 0, 40 + i);
    }
  }],

  ['large messages before the receive is posted (unexpected rendezvous)', async () => {
    if (rank === 2) {
      const reqs = [comm.isend(pattern(3 << 20, 1), 3, 1), comm.isend(pattern(5000, 2), 3, 2), comm.isend(pattern(200000, 3), 3, 3)];
      await waitAll(reqs);
    } else if (rank === 3) {
      await sleep(200);
      const a = new Uint8Array(200000), b = new Uint8Array(5000), c = new Uint8Array(3 << 20);
      await comm.recv(a, 2, 3); await comm.recv(b, 2, 2); await comm.recv(c, 2, 1);
      assert.ok(samePattern(a, 200000, 3) && samePattern(b, 5000, 2) && samePattern(c, 3 << 20, 1));
    }
  }],

  ['typed arrays and sub-views travel as bytes', async () => {
    if (rank === 1) {
      const f = new Float64Array([1.5, -2.25, Math.PI, 1e300]);
      await comm.send(f, 2, 9);
      const big = new Float32Array(100000).map((_, i) => i * 0.5);
      await comm.send(big.subarray(10, 90010), 2, 9);
    } else if (rank === 2) {
      const backing = new ArrayBuffer(64);
      const d = new Float64Array(backing, 16, 4);
      await comm.recv(d, 1, 9);
      assert.deepEqual(Array.from(d), [1.5, -2.25, Math.PI, 1e300]);
      const got = new Float32Array(90000);
      await comm.recv(got, 1, 9);
      assert.equal(got[0], 5);
      assert.equal(got[89999], 45004.5);
    }
  }],

  ['buffers from comm.alloc (shared pool) send and receive', async () => {
    const small = comm.alloc(100), big = comm.alloc(2 << 20);
    assert.ok(small.buffer instanceof SharedArrayBuffer);
    if (rank === 0) {
      small.set(pattern(100, 3)); big.set(pattern(2 << 20, 4));
      await waitAll([comm.isend(small, 1, 30), comm.isend(big, 1, 31)]);
    } else if (rank === 1) {
      await comm.recv(small, 0, 30); await comm.recv(big, 0, 31);
      assert.ok(samePattern(small, 100, 3) && samePattern(big, 2 << 20, 4));
    }
    throwsWith(() => comm.alloc(-1), 'ERR_INVALID_ARG');
  }],

  ['truncation fails that receive only; the next message still arrives', async () => {
    if (rank === 1) {
      await comm.send(pattern(100, 1), 0, 50);
      await comm.send(pattern(1 << 20, 2), 0, 51); // rendezvous; sender is not harmed
      await comm.send(new Int32Array([42]), 0, 52);
    } else if (rank === 0) {
      const e = await rejectsWith(comm.recv(new Uint8Array(10), 1, 50), 'ERR_TRUNCATE');
      assert.match(e.message, /100 bytes/);
      await rejectsWith(comm.recv(new Uint8Array(1000), 1, 51), 'ERR_TRUNCATE');
      const v = new Int32Array(1);
      await comm.recv(v, 1, 52);
      assert.equal(v[0], 42);
    }
  }],

  ['probe, iprobe and recvBytes', async () => {
    if (rank === 3) {
      await comm.send(pattern(777, 5), 0, 60);
      await comm.send(pattern(100000, 6), 0, 61);
    } else if (rank === 0) {
      assert.equal(comm.iprobe(3, 62), undefined);
      const st = await comm.probe(3, 60);
      assert.deepEqual(st, { source: 3, tag: 60, bytes: 777 });
      assert.deepEqual(comm.iprobe(3, 60), { source: 3, tag: 60, bytes: 777 });
      const m = await comm.recvBytes(3, 60);
      assert.equal(m.data.length, 777);
      assert.ok(samePattern(m.data, 777, 5));
      const big = await comm.recvBytes(ANY_SOURCE, 61);
      assert.equal(big.source, 3);
      assert.ok(samePattern(big.data, 100000, 6));
    }
  }],

  ['matched probe: nobody else can take the message', async () => {
    if (rank === 2) {
      await comm.send(new Int32Array([1]), 1, 70);
      await comm.send(new Int32Array([2]), 1, 70);
    } else if (rank === 1) {
      const [m1, m2] = await Promise.all([comm.mprobe(2, 70), comm.mprobe(2, 70)]);
      assert.equal(comm.iprobe(2, 70), undefined, 'claimed messages are no longer visible');
      const a = new Int32Array(1), b = new Int32Array(1);
      await m2.recv(b); await m1.recv(a);
      assert.deepEqual([a[0], b[0]], [1, 2]);
      throwsWith(() => m1.recv(a), 'ERR_INVALID_ARG'); // at the call, as recv's argument errors
      assert.equal(comm.improbe(2, 70), undefined);
    }
  }],

  ['objects', async () => {
    const value = { rank, list: [1, 'two', { three: 3n }], map: new Map([['k', new Set([1, 2])]]), when: new Date(0), f: new Float32Array([0.5]) };
    if (rank === 0) {
      await comm.sendObject(value, 1, 80);
      const back = await comm.recvObject(1, 81);
      assert.equal(back.value.rank, 1);
      assert.equal(back.source, 1);
    } else if (rank === 1) {
      const got = await comm.recvObject(0, 80);
      assert.equal(got.value.rank, 0);
      assert.equal(got.value.list[2].three, 3n);
      assert.ok(got.value.map.get('k').has(2));
      assert.equal(got.value.when.getTime(), 0);
      assert.equal(got.value.f[0], 0.5);
      await comm.sendObject(value, 0, 81);
    }
    if (rank === 2) throwsWith(() => comm.sendObject(() => 1, 0), 'ERR_INVALID_ARG');
  }],

  ['self-send, small and large', async () => {
    const big = pattern(2 << 20, 9);
    const r1 = comm.isend(big, rank, 90);
    const r2 = comm.isend(new Int32Array([rank]), rank, 91);
    const v = new Int32Array(1);
    await comm.recv(v, rank, 91);
    assert.equal(v[0], rank);
    const b = new Uint8Array(2 << 20);
    await comm.recv(b, rank, 90);
    await waitAll([r1, r2]);
    assert.ok(samePattern(b, 2 << 20, 9));
  }],

  ['thousands of outstanding requests in all directions', async () => {
    const PER = 500;
    const reqs = [];
    const bufs = [];
    for (let p = 0; p < size; p++) {
      if (p === rank) continue;
      for (let i = 0; i < PER; i++) {
        const n = i % 100 === 0 ? 100000 : 16;
        const b = new Uint8Array(n);
        bufs.push([b, p, i]);
        reqs.push(comm.irecv(b, p, 100 + (i % 5)));
      }
    }
    for (let p = 0; p < size; p++) {
      if (p === rank) continue;
      for (let i = 0; i < PER; i++) {
        const n = i % 100 === 0 ? 100000 : 16;
        const b = new Uint8Array(n);
        b[0] = rank; b[1] = i & 0xff; b[n - 1] = 0xab;
        reqs.push(comm.isend(b, p, 100 + (i % 5)));
      }
    }
    const sts = await waitAll(reqs);
    assert.equal(sts.length, 2 * PER * (size - 1));
    for (const [b, p, i] of bufs) {
      assert.equal(b[0], p);
      assert.equal(b[1], i & 0xff);
      assert.equal(b[b.length - 1], 0xab);
    }
  }],

  ['eager credits: sends never wait for a slow receiver, whose unexpected data stays bounded', async () => {
    // 6.4 MB: more than the 4 MiB of eager credits, and within RAILCOMM_SEND_BUFFER
    // (8 MiB) even if every message were held as a copy (16,400 bytes counted each):
    // beyond the send buffer a send waits for its receiver by design (the flood test).
    const N = 400, n = 16000;
    if (rank === 1) {
      let early = 0;
      let receiverStarted = false;
      comm.recv(new Uint8Array(1), 2, 201).then(() => { receiverStarted = true; });
      const reqs = [];
      for (let i = 0; i < N; i++) {
        const r = comm.isend(pattern(n, i & 0xff), 2, 200);
        r.wait().then(() => { if (!receiverStarted) early++; });
        reqs.push(r);
      }
      await waitAll(reqs);
      assert.equal(early, N, 'eager-sized sends complete without waiting for the receiver');
    } else if (rank === 2) {
      await sleep(300);
      // Unmatched eager data the receiver holds stays within its credits (on a
      // polled rail it may still sit in the ring, not in the unexpected queue).
      const held = comm.stats().protocol.unexpectedBytes;
      assert.ok(held <= 4 * 1024 * 1024, `the receiver holds at most the 4 MiB of credits unmatched (holds ${held})`);
      await comm.send(new Uint8Array(1), 1, 201);
      const b = new Uint8Array(n);
      for (let i = 0; i < N; i++) {
        await comm.recv(b, 1, 200);
        assert.ok(samePattern(b, n, i & 0xff), `message ${i}`);
      }
    }
  }],

  ['cancel and AbortSignal', async () => {
    const r = comm.irecv(new Uint8Array(4), left, 300);
    assert.equal(r.test(), undefined);
    assert.equal(r.cancel(), true);
    await rejectsWith(r.wait(), 'ERR_CANCELLED');
    throwsWith(() => r.test(), 'ERR_CANCELLED');
    const ac = new AbortController();
    const r2 = comm.irecv(new Uint8Array(4), ANY_SOURCE, 301, { signal: ac.signal });
    ac.abort(new Error('user gave up'));
    const e = await rejectsWith(r2.wait(), 'ERR_CANCELLED');
    assert.equal(e.cause.message, 'user gave up');
    const pre = AbortSignal.abort('early');
    await rejectsWith(comm.irecv(new Uint8Array(4), 0, 302, { signal: pre }).wait(), 'ERR_CANCELLED');
    // A request that already matched completes normally.
    const r3 = comm.irecv(new Uint8Array(4), rank, 303);
    await comm.send(new Int32Array([5]), rank, 303);
    await r3.wait();
    assert.equal(r3.cancel(), false);
    // A cancelled receive takes nothing: the next one gets the message.
    const r4 = comm.irecv(new Uint8Array(4), right, 304);
    assert.equal(r4.cancel(), true);
    await comm.barrier(); // nobody sends tag 304 before every rank cancelled
    await comm.send(new Int32Array([rank]), left, 304);
    const v = new Int32Array(1);
    await comm.recv(v, right, 304);
    assert.equal(v[0], right);
    // A failed request nobody waits on is not an unhandled rejection.
    comm.irecv(new Uint8Array(4), 0, 305).cancel();
  }],

  ['waitAny', async () => {
    if (rank === 0) {
      const a = comm.irecv(new Uint8Array(4), 1, 400);
      const b = comm.irecv(new Uint8Array(4), 2, 401);
      const first = await waitAny([a, b]);
      assert.equal(first.index, 1);
      assert.equal(first.status.source, 2);
      await comm.send(new Uint8Array(1), 1, 402);
      await a.wait();
    } else if (rank === 2) {
      await comm.send(new Int32Array([2]), 0, 401);
    } else if (rank === 1) {
      await comm.recv(new Uint8Array(1), 0, 402);
      await comm.send(new Int32Array([1]), 0, 400);
    }
  }],

  ['buffers detached while railcomm holds them: the request fails with ERR_INVALID_ARG (or completes whole), never a 0-byte success, and the peers go on', async () => {
    if (rank > 1) return;
    const N = 1 << 20;
    /** What a request ended in: ERR_INVALID_ARG, or the bytes it completed with. */
    const outcome = async (p) => { try { return (await p).bytes; } catch (e) { assert.equal(e.code, 'ERR_INVALID_ARG', e.message); return 'ERR_INVALID_ARG'; } };
    if (rank === 0) {
      // A large send whose buffer is transferred away before the receiver asks for the data: it
      // fails on both sides (a rail whose receiver reads the sender's memory itself may deliver it whole).
      const b = pattern(N, 5);
      const s = comm.isend(b, 1, 880);
      structuredClone(b.buffer, { transfer: [b.buffer] });
      await comm.send(new Uint8Array(1), 1, 881);
      const mine = await outcome(s.wait());
      const theirs = (await comm.recvObject(1, 882)).value;
      assert.ok(mine === 'ERR_INVALID_ARG' || mine === N, `send: ${mine}`);
      assert.equal(theirs, mine, 'the receive ended as the send did');
      // Receives whose buffers were transferred away: the messages they match fail them, not truncate.
      await comm.recv(new Uint8Array(1), 1, 883);
      assert.equal((await comm.send(new Uint8Array(100), 1, 884)).bytes, 100);
      assert.equal((await comm.send(new Uint8Array(N), 1, 885)).bytes, N, 'the receiver drops it; the send is not harmed');
    } else {
      await comm.recv(new Uint8Array(1), 0, 881);
      const got = await outcome(comm.recv(new Uint8Array(N), 0, 880));
      await comm.sendObject(got, 0, 882);
      const small = new Uint8Array(100), large = new Uint8Array(N);
      const rs = comm.irecv(small, 0, 884), rl = comm.irecv(large, 0, 885);
      structuredClone(small.buffer, { transfer: [small.buffer] });
      structuredClone(large.buffer, { transfer: [large.buffer] });
      await comm.send(new Uint8Array(1), 0, 883);
      assert.equal(await outcome(rs.wait()), 'ERR_INVALID_ARG');
      assert.equal(await outcome(rl.wait()), 'ERR_INVALID_ARG');
    }
    // And the two ranks still talk, both ways.
    const back = new Int32Array(1);
    const st = await comm.sendrecv(new Int32Array([rank + 1]), 1 - rank, 886, back, 1 - rank, 886);
    assert.deepEqual([st.bytes, back[0]], [4, 2 - rank]);
  }],

  ['iprobe and improbe alone, polled in a loop, see a message sent (MPI progress rule)', async () => {
    if (rank === 1) {
      await comm.send(new Uint8Array([7]), 0, 890);
      await comm.send(new Uint8Array([8]), 0, 891);
    } else if (rank === 0) {
      const until = Date.now() + 10_000;
      let st;
      while ((st = comm.iprobe(1, 890)) === undefined && Date.now() < until) await sleep(1);
      assert.deepEqual(st, { source: 1, tag: 890, bytes: 1 });
      await comm.recv(new Uint8Array(1), 1, 890);
      let m;
      while ((m = comm.improbe(1, 891)) === undefined && Date.now() < until) await sleep(1);
      assert.ok(m !== undefined, 'improbe saw the message');
      const b = new Uint8Array(1);
      await m.recv(b);
      assert.equal(b[0], 8);
    }
  }],

  ['bad arguments throw at the call', async () => {
    const e = throwsWith(() => comm.isend(new Uint8Array(1), size, 0), 'ERR_RANK');
    assert.match(e.message, /not a rank/);
    throwsWith(() => comm.isend(new Uint8Array(1), -1, 0), 'ERR_RANK');
    throwsWith(() => comm.isend(new Uint8Array(1), ANY_SOURCE, 0), 'ERR_RANK');
    throwsWith(() => comm.isend(new Uint8Array(1), 0.5, 0), 'ERR_RANK');
    throwsWith(() => comm.isend(new Uint8Array(1), 0, -5), 'ERR_TAG');
    throwsWith(() => comm.isend(new Uint8Array(1), 0, 2 ** 31), 'ERR_TAG');
    throwsWith(() => comm.isend(new Uint8Array(1), 0, ANY_TAG), 'ERR_TAG');
    throwsWith(() => comm.isend('hello', 0, 0), 'ERR_INVALID_ARG');
    throwsWith(() => comm.isend([1, 2], 0, 0), 'ERR_INVALID_ARG');
    throwsWith(() => comm.irecv(new ArrayBuffer(4), 0, 0), 'ERR_INVALID_ARG');
    throwsWith(() => comm.irecv(new Uint8Array(1), size + 3, 0), 'ERR_RANK');
    throwsWith(() => comm.irecv(new Uint8Array(1), 0, 1.5), 'ERR_TAG');
    throwsWith(() => comm.irecv(new Uint8Array(1), 0, 0, { signal: 'x' }), 'ERR_INVALID_ARG');
    throwsWith(() => comm.iprobe(99, 0), 'ERR_RANK');
    await rejectsWith(() => comm.send(new Uint8Array(1), 17, 0), 'ERR_RANK');
    assert.ok(e instanceof RailcommError);
    const detached = new ArrayBuffer(8);
    const view = new Float64Array(detached);
    structuredClone(detached, { transfer: [detached] });
    throwsWith(() => comm.isend(view, 0, 0), 'ERR_INVALID_ARG');
    throwsWith(() => comm.irecv(view, 0, 0), 'ERR_INVALID_ARG');
  }],
];

const failed = await runCases(comm, cases);
await comm.finalize();
// After finalize every call throws ERR_FINALIZED; finalize itself is idempotent.
try { comm.isend(new Uint8Array(1), 0, 0); console.log('CASE after finalize FAIL no throw'); }
catch (e) { console.log(e.code === 'ERR_FINALIZED' ? 'CASE after finalize ok' : `CASE after finalize FAIL ${e.code}`); }
await comm.finalize();
process.exitCode = failed ? 1 : 0;
