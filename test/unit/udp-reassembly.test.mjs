// Reassembly of in-order udp segments: chunks land straight in the buffer the
// handler's place() names, fragments without place() gather in one reused
// buffer, and chunks that do not follow the fragment in progress are refused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Reassembler } from '../../dist/rail/udp/reassembly.js';
import { UdpCounters } from '../../dist/rail/udp/counters.js';
import { TrafficCounters } from '../../dist/core/counters.js';
import { CHUNK_BYTES, T_CHUNK, encodeChunk, encodeCommon } from '../../dist/rail/udp/wire.js';

function chunk(am, hdr, payLen, fragId, off, data) {
  const first = off === 0;
  const b = Buffer.alloc(CHUNK_BYTES + (first ? hdr.length : 0) + data.length);
  const v = new DataView(b.buffer);
  encodeCommon(v, T_CHUNK, 1, 0);
  encodeChunk(v, am, 0, hdr.length, payLen, fragId, off);
  if (first) hdr.copy(b, CHUNK_BYTES);
  data.copy(b, CHUNK_BYTES + (first ? hdr.length : 0));
  return [b, v, b.length];
}

function setup() {
  const got = [], errors = [];
  const placedInto = [];
  const handlers = [];
  handlers[1] = { recv: (_ep, rx) => got.push({ hdr: Buffer.from(rx.buf.subarray(rx.hdrOff, rx.hdrOff + rx.hdrLen)), pay: Buffer.from(rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen)), placed: null }) };
  handlers[2] = {
    place: (_ep, rx) => { const t = new Uint8Array(rx.payLen); placedInto.push(t); return t; },
    recv: (_ep, rx) => got.push({ hdr: Buffer.from(rx.buf.subarray(rx.hdrOff, rx.hdrOff + rx.hdrLen)), pay: null, placed: rx.placed }),
  };
  const owner = { endpoint: {}, counters: new TrafficCounters(), bye() {}, protocolError: (w) => errors.push(w) };
  return { r: new Reassembler(handlers, new UdpCounters(), owner, 64), got, errors, placedInto };
}

test('udp reassembly: placed chunks land in the named buffer; others gather and arrive whole', () => {
  const { r, got, placedInto } = setup();
  const hdr = Buffer.from('hdr!');
  const pay = Buffer.from(Array.from({ length: 3000 }, (_, i) => i & 0xff));
  for (const am of [1, 2]) {
    r.deliver(...chunk(am, hdr, 3000, 7 + am, 0, pay.subarray(0, 1000)));
    r.deliver(...chunk(am, hdr, 3000, 7 + am, 1000, pay.subarray(1000, 2500)));
    r.deliver(...chunk(am, hdr, 3000, 7 + am, 2500, pay.subarray(2500)));
  }
  assert.equal(got.length, 2);
  assert.deepEqual(got[0].hdr, hdr);
  assert.deepEqual(got[0].pay, pay);
  assert.deepEqual(got[1].hdr, hdr);
  assert.equal(got[1].placed, placedInto[0], 'the payload is the buffer place() returned');
  assert.deepEqual(Buffer.from(got[1].placed), pay);
});

test('udp reassembly: a chunk that does not follow the fragment in progress is a protocol error', () => {
  const { r, got, errors } = setup();
  const hdr = Buffer.from('h');
  r.deliver(...chunk(1, hdr, 3000, 5, 0, Buffer.alloc(1000)));
  r.deliver(...chunk(1, hdr, 3000, 5, 2000, Buffer.alloc(1000))); // skips 1000..2000
  assert.equal(errors.length, 1);
  assert.match(errors[0], /does not follow/);
  r.reset();
  r.deliver(...chunk(1, hdr, 3000, 6, 1000, Buffer.alloc(1000))); // no fragment in progress
  assert.equal(errors.length, 2);
  assert.equal(got.length, 0);
});
