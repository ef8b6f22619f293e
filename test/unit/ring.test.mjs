// The shared-memory ring (tbsm and shm rails) in one thread: frames of random
// header and payload sizes through many wrap-arounds keep their order, their
// head fields and their bytes, and a full ring refuses a frame and writes
// nothing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ring, FRAME_HEAD } from '../../dist/rail/shared/ring.js';
import { inboundRing, pollRings } from '../../dist/rail/shared/poll.js';

const align8 = (n) => (n + 7) & ~7;

test('ring: random frames through wrap-around keep order, head fields and bytes', () => {
  const r = new Ring(1 << 16);
  let written = 0, read = 0, seed = 12345;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const hdr = new Uint8Array(64);
  const hdrView = new DataView(hdr.buffer);
  // A misaligned header buffer too (copied byte by byte).
  const oddHdr = new Uint8Array(new ArrayBuffer(72), 1, 64);
  const visit = (am, off, hdrLen, payLen) => {
    const s = r.view.getUint32(off + FRAME_HEAD, true);
    assert.equal(s, read, 'frames in order');
    assert.equal(am, (s & 0x7f) + 1);
    assert.equal(hdrLen, 4 + (s % 30));
    const p = off + FRAME_HEAD + align8(hdrLen);
    for (let i = 0; i < payLen; i++) if (r.data[p + i] !== ((s + i) & 0xff)) assert.fail(`payload byte ${i} of frame ${s}`);
    read++;
  };
  for (let iter = 0; iter < 100000; iter++) {
    if (rand(3) > 0) {
      const hl = 4 + (written % 30);
      const h = written % 7 === 0 ? oddHdr : hdr;
      if (h === hdr) hdrView.setUint32(0, written, true);
      else new DataView(oddHdr.buffer, 1).setUint32(0, written, true);
      const pl = rand(5) === 0 ? rand(20000) : rand(100);
      const pay = new Uint8Array(pl);
      for (let i = 0; i < pl; i++) pay[i] = (written + i) & 0xff;
      if (r.write((written & 0x7f) + 1, h, hl, rand(10) === 0 && pl === 0 ? null : pay)) written++;
    } else r.drain(visit, 1 + rand(10));
  }
  while (r.drain(visit) > 0) { /* the rest */ }
  assert.equal(read, written);
  assert.ok(written > 50000);
});

test('ring: a full ring refuses a frame and writes nothing; draining makes room, handed back at the next look', () => {
  const r = new Ring(1 << 16);
  const hdr = new Uint8Array(8);
  const pay = new Uint8Array(1000);
  let n = 0;
  while (r.write(3, hdr, 8, pay)) n++;
  assert.ok(n > 0 && n < 70);
  assert.equal(r.fits(8, 1000), false);
  let seen = 0;
  assert.equal(r.drain(() => { seen++; }, 1), 1);
  // The head is stored at the consumer's next look (here hasData), not at once.
  assert.equal(r.fits(8, 1000), false);
  assert.equal(r.hasData(), true);
  assert.equal(r.fits(8, 1000), true);
  assert.ok(r.write(3, hdr, 8, pay));
  while (r.drain(() => { seen++; }) > 0) { /* the rest */ }
  assert.equal(seen, n + 1);
  assert.equal(r.hasData(), false);
});

test('ring: a producer waiting for room is rung once the consumer hands room back; a quarter of the ring goes back at once', () => {
  const producer = new Ring(1 << 16);
  const consumer = new Ring(producer.sab);
  let rung = 0;
  consumer.onRoom = () => { rung++; };
  const hdr = new Uint8Array(8);
  const pay = new Uint8Array(1000);
  while (producer.write(3, hdr, 8, pay)) { /* fill */ }
  assert.equal(producer.waitForRoom(8, 1000), false, 'full: the producer asks to be rung');
  assert.equal(consumer.drain(() => {}, 1), 1);
  assert.equal(rung, 0, 'nothing handed back yet');
  consumer.hasData();
  assert.equal(rung, 1, 'rung when the room went back');
  assert.ok(producer.write(3, hdr, 8, pay));
  consumer.hasData();
  assert.equal(rung, 1, 'rung once per request');
  // Draining a quarter of the ring or more hands it back within the same drain.
  assert.equal(producer.waitForRoom(8, 1000), false);
  assert.ok(consumer.drain(() => {}, 20) >= 16);
  assert.equal(rung, 2);
  assert.equal(producer.fits(8, 1000), true);
});

test('ring: peek shows the head frame without taking it, past skip markers; take frees it; a corrupt frame throws', () => {
  const r = new Ring(1 << 12);
  assert.equal(r.peek(), -1, 'empty');
  const hdr = new Uint8Array(64);
  for (let i = 0; i < 20; i++) hdr[i] = i + 1;
  const pay = new Uint8Array([9, 8, 7]);
  let frames = 0;
  // Fill and empty the ring through peek/take so that frames wrap (skip markers) several times.
  for (let i = 0; i < 500; i++) {
    assert.ok(r.write(5, hdr, 20, pay));
    const off = r.peek();
    assert.ok(off >= 0);
    assert.equal(r.peek(), off, 'peek does not take');
    assert.deepEqual([r.frameAm(off), r.frameHeaderLength(off), r.framePayloadLength(off)], [5, 20, 3]);
    assert.equal(r.data[off + 16], 1);
    assert.deepEqual([...r.data.subarray(off + 16 + 24, off + 16 + 24 + 3)], [9, 8, 7]);
    r.take(off);
    frames++;
  }
  assert.equal(frames, 500);
  assert.equal(r.peek(), -1);
  assert.equal(r.hasData(), false);
  // A frame whose length word is not a frame length: peek throws as drain does.
  assert.ok(r.write(5, hdr, 20, pay));
  const off = r.peek();
  new Int32Array(r.sab, 128)[off >> 2] = 3;
  assert.throws(() => r.peek(), /corrupt ring frame/);
});

test('ring: positions wrap at 2^30 (they stay small integers), frames intact across the wrap', () => {
  const sab = new SharedArrayBuffer(128 + (1 << 12));
  const ctl = new Int32Array(sab, 0, 32);
  // Both sides begin 1 KiB before the wrap point.
  const start = 2 ** 30 - 1024;
  ctl[0] = start; ctl[16] = start;
  const producer = new Ring(sab);
  const consumer = new Ring(sab);
  const hdr = new Uint8Array(64);
  let sent = 0, got = 0;
  const visit = (am, off, hl, pl) => {
    assert.equal(pl, 1 + (got % 100));
    assert.equal(consumer.data[off + 16 + 8], got & 0xff);
    got++;
  };
  for (let i = 0; i < 200; i++) {
    const pay = new Uint8Array(1 + (i % 100)).fill(i & 0xff);
    while (!producer.write(2, hdr, 8, pay)) {
      consumer.drain(visit);
      consumer.hasData();
    }
    sent++;
    for (const v of [Atomics.load(ctl, 0), Atomics.load(ctl, 16)]) assert.ok(v >= 0 && v < 2 ** 30, `position ${v}`);
  }
  while (consumer.drain(visit) > 0) { /* rest */ }
  assert.equal(got, sent);
  assert.ok(Atomics.load(ctl, 16) < start, 'the tail wrapped past 2^30 to a small number');
});

test('ring: a consumer that caught up never takes the previous lap\'s bytes for a frame (the word after each frame is zeroed)', () => {
  const producer = new Ring(1 << 12);
  const consumer = new Ring(producer.sab);
  const hdr = new Uint8Array(16);
  // Payloads made of words that read as valid frame lengths (24 bytes), left behind in the buffer.
  const bait = new Uint8Array(new Int32Array(400).fill(24).buffer);
  let got = 0;
  const visit = (am, off, hl, pl) => { assert.equal(am, 6); got++; };
  for (let lap = 0; lap < 40; lap++) {
    // Each lap frames of another size, so that frame starts fall inside earlier payloads.
    const pay = bait.subarray(0, 8 * ((lap * 37) % 190 + 1));
    for (let i = 0; i < 6; i++) {
      if (!producer.write(6, hdr, 16, pay)) break;
      assert.equal(consumer.drain(visit), 1, 'exactly the frame written');
      assert.equal(consumer.peek(), -1, 'caught up: no frame where the next one will go');
      assert.equal(consumer.hasData(), false);
      assert.equal(consumer.drain(visit), 0);
    }
  }
  assert.ok(got > 200);
});

test('pollRings: a corrupt frame fails its peer alone, also when failing it took the ring out of the list (shm)', () => {
  const hdr = new Uint8Array(64);
  const list = [];
  const aborted = [];
  const delivered = [];
  const peer = (name) => ({ name, ringPeer() {}, hasRoom: () => true, sleepUntilRoom: () => false,
    abort() { aborted.push(name); const i = list.findIndex((e) => e.ep.name === name); if (i >= 0) list.splice(i, 1); } });
  for (const name of ['a', 'b', 'c']) {
    const ring = new Ring(1 << 12);
    ring.write(3, hdr, 8, new Uint8Array([name.charCodeAt(0)]));
    list.push(inboundRing(ring, peer(name), (am, off) => delivered.push(String.fromCharCode(ring.data[off + 24]))));
  }
  new Int32Array(list[0].ring.sab, 128)[0] = 3; // a's frame length is not a frame length
  pollRings(list, new Set(), { ready() {} });
  assert.deepEqual(aborted, ['a']);
  assert.deepEqual(delivered, ['b', 'c'], 'b and c still delivered');
  assert.deepEqual(list.map((e) => e.ep.name), ['b', 'c']);
});

// On x86 the consumer reads the producer's tail with a plain load
// (loadAcquire): this holds only while V8 reads the word again on every
// look, even in optimized code. A worker spins on hasData, then on a bare
// loadAcquire (as the sleeping flag is read), each for 300 ms, far longer
// than V8 takes to optimize such a loop (a worker cannot confirm it: V8's
// natives syntax is not a worker option); the frame and the flag come from
// this thread.
test('ring: a consumer spinning in optimized code sees a frame and a flag written by another thread', async () => {
  const { Worker } = await import('node:worker_threads');
  const producer = new Ring(1 << 12);
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const ringUrl = new URL('../../dist/rail/shared/ring.js', import.meta.url).href;
  const w = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.ringUrl).then(({ Ring, loadAcquire, payloadOffset }) => {
      const r = new Ring(workerData.sab);
      const flag = new Int32Array(workerData.flag);
      parentPort.postMessage('spinning');
      while (!r.hasData()) { /* spin */ }
      const off = r.peek();
      parentPort.postMessage({ am: r.frameAm(off), payLen: r.framePayloadLength(off), byte: r.data[payloadOffset(off, 8)] });
      while (loadAcquire(flag, 0) === 0) { /* spin */ }
      parentPort.postMessage('flag');
    });
  `, {
    eval: true, workerData: { sab: producer.sab, flag: flag.buffer, ringUrl },
    // The plain reads under test, whatever this machine's default (ring.ts, PLAIN_SYNC).
    env: { ...process.env, RAILCOMM_PLAIN_SYNC: '1' },
  });
  const next = (what) => new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the spinning consumer did not see the ${what} within 10 s`)), 10000);
    w.once('message', (m) => { clearTimeout(t); resolve(m); });
    w.once('error', reject);
  });
  try {
    assert.equal(await next('start'), 'spinning');
    await new Promise((r) => setTimeout(r, 300));
    const frame = next('frame');
    assert.ok(producer.write(7, new Uint8Array(8), 8, new Uint8Array([42, 1, 2])));
    assert.deepEqual(await frame, { am: 7, payLen: 3, byte: 42 });
    await new Promise((r) => setTimeout(r, 300));
    const flagged = next('flag');
    Atomics.store(flag, 0, 1);
    assert.equal(await flagged, 'flag');
  } finally {
    await w.terminate();
  }
});
