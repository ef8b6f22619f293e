// The rail conformance suite, part two (see conformance.test.mjs): the
// peer's memory, for the rails that offer it: single-copy access, registered
// memory reached natively (put, get) and memory handed out for sharing.

import assert from 'node:assert/strict';
import { resolveParams } from '../../dist/core/params.js';
import { DONE, NO_RESOURCE } from '../../dist/rail/api.js';
import { needAddon } from '../helpers/requires.mjs';
import { forRail, AM_MSG, RAILS, hdrOf, fill } from './harness.mjs';

for (const R of RAILS) {
  const { test, must } = forRail(R);

  // Optional single-copy reads of the peer's memory (RailEndpoint.ipc, used for rendezvous RGET).
  test(`${R.name}: an endpoint that offers single-copy access reads and writes the peer's memory exactly`, async (t) => {
    const pair = await R.open(resolveParams());
    try {
      const ep = pair.epAB();
      if (must.ipc === false) { assert.ok(ep.ipc === undefined || ep.ipc === null); t.skip('this rail offers no single-copy access (by design)'); return; }
      if (must.ipc === 'addon' && needAddon().skipped(t)) return;
      const src = fill(1 << 20, 3);
      const dst = new Uint8Array(1 << 20);
      assert.equal(ep.ipc.read(dst, ep.ipc.addressOf(src)), 0);
      assert.deepEqual(dst, src);
      const part = new Uint8Array(1000);
      assert.equal(ep.ipc.read(part, ep.ipc.addressOf(src.subarray(4096))), 0);
      assert.deepEqual(part, src.subarray(4096, 5096));
      // Writes too (the split rendezvous writes its second half into the receiver).
      const into = new Uint8Array(5000);
      assert.equal(ep.ipc.write(src.subarray(0, 3000), ep.ipc.addressOf(into.subarray(1000))), 0);
      assert.deepEqual(into.subarray(1000, 4000), src.subarray(0, 3000));
      assert.ok(into.subarray(0, 1000).every((b) => b === 0) && into.subarray(4000).every((b) => b === 0), 'nothing written around it');
      // An address that is not mapped is an error code, never a crash.
      assert.ok(ep.ipc.read(new Uint8Array(8), 16n) < 0, 'read of an unmapped address');
      assert.ok(ep.ipc.write(new Uint8Array(8), 16n) < 0, 'write to an unmapped address');
    } finally { await pair.close(); }
  });

  test(`${R.name}: registered memory is read and written by the peer natively (get, put), at an offset too; a dropped key is refused, never read`, async (t) => {
    if (!must.rma) { t.skip('this rail offers no native one-sided operations (by design)'); return; }
    const pair = await R.open(resolveParams());
    try {
      const ba = pair.epBA();
      // One message first: the peers know each other's addresses (and, on ofi, proved the job key).
      ba.sendCopy(AM_MSG, hdrOf(0), 8, null);
      await pair.a.until(() => pair.a.got.length === 1, 'first message');
      const op = () => {
        const o = { err: undefined };
        o.done = { railComplete: (e) => { o.err = e; pair.b.notify(); } };
        return o;
      };
      const run = async (what, start) => {
        const o = op();
        const st = start(o.done);
        assert.notEqual(st, NO_RESOURCE, what);
        // DONE: complete when the call returned (the rail never calls done then).
        if (st === DONE) return null;
        await pair.b.until(() => o.err !== undefined, what);
        return o.err;
      };
      const mem = fill(1 << 20, 6);
      const reg = pair.a.rail.registerMemory(mem);
      const key = pair.b.rail.unpackRemoteKey(reg.packed);
      assert.ok(key !== null, 'the packed key unpacks');
      const whole = new Uint8Array(1 << 20);
      assert.equal(await run('get of the whole registration', (d) => ba.rma.get(whole, key, 0, d)), null);
      assert.deepEqual(whole, mem);
      const part = new Uint8Array(1000);
      assert.equal(await run('get at an offset', (d) => ba.rma.get(part, key, 4096, d)), null);
      assert.deepEqual(part, mem.subarray(4096, 5096));
      assert.equal(await run('put at an offset', (d) => ba.rma.put(fill(3000, 7), key, 10000, d)), null);
      assert.deepEqual(mem.subarray(10000, 13000), fill(3000, 7));
      assert.deepEqual(mem.subarray(9000, 10000), fill(1 << 20, 6).subarray(9000, 10000), 'nothing written before it');
      pair.b.rail.dropRemoteKey(key);
      const after = new Uint8Array(1000);
      const err = await run('get with a dropped key', (d) => ba.rma.get(after, key, 0, d));
      assert.equal(err?.code, 'ERR_INVALID_ARG', 'a dropped key fails the operation');
      assert.ok(after.every((b) => b === 0), 'and reads nothing');
      reg.release();
    } finally { await pair.close(); }
  });

  test(`${R.name}: memory a rail hands out for sharing is found by segment and read by the peer exactly; unknown or short segments are error codes`, async (t) => {
    const pair = await R.open(resolveParams());
    try {
      if (!must.allocShared) { t.skip('this rail hands out no shared memory (by design)'); return; }
      const seg = pair.a.rail.allocShared(5000);
      assert.ok(seg instanceof Uint8Array && seg.length === 5000);
      seg.set(fill(5000, 4));
      const ab = pair.epAB();
      const where = ab.ipc.segmentOf(seg.subarray(100, 600));
      assert.equal(where.offset, 100);
      assert.equal(ab.ipc.segmentOf(new Uint8Array(10)), null, 'ordinary memory is in no segment');
      const ba = pair.epBA();
      const dst = new Uint8Array(500);
      assert.equal(ba.ipc.readSegment(dst, where.id, where.offset), 0);
      assert.deepEqual(dst, seg.subarray(100, 600));
      assert.equal(ba.ipc.readSegment(new Uint8Array(8), where.id + 1000, 0), -2, 'a segment that does not exist');
      assert.ok(ba.ipc.readSegment(new Uint8Array(100), where.id, 4990) < 0, 'past the segment\'s end');
    } finally { await pair.close(); }
  });

}
