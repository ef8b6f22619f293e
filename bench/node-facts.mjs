// Facts about Node and V8 on this machine that railcomm's design relies on,
// each printed as a JSON line:
//   - the floor between two worker threads: busy-polling a SharedArrayBuffer,
//     synchronously and in the async/await shape (bench RESULTS, tbsm);
//   - copies to and from shared memory at aligned and misaligned offsets
//     (why tbsm ring payloads start 8-byte aligned);
//   - what queueMicrotask, a promise reaction, performance.now() and an
//     event-loop turn cost (why progress chains passes on a resolved promise
//     and reads the clock rarely);
//   - a tbsm Ring's copy-in + copy-out rate, in one thread and across two;
//   - two awaits of a settled promise (the floor of put + flush), and a 1 MiB
//     copy by CMA on our own pid, by the addon's memcpy, and by set();
//   - what reading a typed array's length and byteLength costs;
//   - what Atomics.load and Atomics.store cost against plain reads and writes
//     of a shared Int32Array (why the ring reads its words plainly on x86);
//   - an 8-byte copy out of shared memory by bytes and by words (core/word-copy.ts).
// Usage: node bench/node-facts.mjs
import { Worker, isMainThread, workerData, parentPort } from 'node:worker_threads';
import { Ring } from '../dist/rail/shared/ring.js';

const out = (o) => console.log(JSON.stringify(o));
const rate = (bytes, ms) => +(bytes / ms / 1e6).toFixed(2);

if (!isMainThread) {
  const { kind } = workerData;
  if (kind === 'pingpong') {
    const { sab, i, mode } = workerData;
    const a = new Int32Array(sab);
    const me = i * 16, peer = (1 - i) * 16;
    const N = 200000;
    let seq = 0;
    const t0 = performance.now();
    if (mode === 'sync') {
      for (let k = 0; k < N; k++) {
        if (i === 0) { Atomics.store(a, me, ++seq); while (Atomics.load(a, peer) !== seq); }
        else { ++seq; while (Atomics.load(a, peer) !== seq); Atomics.store(a, me, seq); }
      }
    } else {
      const recv = (v) => new Promise((res) => { const poll = () => { if (Atomics.load(a, peer) >= v) res(v); else Promise.resolve().then(poll); }; poll(); });
      const send = async (v) => { Atomics.store(a, me, v); return v; };
      for (let k = 0; k < N; k++) {
        if (i === 0) { await send(++seq); await recv(seq); } else { await recv(++seq); await send(seq); }
      }
    }
    if (i === 0) parentPort.postMessage((performance.now() - t0) * 1000 / N / 2);
  } else if (kind === 'ring') {
    const ring = new Ring(workerData.sab);
    const SIZE = 262144, N = 4000;
    const payload = new Uint8Array(SIZE).fill(3), hdr = new Uint8Array(16), dst = new Uint8Array(SIZE);
    if (workerData.i === 0) {
      for (let k = 0; k < N; k++) while (!ring.write(2, hdr, 16, payload));
    } else {
      let got = 0;
      const visit = (am, off, hl, pl) => { ring.data.copy(dst, 0, off + 16 + 16, off + 32 + pl); got++; };
      const t0 = performance.now();
      while (got < N) ring.drain(visit);
      parentPort.postMessage(rate(SIZE * N, performance.now() - t0));
    }
  }
  process.exit(0);
}

async function twoWorkers(data) {
  const ws = [0, 1].map((i) => new Worker(new URL(import.meta.url), { workerData: { ...data, i } }));
  const results = await Promise.all(ws.map((w) => new Promise((res) => { w.once('message', res); w.once('exit', () => res(undefined)); })));
  return results.find((r) => r !== undefined);
}

for (const mode of ['sync', 'async']) {
  const us = await twoWorkers({ kind: 'pingpong', sab: new SharedArrayBuffer(256), mode });
  out({ fact: `SharedArrayBuffer ping-pong between 2 workers, ${mode}`, halfRoundTripUs: +us.toFixed(3) });
}

{
  const N = 256 * 1024, R = 2000;
  const src = new Uint8Array(N).fill(7), dst = new Uint8Array(N);
  const shared = Buffer.from(new SharedArrayBuffer(N * 2), 128, N + 64);
  for (const off of [0, 4, 8, 36, 40]) {
    let t0 = performance.now();
    for (let i = 0; i < R; i++) shared.set(src, off);
    const into = rate(N * R, performance.now() - t0);
    t0 = performance.now();
    for (let i = 0; i < R; i++) shared.copy(dst, 0, off, off + N);
    out({ fact: 'copy 256 KiB to / from shared memory', offset: off, intoGBs: into, outOfGBs: rate(N * R, performance.now() - t0) });
  }
}

{
  const N = 200000;
  const noop = () => {};
  let t0 = performance.now();
  for (let i = 0; i < N; i++) queueMicrotask(noop);
  await null;
  out({ fact: 'queueMicrotask', usPerCall: +((performance.now() - t0) * 1000 / N).toFixed(3) });
  const resolved = Promise.resolve();
  t0 = performance.now();
  for (let i = 0; i < N; i++) void resolved.then(noop);
  await null;
  out({ fact: 'promise reaction (resolved.then)', usPerCall: +((performance.now() - t0) * 1000 / N).toFixed(3) });
  t0 = performance.now();
  for (let i = 0; i < N; i++) performance.now();
  out({ fact: 'performance.now()', usPerCall: +((performance.now() - t0) * 1000 / N).toFixed(3) });
  t0 = performance.now();
  for (let i = 0; i < N / 10; i++) await new Promise((r) => setImmediate(r));
  out({ fact: 'event-loop turn (setImmediate)', usPerCall: +((performance.now() - t0) * 1000 / (N / 10)).toFixed(3) });
  // The floor of a promise-returning API: one-sided put + flush awaits two settled promises.
  for (let k = 0; k < 3; k++) { for (let i = 0; i < N; i++) { await resolved; await resolved; } }
  t0 = performance.now();
  for (let i = 0; i < N * 5; i++) { await resolved; await resolved; }
  out({ fact: 'two awaits of a settled promise', usPerCall: +((performance.now() - t0) * 1000 / (N * 5)).toFixed(3) });
}

{
  // Typed array size: hot paths read a Uint8Array's `length`, because
  // `byteLength` is not inlined on Node 20 (V8 11.3) and costs a call.
  const views = [new Uint8Array(8), Buffer.alloc(8)];
  const N = 2e7;
  const time = (f) => { let s = 0; for (let i = 0; i < N / 10; i++) s += f(views[i & 1]); const t = performance.now(); for (let i = 0; i < N; i++) s += f(views[i & 1]); return [+((performance.now() - t) * 1e6 / N).toFixed(2), s]; };
  out({ fact: 'typed array size (ns per read, Uint8Array and Buffer)', length: time((v) => v.length)[0], byteLength: time((v) => v.byteLength)[0] });
}

{
  // Shared words: Node 20's V8 runs Atomics.load and Atomics.store as builtin
  // calls, not as instructions (Atomics.store is a locked exchange on x86).
  const a = new Int32Array(new SharedArrayBuffer(4096));
  const N = 2e7;
  const time = (f) => { let s = 0; for (let i = 0; i < N / 10; i++) s += f(i); const t = performance.now(); for (let i = 0; i < N; i++) s += f(i); return [+((performance.now() - t) * 1e6 / N).toFixed(2), s]; };
  out({
    fact: 'shared Int32Array word (ns per access)',
    plainRead: time((i) => a[(i & 7) << 4])[0],
    atomicsLoad: time((i) => Atomics.load(a, (i & 7) << 4))[0],
    plainWrite: time((i) => { a[(i & 7) << 4] = i; return 0; })[0],
    atomicsStore: time((i) => { Atomics.store(a, (i & 7) << 4, i); return 0; })[0],
  });
}

{
  // A small message out of a ring: V8's byte loop checks bounds on both
  // arrays at every byte; copySmall goes by words through cached views.
  const { WordViews, copySmall } = await import('../dist/core/word-copy.js');
  const src = Buffer.from(new SharedArrayBuffer(1 << 16), 128, 1 << 15);
  const dst = new Uint8Array(8);
  const srcViews = new WordViews(), dstViews = new WordViews();
  const N = 2e7;
  const time = (f) => { for (let i = 0; i < N / 10; i++) f(i); const t = performance.now(); for (let i = 0; i < N; i++) f(i); return +((performance.now() - t) * 1e6 / N).toFixed(2); };
  out({
    fact: 'small copy, 8 bytes out of shared memory (ns per copy)',
    byBytes: time((i) => { const off = (i & 255) << 3; for (let k = 0; k < 8; k++) dst[k] = src[off + k]; }),
    copySmall: time((i) => copySmall(dst, 0, dstViews.of(dst), src, (i & 255) << 3, srcViews.of(src), 8)),
  });
}

{
  // Copying another thread's 1 MiB: cross-memory attach on our own pid (pins
  // every page) against the addon's memcpy at the address (tbsm single copy)
  // and a plain TypedArray.set.
  const { loadNative } = await import('../dist/native/addon.js');
  const n = loadNative();
  if (n !== null && n.memRead !== undefined) {
    const src = new Uint8Array(1 << 20).fill(7), dst = new Uint8Array(1 << 20);
    const addr = n.addressOf(src);
    const time = (f) => { for (let i = 0; i < 200; i++) f(); const t = performance.now(); for (let i = 0; i < 2000; i++) f(); return +((performance.now() - t) * 1000 / 2000).toFixed(1); };
    out({
      fact: 'copy 1 MiB (us)',
      cmaOwnPid: time(() => n.cmaRead(process.pid, addr, dst)),
      memRead: time(() => n.memRead(addr, dst)),
      typedArraySet: time(() => dst.set(src)),
    });
  }
}

{
  const ring = new Ring(1 << 20);
  const SIZE = 262144, N = 4000;
  const payload = new Uint8Array(SIZE).fill(3), hdr = new Uint8Array(16), dst = new Uint8Array(SIZE);
  const visit = (am, off, hl, pl) => { ring.data.copy(dst, 0, off + 32, off + 32 + pl); };
  const t0 = performance.now();
  for (let k = 0; k < N; k++) { ring.write(2, hdr, 16, payload); ring.drain(visit); }
  out({ fact: 'tbsm ring, 256 KiB frames, copy in + copy out, one thread', GBs: rate(SIZE * N, performance.now() - t0) });
  const across = await twoWorkers({ kind: 'ring', sab: new Ring(1 << 20).sab });
  out({ fact: 'tbsm ring, 256 KiB frames, producer and consumer on 2 workers', GBs: across });
}
