// The rail conformance suite (DESIGN section 2): the same behaviours checked
// against every rail, through the rail interface alone. A new rail is done
// when it passes. Each rail supplies a factory that opens two rail instances
// that reach each other (for self: one instance, talking to itself): the rails,
// their sides and what each must declare are in harness.mjs. This file:
// what a rail declares, active messages, failures and closing; the other
// parts are conformance-memory.test.mjs (the peer's memory) and
// conformance-sleep.test.mjs (polled rails asleep and woken). Behaviours of
// one rail alone are in its own file (shm-rail, tcp-rail, udp-rail, ofi-rail).

import assert from 'node:assert/strict';
import { resolveParams } from '../../dist/core/params.js';
import { DONE, IN_PROGRESS, NO_RESOURCE } from '../../dist/rail/api.js';
import { needAddon } from '../helpers/requires.mjs';
import { forRail, polled, AM_MSG, AM_BULK, RAILS, hdrOf, fill, connected } from './harness.mjs';

for (const R of RAILS) {
  const { test, must } = forRail(R);

  test(`${R.name}: declares the capabilities and offers the parts the conformance table says`, async () => {
    const pair = await R.open(resolveParams());
    try {
      const caps = pair.a.rail.caps;
      const declared = Object.fromEntries(Object.keys(must.caps).map((k) => [k, Boolean(caps[k])]));
      assert.deepEqual(declared, must.caps, 'RailCaps flags');
      // Sizes the protocol layer relies on: a short payload also fits a copy, a copy a zero-copy send.
      assert.ok(caps.amHeaderMax >= 64 && caps.amShortMax <= caps.amCopyMax && caps.amCopyMax <= caps.amZcopyMax, JSON.stringify(caps));
      const ep = pair.epAB();
      const rail = pair.a.rail;
      const offers = {
        ipc: ep.ipc !== undefined && ep.ipc !== null,
        allocShared: typeof rail.allocShared === 'function',
        polled: typeof rail.poll === 'function' && typeof rail.settle === 'function' && typeof rail.sleep === 'function',
        bell: rail.bell !== undefined,
        reaches: typeof rail.whyNot === 'function',
        peek: typeof ep.peek === 'function' && typeof ep.takePeeked === 'function' && typeof ep.poll === 'function',
        rma: typeof rail.registerMemory === 'function' && typeof rail.unpackRemoteKey === 'function' && typeof rail.dropRemoteKey === 'function' && ep.rma != null,
        rendezvousReads: rail.rendezvousReads === true,
        syncWait: caps.syncWait === 'queue' && typeof rail.blockSync !== 'function' ? 'queue without blockSync' : caps.syncWait ?? null,
        beginFinalize: typeof rail.beginFinalize === 'function',
        probe: typeof ep.probe === 'function',
        describeState: typeof rail.describeState === 'function',
        giveUp: typeof ep.giveUp === 'function',
      };
      const want = { ...must };
      delete want.caps;
      if (want.ipc === 'addon') want.ipc = needAddon().reason === null;
      assert.deepEqual(offers, want, 'the optional parts of the rail interface');
    } finally { await pair.close(); }
  });

  test(`${R.name}: active messages arrive once, in order, with header and payload intact`, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ep = pair.epAB();
      const N = 2000;
      for (let i = 0; i < N; i++) {
        const st = ep.sendCopy(AM_MSG, hdrOf(i), 8, i % 10 === 0 ? null : fill(i % 300, i));
        assert.equal(st, DONE);
      }
      await pair.b.until(() => pair.b.got.length >= N, `${N} messages`);
      assert.equal(pair.b.got.length, N);
      pair.b.got.forEach((m, i) => {
        assert.equal(m.hdr.readUInt32LE(0), i, 'order');
        assert.equal(m.peer, pair.a.id);
        assert.deepEqual(new Uint8Array(m.payload), i % 10 === 0 ? new Uint8Array(0) : fill(i % 300, i));
      });
    } finally { await pair.close(); }
  });

  test(`${R.name}: headers of every length arrive byte for byte, from a reused scratch buffer, an exact copy or a misaligned view`, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ep = pair.epAB();
      const max = Math.min(40, ep.rail.caps.amHeaderMax);
      // The protocol layers write every header into one 64-byte scratch buffer; queued sends keep exact copies.
      const scratch = new Uint8Array(64);
      const odd = new Uint8Array(new ArrayBuffer(72), 1, 64);
      const want = [];
      for (let len = 0; len <= max; len++) {
        for (const form of ['scratch', 'copy', 'misaligned']) {
          const h = fill(len, len * 3 + form.length);
          const buf = form === 'scratch' ? scratch : form === 'misaligned' ? odd : h.slice();
          buf.fill(0xee);
          buf.set(h);
          assert.equal(ep.sendCopy(AM_MSG, buf, len, len % 2 === 0 ? fill(len, 9) : null), DONE);
          want.push(h);
        }
      }
      await pair.b.until(() => pair.b.got.length >= want.length, `${want.length} messages`);
      pair.b.got.forEach((m, i) => assert.deepEqual(new Uint8Array(m.hdr), want[i], `header ${i} (length ${want[i].length})`));
    } finally { await pair.close(); }
  });

  test(`${R.name}: every size class, copied and zero-copy, placed and not`, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ep = pair.epAB();
      const caps = ep.rail.caps;
      // Sizes within what the rail declares; a rail may answer NO_RESOURCE at any
      // time, and then the sender waits for ready() and tries again.
      const within = (xs, max) => [...new Set(xs.filter((n) => n <= max))];
      const sizes = within([0, 1, caps.amShortMax, caps.amShortMax + 1, 65536, 200000, caps.amCopyMax], caps.amCopyMax);
      const zsizes = within([1, 4096, 200000, caps.amZcopyMax], caps.amZcopyMax);
      const retry = async (send) => {
        for (;;) {
          const st = send();
          if (st !== NO_RESOURCE) return st;
          const seen = pair.a.ready;
          await pair.a.until(() => pair.a.ready > seen, 'ready after no resource');
        }
      };
      let expect = 0;
      const completions = [];
      for (const [i, n] of sizes.entries()) { assert.equal(await retry(() => ep.sendCopy(AM_MSG, hdrOf(i), 8, fill(n, i))), DONE); expect++; }
      for (const [i, n] of zsizes.entries()) {
        const done = { err: undefined, railComplete(err) { this.err = err; } };
        completions.push(done);
        const st = await retry(() => ep.sendZcopy(i % 2 ? AM_BULK : AM_MSG, hdrOf(100 + i), 8, fill(n, 100 + i), done));
        assert.ok(st === IN_PROGRESS || st === DONE);
        expect++;
      }
      await pair.b.until(() => pair.b.got.length >= expect, 'all sizes');
      for (const [i, n] of sizes.entries()) assert.deepEqual(new Uint8Array(pair.b.got[i].payload), fill(n, i), `copy ${n}`);
      for (const [i, n] of zsizes.entries()) {
        const m = pair.b.got[sizes.length + i];
        assert.deepEqual(new Uint8Array(m.payload), fill(n, 100 + i), `zero-copy ${n}`);
        assert.equal(Boolean(m.placed), i % 2 === 1, 'placed AMs go through place()');
      }
      await pair.a.until(() => completions.every((c) => c.err !== undefined), 'zero-copy completions');
      for (const c of completions) assert.equal(c.err, null);
    } finally { await pair.close(); }
  });

  test(`${R.name}: a peer that closed before this rank wrote to it fails the endpoint; once this rank finalizes (beginFinalize) it is a graceful close instead`, async (t) => {
    if (!must.beginFinalize) { t.skip('this rail has no finalize hook (by design)'); return; }
    for (const finalizing of [false, true]) {
      const pair = await R.open(resolveParams());
      try {
        const ab = pair.epAB();
        await pair.b.rail.close();
        polled.delete(pair.b.rail);
        if (finalizing) pair.a.rail.beginFinalize();
        ab.sendCopy(AM_MSG, hdrOf(0), 8, null);
        await pair.a.until(() => pair.a.failed.length === 1, 'a learns that b is gone');
        assert.deepEqual(pair.a.failed[0], { peer: pair.b.id, code: 'ERR_PEER_FAILED', graceful: finalizing }, `finalizing: ${finalizing}; ${pair.a.messages.join('; ')}`);
      } finally {
        await pair.a.rail.close();
        polled.delete(pair.a.rail);
      }
    }
  });

  test(`${R.name}: describeState says nothing (null) once what was sent has arrived and completed`, async (t) => {
    if (!must.describeState) { t.skip('this rail has no state line for the hang report (by design)'); return; }
    const pair = await R.open(resolveParams());
    try {
      const ab = pair.epAB();
      for (let i = 0; i < 4; i++) ab.sendCopy(AM_MSG, hdrOf(i), 8, fill(100, i));
      await pair.b.until(() => pair.b.got.length === 4, 'four messages');
      await pair.a.until(() => pair.a.rail.describeState() === null && pair.b.rail.describeState() === null, 'both rails idle');
    } finally { await pair.close(); }
  });

  test(`${R.name}: probe sends a frame the peer drops: nothing delivered, nothing failed, and the frames after it arrive in order`, async (t) => {
    if (!must.probe) { t.skip('this rail has no probe (by design)'); return; }
    const pair = await R.open(resolveParams());
    try {
      const ab = await connected(pair);
      ab.probe();
      ab.probe();
      ab.sendCopy(AM_MSG, hdrOf(1), 8, fill(40, 1));
      await pair.b.until(() => pair.b.got.length === 2, 'the message after two probes');
      assert.equal(pair.b.got[1].hdr.readUInt32LE(0), 1);
      assert.deepEqual([pair.a.failed, pair.b.failed], [[], []]);
    } finally { await pair.close(); }
  });

  // Rail.whyNot: wire-up asks it before choosing a rail for a peer, and ERR_NO_RAIL quotes it.
  test(`${R.name}: whyNot refuses an address it cannot use with a reason, and answers for its peer's`, async (t) => {
    const pair = await R.open(resolveParams());
    try {
      const rail = pair.a.rail;
      if (!must.reaches) { t.skip('this rail reaches every peer it is given (no whyNot, by design)'); return; }
      for (const bad of ['', 'garbage', '{"host":1}']) {
        const why = rail.whyNot(bad);
        assert.equal(typeof why, 'string', `address ${JSON.stringify(bad)}: refused`);
        assert.ok(why.length > 10, `address ${JSON.stringify(bad)}: a reason, got ${JSON.stringify(why)}`);
      }
      // shm is for other processes: a peer in this process goes over tbsm.
      const why = rail.whyNot(pair.b.rail.address());
      if (R.name !== 'shm') assert.equal(why, null, 'the peer\'s own address');
      else assert.match(why ?? '', /thread of this process/, 'the peer\'s own address: a thread of this process');
    } finally { await pair.close(); }
  });

  // RailEndpoint.abort: the layer above found the peer's data impossible.
  // Network rails tell the dropped peer at once (tcp: the connection closes;
  // udp: a RESET datagram), so it fails too instead of waiting on ACKs that
  // never come, and both closes return within about a second.
  const tellsDroppedPeer = R.name === 'tcp' || R.name === 'udp';
  if (must.giveUp) {
    test(`${R.name}: giveUp fails the endpoint at once (not graceful, not counted as bad), and a zero-copy send after it completes with that failure`, async () => {
      const pair = await R.open(resolveParams());
      try {
        const ep = await connected(pair);
        ep.giveUp('no heartbeat answer (a conformance test)');
        await pair.a.until(() => pair.a.failed.length > 0, 'the peer failed');
        assert.deepEqual(pair.a.failed[0], { peer: pair.b.id, code: 'ERR_PEER_FAILED', graceful: false });
        assert.equal(pair.a.rail.counters.snapshot().badFrames, 0, 'the peer sent nothing wrong');
        // What multirail striped onto the lane must not stay in flight: it completes, failed.
        let done = null;
        const st = ep.sendZcopy(AM_BULK, hdrOf(1), 8, fill(256 << 10, 1), { railComplete: (err) => { done = err; } });
        assert.notEqual(st, NO_RESOURCE);
        if (st === IN_PROGRESS) await pair.a.until(() => done !== null, 'the zero-copy send to complete');
        if (st === IN_PROGRESS) assert.equal(done?.code, 'ERR_PEER_FAILED');
        ep.giveUp('again'); // idempotent
        assert.equal(pair.a.failed.length, 1, 'failed once');
      } finally { await pair.close(); }
    });
  }

  test(`${R.name}: abort drops the peer (failed, not graceful, counted) and later sends neither throw nor arrive${tellsDroppedPeer ? '; the peer is told at once and both close within a second' : ''}`, async () => {
    const pair = await R.open(resolveParams());
    let closed = false;
    try {
      const ep = pair.epAB();
      assert.equal(ep.sendCopy(AM_MSG, hdrOf(0), 8, null), DONE);
      await pair.b.until(() => pair.b.got.length === 1, 'first message (connected)');
      const back = pair.a === pair.b ? null : pair.epBA();
      if (back !== null) {
        back.sendCopy(AM_MSG, hdrOf(0), 8, null);
        await pair.a.until(() => pair.a.got.length === 1, 'a message back (connected both ways)');
      }
      ep.abort('a conformance test says so');
      // Sent by the dropped peer before it can have heard of the drop: never delivered to the side that dropped it.
      back?.sendCopy(AM_MSG, hdrOf(2), 8, null);
      const bad = () => pair.a.rail.counters.snapshot().badFrames;
      assert.equal(bad(), 1, 'counted on the rail');
      assert.ok(pair.a.logged.some((l) => l.includes('a conformance test says so')), `logged, saying why: ${pair.a.logged.join(' | ')}`);
      if (!pair.canFail) return; // self: only this process writes to it; a bad message is logged, nothing fails
      await pair.a.until(() => pair.a.failed.length > 0, 'the peer failed');
      assert.deepEqual(pair.a.failed[0], { peer: pair.b.id, code: 'ERR_PEER_FAILED', graceful: false });
      ep.sendCopy(AM_MSG, hdrOf(1), 8, null);
      await new Promise((r) => setTimeout(r, 50));
      for (const r of polled) r.poll();
      assert.equal(pair.b.got.length, 1, 'nothing after the abort arrives');
      assert.equal(pair.a.got.length, 1, 'nothing from the dropped peer arrives');
      if (tellsDroppedPeer) {
        // The dropped side fails the dropper by itself, at once and not as a graceful close.
        await pair.b.until(() => pair.b.failed.length > 0, 'the dropped peer to learn of the drop', 1000);
        assert.deepEqual(pair.b.failed[0], { peer: pair.a.id, code: 'ERR_PEER_FAILED', graceful: false });
        // Its later sends are not delivered either (and do not throw).
        back.sendCopy(AM_MSG, hdrOf(3), 8, null);
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(pair.a.got.length, 1, 'nothing from the dropped peer arrives');
      }
      ep.abort('again'); // idempotent
      assert.equal(pair.a.failed.length, 1, 'failed once');
      // Neither side waits for the other at close (udp's closing limit is RAILCOMM_CONNECT_TIMEOUT, 30 s).
      const t0 = performance.now();
      closed = true;
      await pair.close();
      const ms = performance.now() - t0;
      assert.ok(ms < 1500, `closing both rails after the abort took ${ms.toFixed(0)} ms`);
    } finally { if (!closed) await pair.close(); }
  });

  // Every rail with a peer (self has none): a rank that finalizes closes its
  // rails, and its peers learn it finalized, not that it failed.
  if (R.name !== 'self') {
    test(`${R.name}: closing tells the peer it finalized (graceful)`, async () => {
      const pair = await R.open(resolveParams());
      await connected(pair);
      await pair.a.rail.close();
      await pair.b.until(() => pair.b.failed.length === 1, 'b learns a closed');
      assert.deepEqual(pair.b.failed[0], { peer: pair.a.id, code: 'ERR_PEER_FAILED', graceful: true });
      await pair.b.rail.close();
      polled.delete(pair.a.rail); polled.delete(pair.b.rail);
    });
  }

  if (R.name === 'tbsm' || R.name === 'shm') {
    test(`${R.name}: a full ring answers NO_RESOURCE, then ready() once the receiver drains it`, async () => {
      const pair = await R.open(resolveParams({ tbsmRing: 65536, shmRing: 65536 }));
      try {
        const ep = pair.epAB();
        const big = fill(8000, 1);
        let sent = 0, st;
        for (let i = 0; i < 1000; i++) { st = ep.sendCopy(AM_MSG, hdrOf(sent), 8, big); if (st === NO_RESOURCE) break; sent++; }
        assert.equal(st, NO_RESOURCE, 'a full ring says no resource');
        assert.ok(sent >= 4 && sent < 10, `a 64 KiB ring takes a few 8 KB frames (took ${sent})`);
        await pair.a.until(() => pair.a.ready > 0, 'ready upcall once b drained');
        assert.equal(ep.sendCopy(AM_MSG, hdrOf(sent), 8, big), DONE);
        sent++;
        await pair.b.until(() => pair.b.got.length === sent, 'everything accepted arrives');
        pair.b.got.forEach((m, i) => assert.equal(m.hdr.readUInt32LE(0), i));
      } finally { await pair.close(); }
    });

    test(`${R.name}: a ring that a dropped peer announces after the drop is never read`, async () => {
      const pair = await R.open(resolveParams());
      try {
        const ab = await connected(pair);
        ab.abort('a conformance test says so');
        pair.epBA().sendCopy(AM_MSG, hdrOf(1), 8, null); // b's first frame to a: a new ring
        await new Promise((r) => setTimeout(r, 50));
        for (let i = 0; i < 3; i++) for (const r of polled) r.poll();
        assert.equal(pair.a.got.length, 0);
      } finally { await pair.close(); }
    });

  }
}
