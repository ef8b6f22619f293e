// Unit and property tests of the tcp rail's stream parser (src/rail/tcp/reader.ts).
// A FrameReader is fed a handshake and then a stream of random frames, cut at
// random chunk boundaries, through both socket paths: 'data' events
// (feedChunk) and net.Socket's onread (nextBuffer + onRead, including direct
// reads into the buffer a `place` handler names). The frames a sink sees must
// be exactly the frames sent; garbage must stop the stream with one
// protocolError and nothing delivered after it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { FrameReader } from '../../dist/rail/tcp/reader.js';
import { encodeFrameHeader, FRAME_HEADER, FRAME_VERSION } from '../../dist/rail/tcp/wire.js';

const STAGING = 4096;
const HDR_MAX = 256;
const PAY_MAX = 1 << 20;

// AM ids the test sink knows.
const AM_PLAIN = 1; // recv only: payload read from rx.buf
const AM_PLACE = 2; // place returns a fresh buffer of payLen bytes
const AM_DROP = 3; // place returns null: payload discarded, recv not called
const AM_PLACE_VIEW = 4; // place returns a view into the middle of a larger buffer
const AM_THROW = 5; // recv throws
const GUARD = 0xee;

/** Deterministic bytes for a frame part (xorshift32), so big payloads are cheap and offsets are checked. */
function fill(n, seed) {
  const b = Buffer.allocUnsafe(n);
  let x = (seed | 0) || 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

function encodeFrame(f) {
  const b = Buffer.alloc(FRAME_HEADER + f.hdr.length + f.pay.length);
  encodeFrameHeader(new DataView(b.buffer, b.byteOffset, b.byteLength), 0, f.am, f.hdr.length, f.pay.length, f.flags ?? 0);
  f.hdr.copy(b, FRAME_HEADER);
  f.pay.copy(b, FRAME_HEADER + f.hdr.length);
  return b;
}

function rawHeader(magic, version, am, hdrLen, flags, payLen) {
  const b = Buffer.alloc(FRAME_HEADER);
  b.writeUInt16LE(magic, 0); b[2] = version; b[3] = am;
  b.writeUInt16LE(hdrLen, 4); b.writeUInt16LE(flags, 6); b.writeUInt32LE(payLen, 8);
  return b;
}

/** What the sink must record for the frames sent, in order. */
function expectedLog(frames) {
  const out = [];
  for (const f of frames) {
    if (f.am === 0) { out.push({ ctrl: f.flags ?? 0 }); continue; }
    const placed = f.am === AM_PLACE || f.am === AM_DROP || f.am === AM_PLACE_VIEW;
    if (placed && f.pay.length > 0) out.push({ place: f.am, hdr: f.hdr, payLen: f.pay.length });
    if (f.am === AM_DROP && f.pay.length > 0) continue;
    out.push({ am: f.am, hdr: f.hdr, pay: f.pay });
  }
  return out;
}

/**
 * A ReaderSink that records what it is handed, checking on the way that rx
 * describes the frame consistently (placed set exactly when a target was given,
 * the target filled, bytes around a view untouched).
 */
function makeSink() {
  const log = [];
  const errors = [];
  const endpoint = { name: 'test-endpoint' };
  let lastTarget = null;
  let lastBacking = null;
  const hdrOf = (rx) => Buffer.from(rx.buf.subarray(rx.hdrOff, rx.hdrOff + rx.hdrLen));
  const checkEp = (ep) => assert.equal(ep, endpoint, 'handlers get the sink endpoint');
  const recvPlaced = (am) => (ep, rx) => {
    checkEp(ep);
    if (rx.payLen === 0) {
      assert.equal(rx.placed, null, 'empty payload: place was not asked');
      log.push({ am, hdr: hdrOf(rx), pay: Buffer.alloc(0) });
      return;
    }
    assert.notEqual(lastTarget, null, 'place was called first');
    assert.equal(rx.placed, lastTarget, 'rx.placed is the buffer place returned');
    log.push({ am, hdr: hdrOf(rx), pay: Buffer.from(rx.placed) });
    if (lastBacking !== null) {
      const { backing, start, end } = lastBacking;
      for (let i = 0; i < start; i++) assert.equal(backing[i], GUARD, 'nothing written before the view');
      for (let i = end; i < backing.length; i++) assert.equal(backing[i], GUARD, 'nothing written after the view');
    }
    lastTarget = null;
    lastBacking = null;
  };
  const handlers = {
    [AM_PLAIN]: {
      recv(ep, rx) {
        checkEp(ep);
        assert.equal(rx.placed, null);
        assert.equal(rx.view.buffer, rx.buf.buffer, 'view and buf are the same memory');
        log.push({ am: AM_PLAIN, hdr: hdrOf(rx), pay: Buffer.from(rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen)) });
      },
    },
    [AM_PLACE]: {
      place(ep, rx) {
        checkEp(ep);
        log.push({ place: AM_PLACE, hdr: hdrOf(rx), payLen: rx.payLen });
        lastTarget = new Uint8Array(rx.payLen);
        lastBacking = null;
        return lastTarget;
      },
      recv: recvPlaced(AM_PLACE),
    },
    [AM_DROP]: {
      place(ep, rx) {
        checkEp(ep);
        log.push({ place: AM_DROP, hdr: hdrOf(rx), payLen: rx.payLen });
        return null;
      },
      recv(ep, rx) {
        checkEp(ep);
        assert.equal(rx.payLen, 0, 'a frame whose payload was discarded is not delivered');
        log.push({ am: AM_DROP, hdr: hdrOf(rx), pay: Buffer.alloc(0) });
      },
    },
    [AM_PLACE_VIEW]: {
      place(ep, rx) {
        checkEp(ep);
        log.push({ place: AM_PLACE_VIEW, hdr: hdrOf(rx), payLen: rx.payLen });
        const backing = new Uint8Array(rx.payLen + 21).fill(GUARD);
        lastTarget = backing.subarray(7, 7 + rx.payLen);
        lastBacking = { backing, start: 7, end: 7 + rx.payLen };
        return lastTarget;
      },
      recv: recvPlaced(AM_PLACE_VIEW),
    },
    [AM_THROW]: {
      recv() { throw new Error('handler exploded'); },
    },
  };
  const sink = {
    endpoint,
    counters: { msgsRecv: 0, bytesRecv: 0 },
    railCounters: { msgsRecv: 0, bytesRecv: 0 },
    handler: (am) => handlers[am],
    control: (flags) => { log.push({ ctrl: flags }); },
    protocolError: (reason) => { errors.push(reason); },
  };
  return { sink, log, errors };
}

/** The reader with the handshake stages the real code has (expect, then startFrames inside the callback). */
function makeReader(hsLens, sink) {
  const reader = new FrameReader(STAGING, HDR_MAX, PAY_MAX);
  const hs = [];
  const stage = (i) => {
    if (i === hsLens.length) { reader.startFrames(sink); return; }
    reader.expect(hsLens[i], (b) => { hs.push(Buffer.from(b)); stage(i + 1); });
  };
  stage(0);
  return { reader, hs };
}

/**
 * Push `stream` into the reader. Chunk sizes cycle through `cuts`; `paths`
 * (cycled) chooses per chunk between 'data' (feedChunk) and 'onread'
 * (nextBuffer/onRead, the bytes copied into whatever buffer the reader names).
 */
function pump(reader, stream, cuts, paths) {
  let pos = 0;
  let i = 0;
  const stats = { direct: 0, reads: 0, refused: 0 };
  while (pos < stream.length) {
    const want = cuts[i % cuts.length];
    const path = paths[i % paths.length];
    i++;
    if (path === 'data') {
      const n = Math.min(want, stream.length - pos);
      // A fresh Buffer with an offset into a larger allocation, as socket chunks can be.
      const backing = Buffer.alloc(n + 5);
      stream.copy(backing, 3, pos, pos + n);
      reader.feedChunk(backing.subarray(3, 3 + n));
      pos += n;
    } else {
      const buf = reader.nextBuffer();
      const n = Math.min(want, buf.length, stream.length - pos);
      assert.ok(buf.length > 0);
      stream.copy(buf, 0, pos, pos + n);
      if (buf.length >= 32768) stats.direct++; // a payload target (direct reads leave >= 32 KiB)
      stats.reads++;
      if (!reader.onRead(n, buf)) stats.refused++;
      pos += n;
    }
  }
  return stats;
}

// ---- arbitraries --------------------------------------------------------------

const payLenArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 300 }) },
  { weight: 3, arbitrary: fc.integer({ min: 300, max: 6000 }) }, // around and over the staging size
  { weight: 1, arbitrary: fc.integer({ min: 30000, max: 80000 }) }, // direct reads (>= 32 KiB left)
);
const amFrameArb = fc.record({
  am: fc.constantFrom(AM_PLAIN, AM_PLACE, AM_DROP, AM_PLACE_VIEW),
  hdrLen: fc.oneof(fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: HDR_MAX })),
  payLen: payLenArb,
  // Sometimes size the whole frame to sit right at the staging size (-1, 0, +1).
  exact: fc.option(fc.integer({ min: -2, max: 2 }), { freq: 4 }),
  seed: fc.integer(),
}).map((f) => (f.exact === null ? f : { ...f, payLen: STAGING + f.exact - FRAME_HEADER - f.hdrLen }));
// Control frames (am 0) as BYE is sent, plus small bodies that must be skipped.
const ctrlFrameArb = fc.record({
  am: fc.constant(0),
  flags: fc.integer({ min: 0, max: 0xffff }),
  hdrLen: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 64 })),
  payLen: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 64 })),
  seed: fc.integer(),
});
const framesArb = fc.array(fc.oneof({ weight: 8, arbitrary: amFrameArb }, { weight: 1, arbitrary: ctrlFrameArb }), { maxLength: 25, size: 'max' })
  .map((fs) => fs.map((f) => ({ am: f.am, flags: f.flags, hdr: fill(f.hdrLen, f.seed), pay: fill(f.payLen, ~f.seed) })));
const cutsArb = fc.array(fc.oneof(
  fc.integer({ min: 1, max: 16 }),
  fc.integer({ min: 1, max: 400 }),
  fc.integer({ min: 1, max: 9000 }),
  fc.integer({ min: 30000, max: 120000 }),
), { minLength: 1, maxLength: 12, size: 'max' });
const pathsArb = fc.oneof(
  fc.constant(['data']),
  fc.constant(['onread']),
  fc.array(fc.constantFrom('data', 'onread'), { minLength: 1, maxLength: 8 }),
);
const hsLensArb = fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 2 });

const sameLog = (got, want) => {
  assert.equal(got.length, want.length, `delivered ${got.length} records, sent ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const g = got[i];
    const w = want[i];
    assert.deepEqual(Object.keys(g), Object.keys(w), `record ${i}`);
    for (const k of Object.keys(w)) {
      if (Buffer.isBuffer(w[k])) assert.ok(Buffer.from(g[k]).equals(w[k]), `record ${i}: ${k} differs`);
      else assert.equal(g[k], w[k], `record ${i}: ${k}`);
    }
  }
};

// ---- tests --------------------------------------------------------------------

test('FrameReader delivers exactly the frames sent, whatever the chunking and read path (property)', () => {
  fc.assert(fc.property(hsLensArb, fc.integer(), framesArb, cutsArb, pathsArb, (hsLens, hsSeed, frames, cuts, paths) => {
    const hsBytes = hsLens.map((n, i) => fill(n, hsSeed + i));
    const { sink, log, errors } = makeSink();
    const { reader, hs } = makeReader(hsLens, sink);
    const stream = Buffer.concat([...hsBytes, ...frames.map(encodeFrame)]);
    const stats = pump(reader, stream, cuts, paths);
    assert.deepEqual(errors, []);
    assert.equal(stats.refused, 0);
    assert.equal(hs.length, hsLens.length, 'every handshake stage completed');
    for (let i = 0; i < hs.length; i++) assert.ok(hs[i].equals(hsBytes[i]), `handshake stage ${i} bytes`);
    sameLog(log, expectedLog(frames));
  }), { numRuns: 150 });
});

test('FrameReader: a large placed payload read through onread lands straight in the target (direct reads)', () => {
  for (const am of [AM_PLACE, AM_PLACE_VIEW, AM_PLAIN]) {
    const frames = [
      { am, hdr: fill(16, 1), pay: fill(200000, 2) },
      { am: AM_PLAIN, hdr: fill(3, 3), pay: fill(10, 4) },
    ];
    const stream = Buffer.concat([fill(8, 9), ...frames.map(encodeFrame)]);
    // Socket-like reads (whatever fits in the buffer) and bounded ones.
    for (const cuts of [[1 << 30], [STAGING, 65536], [5000, 1 << 30], [1, 40000]]) {
      const { sink, log, errors } = makeSink();
      const { reader } = makeReader([8], sink);
      const stats = pump(reader, stream, cuts, ['onread']);
      assert.deepEqual(errors, []);
      assert.ok(stats.direct > 0, `am ${am}: some reads went straight into the target`);
      sameLog(log, expectedLog(frames));
    }
  }
});

test('FrameReader: place returning null skips the payload (in one chunk, split, and larger than staging); the next frame still parses', () => {
  for (const payLen of [1, 100, STAGING - 20, STAGING * 3, 50000]) {
    for (const cuts of [[1 << 20], [7], [STAGING], [1000, 33, 40000]]) {
      for (const paths of [['data'], ['onread']]) {
        const { sink, log, errors } = makeSink();
        const { reader } = makeReader([4], sink);
        const frames = [
          { am: AM_DROP, hdr: fill(5, payLen), pay: fill(payLen, 1) },
          { am: AM_PLAIN, hdr: fill(2, 2), pay: fill(17, 3) },
          { am: AM_DROP, hdr: Buffer.alloc(0), pay: Buffer.alloc(0) },
          { am: 0, flags: 1, hdr: Buffer.alloc(0), pay: Buffer.alloc(0) },
        ];
        pump(reader, Buffer.concat([fill(4, 0), ...frames.map(encodeFrame)]), cuts, paths);
        assert.deepEqual(errors, []);
        sameLog(log, expectedLog(frames));
        assert.deepEqual(log.filter((r) => 'am' in r).map((r) => r.am), [AM_PLAIN, AM_DROP]);
      }
    }
  }
});

test('FrameReader: a frame larger than the staging buffer is assembled whole for a handler without place', () => {
  const { sink, log, errors } = makeSink();
  const { reader } = makeReader([1], sink);
  const frames = [
    { am: AM_PLAIN, hdr: fill(HDR_MAX, 5), pay: fill(STAGING * 2 + 3, 6) },
    { am: AM_PLAIN, hdr: fill(1, 7), pay: fill(STAGING - FRAME_HEADER - 1, 8) }, // exactly the staging size
    { am: AM_PLAIN, hdr: fill(1, 7), pay: fill(STAGING - FRAME_HEADER, 8) }, // one byte over
    { am: AM_PLAIN, hdr: fill(1, 7), pay: fill(STAGING - FRAME_HEADER - 2, 8) }, // one byte under
    { am: AM_PLAIN, hdr: Buffer.alloc(0), pay: Buffer.alloc(0) },
  ];
  pump(reader, Buffer.concat([Buffer.from([1]), ...frames.map(encodeFrame)]), [100, 3000, 5], ['data', 'onread']);
  assert.deepEqual(errors, []);
  sameLog(log, expectedLog(frames));
});

test('FrameReader: handshake stages and frames arriving in one read are all processed', () => {
  const { sink, log, errors } = makeSink();
  const { reader, hs } = makeReader([40, 56], sink);
  const frames = [{ am: AM_PLAIN, hdr: fill(4, 1), pay: fill(4, 2) }, { am: AM_PLACE, hdr: fill(4, 3), pay: fill(9, 4) }];
  const stream = Buffer.concat([fill(40, 10), fill(56, 11), ...frames.map(encodeFrame)]);
  reader.feedChunk(stream);
  assert.deepEqual(errors, []);
  assert.ok(hs[0].equals(fill(40, 10)));
  assert.ok(hs[1].equals(fill(56, 11)));
  sameLog(log, expectedLog(frames));
});

// Ways to break a stream at a frame boundary, and what the reason must say.
const garbageArb = fc.oneof(
  fc.record({ kind: fc.constant('magic'), bytes: fc.uint8Array({ minLength: 12, maxLength: 200, size: 'max' }).map((a) => { a[0] = a[0] === 0x52 ? 0x53 : a[0]; return Buffer.from(a); }) }),
  fc.record({ kind: fc.constant('version'), bytes: fc.integer({ min: 0, max: 255 }).filter((v) => v !== FRAME_VERSION).map((v) => rawHeader(0x4352, v, AM_PLAIN, 0, 0, 0)) }),
  fc.record({ kind: fc.constant('hdrLen'), bytes: fc.integer({ min: HDR_MAX + 1, max: 0xffff }).map((n) => rawHeader(0x4352, FRAME_VERSION, AM_PLAIN, n, 0, 0)) }),
  fc.record({ kind: fc.constant('payLen'), bytes: fc.integer({ min: PAY_MAX + 1, max: 0xffffffff }).map((n) => rawHeader(0x4352, FRAME_VERSION, AM_PLACE, 0, 0, n)) }),
  fc.record({ kind: fc.constant('unknownAm'), bytes: fc.integer({ min: 6, max: 255 }).map((am) => rawHeader(0x4352, FRAME_VERSION, am, 0, 0, 0)) }),
  fc.record({ kind: fc.constant('throw'), bytes: fc.constant(encodeFrame({ am: AM_THROW, hdr: fill(3, 1), pay: fill(20, 2) })) }),
);
const reasonFor = {
  magic: /bad magic/,
  version: /unsupported frame version/,
  hdrLen: /header length \d+ exceeds 256/,
  payLen: /payload length \d+ exceeds/,
  unknownAm: /unknown active message id \d+/,
  throw: /handler threw: .*handler exploded/s,
};

test('FrameReader: garbage after a valid prefix -> one protocolError, nothing delivered after it (property)', () => {
  fc.assert(fc.property(
    framesArb, garbageArb, fc.uint8Array({ maxLength: 3000, size: 'max' }), framesArb, cutsArb, pathsArb,
    (prefix, garbage, trailing, after, cuts, paths) => {
      const { sink, log, errors } = makeSink();
      const { reader } = makeReader([8], sink);
      const stream = Buffer.concat([fill(8, 1), ...prefix.map(encodeFrame), garbage.bytes, Buffer.from(trailing), ...after.map(encodeFrame)]);
      pump(reader, stream, cuts, paths);
      assert.equal(errors.length, 1, `exactly one protocolError, got ${JSON.stringify(errors)}`);
      assert.match(errors[0], reasonFor[garbage.kind]);
      sameLog(log, expectedLog(prefix));
      // Dead: later reads are refused, feeds ignored.
      const buf = reader.nextBuffer();
      encodeFrame({ am: AM_PLAIN, hdr: Buffer.alloc(0), pay: Buffer.alloc(0) }).copy(buf);
      assert.equal(reader.onRead(FRAME_HEADER, buf), false);
      reader.feedChunk(encodeFrame({ am: AM_PLAIN, hdr: Buffer.alloc(0), pay: Buffer.alloc(0) }));
      assert.equal(errors.length, 1);
      sameLog(log, expectedLog(prefix));
    },
  ), { numRuns: 150 });
});

test('FrameReader: stop() ends delivery mid-stream', () => {
  const { sink, log, errors } = makeSink();
  const { reader } = makeReader([2], sink);
  const f = encodeFrame({ am: AM_PLAIN, hdr: fill(2, 1), pay: fill(5, 2) });
  reader.feedChunk(Buffer.concat([Buffer.from([1, 2]), f, f.subarray(0, 7)]));
  assert.equal(log.length, 1);
  reader.stop();
  reader.feedChunk(Buffer.concat([f.subarray(7), f]));
  const buf = reader.nextBuffer();
  f.copy(buf);
  assert.equal(reader.onRead(f.length, buf), false);
  assert.equal(log.length, 1);
  assert.deepEqual(errors, [], 'stop is not a protocol error');
});

test('FrameReader: control frames pass their flags; a body is skipped', () => {
  const { sink, log, errors } = makeSink();
  const { reader } = makeReader([1], sink);
  const frames = [
    { am: 0, flags: 1, hdr: Buffer.alloc(0), pay: Buffer.alloc(0) },
    { am: 0, flags: 0xbeef, hdr: fill(10, 1), pay: fill(30, 2) },
    { am: AM_PLAIN, hdr: fill(1, 3), pay: fill(1, 4) },
  ];
  pump(reader, Buffer.concat([Buffer.from([0]), ...frames.map(encodeFrame)]), [1], ['data']);
  assert.deepEqual(errors, []);
  sameLog(log, expectedLog(frames));
});

// A control frame whose body is larger than the staging buffer once made the
// carry-over loop spin forever (no byte consumed, the event loop blocked).
// Run in a child process so a regression fails the test instead of hanging it.
test('FrameReader: a control frame with a body larger than the staging buffer does not hang the reader', () => {
  const readerUrl = new URL('../../dist/rail/tcp/reader.js', import.meta.url).href;
  const wireUrl = new URL('../../dist/rail/tcp/wire.js', import.meta.url).href;
  const script = `
    const { FrameReader } = await import(${JSON.stringify(readerUrl)});
    const { encodeFrameHeader, FRAME_HEADER } = await import(${JSON.stringify(wireUrl)});
    const frame = (am, hdrLen, payLen, flags) => {
      const b = Buffer.alloc(FRAME_HEADER + hdrLen + payLen, 0x5a);
      encodeFrameHeader(new DataView(b.buffer, b.byteOffset, b.byteLength), 0, am, hdrLen, payLen, flags);
      return b;
    };
    const out = [];
    for (const [mode, bodyLen] of [['data', 10000], ['onread', 10000], ['data', 300000], ['onread', 300000]]) {
      const got = [];
      const r = new FrameReader(4096, 256, 1 << 20);
      const sink = { endpoint: {}, counters: { msgsRecv: 0, bytesRecv: 0 }, railCounters: { msgsRecv: 0, bytesRecv: 0 }, handler: (am) => am === 1 ? { recv: (_e, rx) => got.push('am' + rx.payLen) } : undefined,
        control: (f) => got.push('ctrl' + f), protocolError: (why) => got.push('error: ' + why) };
      r.expect(1, () => r.startFrames(sink));
      const stream = Buffer.concat([Buffer.from([7]), frame(0, 200, bodyLen - 200, 1), frame(1, 0, 5, 0)]);
      let pos = 0;
      while (pos < stream.length) {
        if (mode === 'data') { const n = Math.min(1000, stream.length - pos); r.feedChunk(stream.subarray(pos, pos + n)); pos += n; }
        else { const b = r.nextBuffer(); const n = Math.min(b.length, stream.length - pos); stream.copy(b, 0, pos, pos + n); r.onRead(n, b); pos += n; }
      }
      out.push(got.join(','));
    }
    console.log(JSON.stringify(out));
  `;
  const res = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 10000 });
  assert.equal(res.signal, null, `the reader hung (killed by ${res.signal})`);
  assert.equal(res.status, 0, res.stderr);
  assert.deepEqual(JSON.parse(res.stdout), ['ctrl1,am5', 'ctrl1,am5', 'ctrl1,am5', 'ctrl1,am5']);
});
