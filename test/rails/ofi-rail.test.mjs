// The ofi rail's own behaviours beyond the conformance suite, per libfabric
// provider (harness.mjs opens them): back-pressure from its transmit entries,
// the graceful close, a vanished peer process, connection retries, a HELLO
// without the job key, no descriptor of libfabric's in a child process, and a
// scalable endpoint that falls back.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveParams } from '../../dist/core/params.js';
import { Logger } from '../../dist/core/log.js';
import { endpointId } from '../../dist/core/ids.js';
import { DONE, IN_PROGRESS, NO_RESOURCE } from '../../dist/rail/api.js';
import { ofiComponent } from '../../dist/rail/ofi/component.js';
import { OfiRail } from '../../dist/rail/ofi/rail.js';
import { FRAME_HEAD, encodeHead, headAm, headFlags, headHdrLen, headJob, headPayLen, headRank } from '../../dist/rail/ofi/wire.js';
import { loadOfi } from '../../dist/rail/ofi/native.js';
import { PEER_GONE_MS, MARGIN_MS, within } from '../helpers/promises.mjs';
import { JOB, polled, AM_MSG, makeSide, first, RAILS, hdrOf, fill, connected } from './harness.mjs';

// ofi-specific behaviours, per provider: back-pressure from its own
// transmit entries, the graceful close, a vanished peer process, a HELLO
// without the job key, and no descriptor of libfabric's in a child process.
for (const R of RAILS.filter((r) => r.name.startsWith('ofi-'))) {
  const opts = R.missing.reason === null ? {} : R.missing;

  test(`${R.name}: out of transmit entries it answers NO_RESOURCE, then ready() once its completions are read, and everything arrives in order`, opts, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ep = await connected(pair);
      const big = fill(60000, 1);
      let sent = 1, st;
      for (let i = 0; i < 1000; i++) { st = ep.sendCopy(AM_MSG, hdrOf(sent), 8, big); if (st === NO_RESOURCE) break; sent++; }
      assert.equal(st, NO_RESOURCE, 'the large transmit entries run out');
      // The hang report's line for the rail names the blocked sender's peer (b, rank 1).
      assert.match(pair.a.rail.describeState() ?? '', /^ofi rail .*senders waiting for room: \S+:1$/);
      await pair.a.until(() => pair.a.ready > 0, 'ready upcall');
      assert.equal(ep.sendCopy(AM_MSG, hdrOf(sent), 8, big), DONE);
      sent++;
      await pair.b.until(() => pair.b.got.length === sent, 'everything accepted arrives', 30_000);
      pair.b.got.forEach((m, i) => assert.equal(m.hdr.readUInt32LE(0), i));
      await pair.a.until(() => pair.a.rail.describeState() === null, 'nothing held once every completion is read');
    } finally { await pair.close(); }
  });

  // A frame that comes before its turn stays in its receive slot until then.
  // udp;ofi_rxd once wrote into a slot it had completed (bench/RESULTS.md): the
  // rail then checks, at its turn, that the slot still holds that frame. The
  // provider's stray write is played here by the test writing another frame's
  // head over the kept one's (the slot is not posted while kept); the sender's sequence
  // number is skipped and rewound so that its frames arrive out of turn.
  test(`${R.name}: a frame kept in its receive slot until its turn, changed there meanwhile, fails the peer instead of being delivered`, opts, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ab = pair.epAB();
      ab.sendCopy(AM_MSG, hdrOf(0), 8, fill(8, 0));
      await pair.b.until(() => pair.b.got.length === 1, 'first message (b heard a)');
      const turn = ab.txSeq;
      ab.txSeq = (turn + 1) >>> 0;
      ab.sendCopy(AM_MSG, hdrOf(2), 8, fill(8, 2)); // one ahead of its turn: kept
      const rb = pair.b.rail;
      const kept = () => rb.early.flatMap((m) => (m === undefined ? [] : [...m.entries()]));
      await pair.b.until(() => kept().length === 1, 'the early frame kept');
      const [[seq, k]] = kept();
      assert.equal(seq, (turn + 1) >>> 0);
      assert.equal(typeof k, 'number', 'kept in its receive slot, not copied');
      const at = (k % rb.hold.length) * rb.opened.rxSlot;
      // The stray write: a well-formed head of another frame of the same sender now sits in the slot.
      const v = new DataView(rb.rxBuf.buffer, rb.rxBuf.byteOffset + at, FRAME_HEAD);
      encodeHead(v, headAm(v, 0), headFlags(v, 0), headHdrLen(v, 0), headPayLen(v, 0), headRank(v, 0), headJob(v, 0), (turn + 7) >>> 0);
      ab.txSeq = turn;
      ab.sendCopy(AM_MSG, hdrOf(1), 8, fill(8, 1)); // its turn now: delivered, then the kept one checked
      await pair.b.until(() => pair.b.failed.length === 1, 'b fails a');
      assert.deepEqual(pair.b.failed[0], { peer: pair.a.id, code: 'ERR_PEER_FAILED', graceful: false });
      assert.match(pair.b.messages[0], /receive slot \d+ no longer holds its frame #\d+/);
      assert.deepEqual(pair.b.got.map((g) => g.hdr.readUInt32LE(0)), [0, 1], 'the changed frame is never delivered');
    } finally { await pair.close(); }
  });

  test(`${R.name}: poll(reads) reads an empty queue that many times before it returns, and returns at the first frame`, opts, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ab = await connected(pair);
      await pair.a.until(() => pair.a.rail.describeState() === null, 'a settled');
      // (A liveness PING may land in any poll: the first poll(16) that found nothing counts.)
      let quiet = false;
      for (let i = 0; i < 100 && !quiet; i++) quiet = !pair.b.rail.poll(16);
      assert.ok(quiet, 'the queue goes quiet');
      assert.equal(pair.b.rail.readsMade, 16, 'an empty queue: all 16 reads');
      ab.sendCopy(AM_MSG, hdrOf(1), 8, fill(8, 1));
      let got = false;
      for (let i = 0; i < 100_000 && !got; i++) {
        got = pair.b.rail.poll(16);
        assert.ok(pair.b.rail.readsMade >= 1 && pair.b.rail.readsMade <= 16, `reads made: ${pair.b.rail.readsMade}`);
      }
      assert.ok(got && pair.b.got.length === 2, 'the frame, delivered by poll(16)');
    } finally { await pair.close(); }
  });

  test(`${R.name}: a look at its queue says once whether a peer's writes and reads into this rank's memory were served (shm, udp;ofi_rxd: no wait fd, so the idle timer looks again soon)`, opts, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ab = await connected(pair);
      const b = loadOfi();
      const hb = pair.b.rail.h;
      const counts = R.name === 'ofi-shm' || R.name === 'ofi-udp';
      const mem = new Uint8Array(4096);
      const reg = pair.b.rail.registerMemory(mem);
      const key = pair.a.rail.unpackRemoteKey(reg.packed);
      b.remoteActivity(hb);
      assert.equal(b.remoteActivity(hb), false, 'nothing served since the last look');
      for (const [what, start] of [['put', (d) => ab.rma.put(fill(64, 5), key, 128, d)], ['get', (d) => ab.rma.get(new Uint8Array(64), key, 128, d)]]) {
        let done = false;
        const st = start({ railComplete: (e) => { assert.equal(e, null, what); done = true; } });
        assert.notEqual(st, NO_RESOURCE, what);
        // b's progress serves it (within one process there is no cross-memory attach): its look
        // where it counts them (reading the counter is progress), its poll elsewhere.
        let seen = false;
        const t0 = Date.now();
        while (!done && Date.now() - t0 < 5000) {
          pair.a.rail.poll();
          if (counts) seen ||= b.remoteActivity(hb); else pair.b.rail.poll();
          await new Promise((r) => setImmediate(r));
        }
        assert.ok(done, `${what} complete`);
        if (counts && !seen) seen = b.remoteActivity(hb);
        assert.equal(seen, counts, `${what}: served, seen by a look`);
        assert.equal(b.remoteActivity(hb), false, `${what}: seen once`);
      }
      assert.deepEqual(mem.subarray(128, 192), fill(64, 5), 'the put landed');
      reg.release();
    } finally { await pair.close(); }
  });

  test(`${R.name}: asleep on its timer, a rank whose look serves a peer's put wakes its progress where that progress moves the data (udp;ofi_rxd), and only looks again where it need not (shm)`, opts, async (t) => {
    if (!['ofi-shm', 'ofi-udp', 'ofi-tcp-nowait'].includes(R.name)) { t.skip('the rail sleeps on a wait fd here, not on its timer'); return; }
    const pair = await R.open(resolveParams());
    try {
      const ab = await connected(pair);
      const mem = new Uint8Array(4096);
      const reg = pair.b.rail.registerMemory(mem);
      const key = pair.a.rail.unpackRemoteKey(reg.packed);
      // Only b's own timer looks at its queue from here (nothing else polls it).
      let woke = 0;
      assert.equal(pair.b.rail.sleep(() => { woke++; }), true, 'b asleep');
      let done = false;
      const st = ab.rma.put(fill(64, 9), key, 256, { railComplete: (e) => { assert.equal(e, null); done = true; } });
      assert.equal(st, IN_PROGRESS, 'a put the target serves (within one process: no cross-memory attach)');
      const t0 = Date.now();
      while (!done && Date.now() - t0 < 5000) { pair.a.rail.poll(); await new Promise((r) => setTimeout(r, 1)); }
      assert.ok(done, 'served by the look');
      assert.deepEqual(mem.subarray(256, 320), fill(64, 9));
      assert.equal(woke, R.name === 'ofi-udp' ? 1 : 0, 'woken only where the provider counts served operations and needs progress for them');
      reg.release();
    } finally { await pair.close(); }
  });

  test(`${R.name}: a closed rail's native handle names nothing, even once another rail took its slot`, opts, async () => {
    const first = await R.open(resolveParams());
    const old = [first.a.rail.h, first.b.rail.h];
    await first.close();
    const next = await R.open(resolveParams());
    try {
      const b = loadOfi();
      for (const h of old) {
        assert.ok(h !== next.a.rail.h && h !== next.b.rail.h, 'a reused slot gives a new handle');
        assert.throws(() => b.inFlight(h), /no such endpoint/);
        assert.equal(b.sendHead(h, 0, 8), -9, 'sendHead on it: -FI_EBADF');
      }
      const ab = next.epAB();
      ab.sendCopy(AM_MSG, hdrOf(0), 8, fill(8, 0));
      await next.b.until(() => next.b.got.length === 1, 'the new rails work');
    } finally { await next.close(); }
  });

  test(`${R.name}: frames at the edge of the head's payload room (sendHead up to 256 bytes, send past it) arrive whole, with the largest header too`, opts, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ab = pair.epAB();
      const bigHdr = new Uint8Array(256); // HEADER_MAX: the head's whole header room
      for (let i = 0; i < bigHdr.length; i++) bigHdr[i] = (i * 7 + 3) & 0xff;
      const cases = [[0, 8], [1, 8], [255, 8], [256, 8], [257, 8], [256, 256], [257, 256], [0, 256]];
      cases.forEach(([n, h], i) => {
        const hdr = h === 8 ? hdrOf(i) : (() => { const c = bigHdr.slice(); new DataView(c.buffer).setUint32(0, i, true); return c; })();
        assert.equal(ab.sendCopy(AM_MSG, hdr, h, n === 0 ? null : fill(n, i)), DONE);
      });
      await pair.b.until(() => pair.b.got.length === cases.length, 'every frame');
      pair.b.got.forEach((m, i) => {
        const [n, h] = cases[i];
        assert.equal(m.hdr.length, h);
        assert.equal(m.hdr.readUInt32LE(0), i, 'in order');
        if (h === 256) assert.deepEqual(m.hdr.subarray(4), Buffer.from(bigHdr.subarray(4)), 'the whole header');
        assert.deepEqual(m.payload, Buffer.from(fill(n, i)), `payload of ${n} bytes after a ${h}-byte header`);
      });
    } finally { await pair.close(); }
  });

  test(`${R.name}: a hundred zero-copy frames of the largest size in flight with small ones between (completed out of order by rendezvous providers) arrive whole and in order`, opts, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ep = pair.epAB();
      const max = ep.rail.caps.amZcopyMax;
      const sent = [];
      const dones = [];
      for (let i = 0; i < 200; i++) {
        const big = i % 2 === 0;
        const payload = fill(big ? max : 40, i);
        for (;;) {
          const done = { err: undefined, railComplete(err) { this.err = err; } };
          const st = big ? ep.sendZcopy(AM_MSG, hdrOf(i), 8, payload, done) : ep.sendCopy(AM_MSG, hdrOf(i), 8, payload);
          if (st !== NO_RESOURCE) { if (big) dones.push(done); break; }
          const seen = pair.a.ready;
          await pair.a.until(() => pair.a.ready > seen, 'ready after no resource', 30_000);
        }
        sent.push(i);
      }
      await pair.b.until(() => pair.b.got.length === sent.length, 'every frame', 60_000);
      pair.b.got.forEach((m, i) => {
        assert.equal(m.hdr.readUInt32LE(0), i, 'order');
        assert.ok(Buffer.from(fill(i % 2 === 0 ? max : 40, i)).equals(m.payload), `frame ${i} intact`);
      });
      await pair.a.until(() => dones.every((d) => d.err !== undefined), 'zero-copy completions');
      assert.ok(dones.every((d) => d.err === null));
    } finally { await pair.close(); }
  });

  test(`${R.name}: blockSync (a synchronous call's wait) keeps its bound when nothing comes and returns early when a frame waits`, opts, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ab = await connected(pair);
      const b = pair.b.rail;
      let t0 = performance.now();
      b.blockSync(20);
      const idle = performance.now() - t0;
      assert.ok(idle < 1000, `an idle blockSync(20) took ${idle.toFixed(1)} ms`);
      ab.sendCopy(AM_MSG, hdrOf(1), 8, fill(100, 1));
      for (let i = 0; i < 20; i++) pair.a.rail.poll();
      t0 = performance.now();
      b.blockSync(5000);
      const busy = performance.now() - t0;
      assert.ok(busy < 2500, `a frame waited, yet blockSync(5000) took ${busy.toFixed(1)} ms`);
      await pair.b.until(() => pair.b.got.length === 2, 'the frame is delivered');
    } finally { await pair.close(); }
  });

  // (Closing tells the peer it finalized: the shared conformance case.)

  // The peer's BYE can overtake the provider's completion of a send the peer
  // received (on sockets the completion comes back on the connection we
  // opened, the BYE on the one the peer opened): seen as a bandwidth benchmark
  // whose last send failed with "peer finalized" after its receiver had it
  // all. The provider's completions are held back here, as that race does.
  test(`${R.name}: a send whose completion comes after the peer's BYE completes; one the provider never completes fails after the drain time`, opts, async (t) => {
    const pair = await R.open(resolveParams());
    const a = pair.a.rail;
    if (!a.gathers) { await pair.close(); t.skip('this provider gathers no iovec: its zero-copy sends are copied and complete at once'); return; }
    const held = [];
    let closedB = false;
    try {
      const ab = await connected(pair);
      pair.epBA().sendCopy(AM_MSG, hdrOf(0), 8, null); // (a BYE comes from a peer that introduced itself)
      await pair.a.until(() => pair.a.got.length === 1, 'a message back');
      a.ops.complete = (id, value) => { held.push([id, value]); }; // the provider's completions, held back
      const result = ['pending', 'pending'];
      for (const i of [0, 1]) {
        ab.sendZcopy(AM_MSG, hdrOf(i + 1), 8, fill(40_000, i + 1), { railComplete: (err) => { result[i] = err === null ? 'ok' : err.message; } });
      }
      await pair.b.until(() => pair.b.got.length === 3, 'both frames arrive');
      await pair.a.until(() => held.length === 2, 'the provider completes both sends (held back)');
      await pair.b.rail.close(); // b finalizes: its BYE
      closedB = true;
      await pair.a.until(() => pair.a.failed.length === 1, 'a learns that b finalized');
      assert.deepEqual(pair.a.failed[0], { peer: pair.b.id, code: 'ERR_PEER_FAILED', graceful: true });
      assert.deepEqual(result, ['pending', 'pending'], 'the BYE fails neither send');
      delete a.ops.complete;
      a.ops.complete(...held[0]); // the first one's completion comes now
      assert.equal(result[0], 'ok', 'it completes');
      // The second one's never comes: it fails once the drain time passes (2 s), saying why.
      const t0 = Date.now();
      await pair.a.until(() => result[1] !== 'pending', 'the drain time to pass', 6000);
      assert.match(result[1], /finalized/);
      assert.ok(Date.now() - t0 >= 1500, `failed after ${Date.now() - t0} ms, before the drain time`);
    } finally {
      delete a.ops.complete;
      if (closedB) { await a.close(); polled.delete(a); polled.delete(pair.b.rail); } else await pair.close();
    }
  });

  test(`${R.name}: a peer on this host whose process is gone fails within a second`, opts, async () => {
    const pair = await R.open(resolveParams());
    try {
      const { spawnSync } = await import('node:child_process');
      const dead = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
      // b's address, claimed by a process that no longer exists.
      const addr = pair.b.rail.address().split('|').map((f, i) => (i === 4 ? String(dead) : f)).join('|');
      const ep = pair.a.rail.endpoint(endpointId(JOB, 5), addr);
      ep.sendCopy(AM_MSG, hdrOf(0), 8, null);
      const t0 = Date.now();
      await pair.a.until(() => pair.a.failed.length === 1, 'the dead peer fails', 5000);
      const ms = Date.now() - t0;
      assert.ok(ms < within(PEER_GONE_MS), `took ${ms} ms, README promises ${PEER_GONE_MS} (+${MARGIN_MS} margin)`);
      assert.match(pair.a.messages[0], new RegExp(`process ${dead} is gone`));
    } finally { await pair.close(); }
  });

  // The sockets provider answers FI_ENOENT at the call when its connect attempt
  // failed: a race between its threads (a connection being made or dropped as
  // another thread looks it up), seen under load; the peer lives. The provider's
  // answer is injected here (the race cannot be forced): this rail's sends find
  // no connection `refusals` times, then the real send runs.
  // Both of the binding's send calls: send, and sendHead (small frames built in the rail's head).
  const refuseSends = (rail, refusals) => {
    const b = rail.b, real = b.send, realHead = b.sendHead, h = rail.h;
    let left = refusals;
    const refusing = (fn) => function refused(handle, ...rest) {
      if (handle === h && left > 0) { left--; return -2; }
      return fn.call(this, handle, ...rest);
    };
    b.send = refusing(real);
    b.sendHead = refusing(realHead);
    return () => { b.send = real; b.sendHead = realHead; };
  };
  // (The retry is the rail's own logic, the same on every provider: checked on
  // sockets, which answers FI_ENOENT, and on tcp;ofi_rxm.)
  const retryOpts = R.name === 'ofi-sockets' || R.name === 'ofi-tcp' ? opts : { skip: 'the retry logic is provider-independent: checked on ofi-sockets and ofi-tcp' };

  test(`${R.name}: sends that find no connection (FI_ENOENT) are tried again later: the HELLO, copied and zero-copy frames all arrive, in order, and the peer stays`, retryOpts, async () => {
    const pair = await R.open(resolveParams());
    let restore = () => {};
    try {
      const ab = pair.epAB();
      const big = fill(40_000, 7);
      // What the layer above does: after NO_RESOURCE, wait for ready() and send the same frame again.
      const sendAll = async (frames) => {
        for (const [i, payload] of frames) {
          for (;;) {
            const readyBefore = pair.a.ready;
            const st = payload === big ? ab.sendZcopy(AM_MSG, hdrOf(i), 8, payload, { railComplete: (err) => { if (err) throw err; } }) : ab.sendCopy(AM_MSG, hdrOf(i), 8, payload);
            if (st !== NO_RESOURCE) break;
            await pair.a.until(() => pair.a.ready > readyBefore, `ready() after frame ${i} was refused`, 5000);
          }
        }
      };
      restore = refuseSends(pair.a.rail, 2); // the HELLO itself is refused twice, then sent (sequence 0)
      await sendAll([[0, null]]);
      await pair.b.until(() => pair.b.got.length === 1, 'the first frame, after its HELLO');
      restore();
      restore = refuseSends(pair.a.rail, 3);
      await sendAll([[1, fill(100, 1)], [2, big], [3, fill(100, 3)]]);
      await pair.b.until(() => pair.b.got.length === 4, 'every frame');
      assert.deepEqual(pair.b.got.map((g) => g.hdr.readUInt32LE(0)), [0, 1, 2, 3]);
      assert.deepEqual(pair.b.got[2].payload, Buffer.from(big));
      assert.deepEqual([pair.a.failed, pair.b.failed], [[], []]);
      assert.equal(pair.a.rail.counters.snapshot().noConnection, 5);
    } finally { restore(); await pair.close(); }
  });

  test(`${R.name}: a refused send is re-driven by the rail's poll alone once its retry is due (a synchronous wait runs no event loop)`, retryOpts, async () => {
    const pair = await R.open(resolveParams());
    let restore = () => {};
    try {
      const ab = await connected(pair);
      restore = refuseSends(pair.a.rail, 1);
      const readyBefore = pair.a.ready;
      assert.equal(ab.sendCopy(AM_MSG, hdrOf(1), 8, null), NO_RESOURCE);
      const t0 = Date.now();
      while (pair.a.ready === readyBefore && Date.now() - t0 < 2000) pair.a.rail.poll(); // no await: no timer can fire
      assert.equal(pair.a.ready, readyBefore + 1, 'ready() from poll');
      assert.equal(ab.sendCopy(AM_MSG, hdrOf(1), 8, null), DONE);
      await pair.b.until(() => pair.b.got.length === 2, 'the refused frame');
    } finally { restore(); await pair.close(); }
  });

  test(`${R.name}: a peer that stays without a connection (FI_ENOENT) fails once the connect timeout passes, naming it; finalizing, it is closed quietly after a second`, retryOpts, async () => {
    for (const finalizing of [false, true]) {
      const connectTimeout = finalizing ? 30_000 : 600;
      const limit = finalizing ? 1000 : connectTimeout;
      const pair = await R.open(resolveParams({ connectTimeout }));
      let restore = () => {};
      try {
        const ab = pair.epAB();
        if (finalizing) pair.a.rail.beginFinalize();
        restore = refuseSends(pair.a.rail, Infinity);
        const t0 = Date.now();
        assert.equal(ab.sendCopy(AM_MSG, hdrOf(0), 8, null), NO_RESOURCE, 'its HELLO finds no connection');
        // The layer above sends again at each ready() until the peer fails.
        while (pair.a.failed.length === 0) {
          const readyBefore = pair.a.ready;
          await pair.a.until(() => pair.a.ready > readyBefore || pair.a.failed.length > 0, 'a retry or the failure', limit + 5000);
          if (pair.a.failed.length === 0) ab.sendCopy(AM_MSG, hdrOf(0), 8, null);
        }
        const ms = Date.now() - t0;
        assert.deepEqual(pair.a.failed, [{ peer: pair.b.id, code: 'ERR_PEER_FAILED', graceful: finalizing }]);
        assert.ok(ms >= limit && ms < limit + 2000, `finalizing ${finalizing}: failed after ${ms} ms (limit ${limit})`);
        if (!finalizing) assert.match(pair.a.messages[0], /no connection to it for \d+ ms \(RAILCOMM_CONNECT_TIMEOUT 600\)/);
        const refusals = pair.a.rail.counters.snapshot().noConnection;
        assert.ok(refusals >= 3 && refusals < 40, `tried again with a growing pause: ${refusals} refusals`);
        assert.equal(ab.sendCopy(AM_MSG, hdrOf(1), 8, null), DONE, 'a failed peer takes sends and drops them');
      } finally { restore(); await pair.close(); }
    }
  });

  test(`${R.name}: a HELLO that does not prove the job key is refused and counted; nothing from that sender arrives`, opts, async () => {
    const params = R.tune?.(resolveParams()) ?? resolveParams();
    const a = makeSide(0, params);
    const b = makeSide(1, params);
    a.env = { ...a.env, jobKey: 'cd'.repeat(32) };
    const dev = ofiComponent.queryDevices(params).find((d) => d.name === R.device);
    a.rail = await ofiComponent.open(dev, a.env);
    b.rail = await ofiComponent.open(dev, b.env);
    polled.add(a.rail); polled.add(b.rail);
    try {
      const ep = a.rail.endpoint(b.id, b.rail.address());
      for (let i = 0; i < 5; i++) ep.sendCopy(AM_MSG, hdrOf(i), 8, fill(10, i));
      await b.until(() => b.rail.counters.snapshot().refused >= 5, 'the HELLO and the frames after it refused');
      assert.equal(b.got.length, 0);
      assert.equal(b.accepted, 0);
    } finally {
      await a.rail.close(); await b.rail.close();
      polled.delete(a.rail); polled.delete(b.rail);
    }
  });

  test(`${R.name}: a child process inherits none of libfabric's descriptors (close-on-exec)`, opts, async () => {
    const pair = await R.open(resolveParams());
    try {
      const ab = pair.epAB(), ba = pair.epBA();
      ab.sendCopy(AM_MSG, hdrOf(0), 8, null);
      ba.sendCopy(AM_MSG, hdrOf(0), 8, null);
      await pair.b.until(() => pair.b.got.length === 1 && pair.a.got.length === 1, 'both ways');
      await new Promise((r) => setTimeout(r, 150)); // the rail's sweep after a new peer
      const { spawnSync } = await import('node:child_process');
      const ls = spawnSync('sh', ['-c', 'ls -l /proc/$$/fd'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).stdout;
      // (stdio are the test runner's sockets: only descriptors past them count.)
      const inherited = ls.split('\n').filter((l) => /-> (socket|anon_inode)/.test(l) && Number(/ (\d+) ->/.exec(l)?.[1]) > 2);
      assert.deepEqual(inherited, [], `descriptors a child inherits:\n${ls}`);
    } finally { await pair.close(); }
  });
}

// A scalable endpoint that will not open (a provider that lists contexts but
// refuses the shared domain): the rank warns and opens an endpoint of its own,
// which works with other plain endpoints. libfabric's sockets provider opens
// them here, so the refusal is injected at the binding's open (the rest is the
// real provider); the job-level consequence (such a rank and a scalable
// endpoint's contexts cannot talk, and say so) is test/jobs/ofi-sep-mixed.mjs.
{
  const R = RAILS.find((r) => r.name === 'ofi-sockets');
  test('ofi-sockets: a scalable endpoint that fails to open falls back to a plain endpoint, with a warning, and works', R.missing.reason === null ? {} : R.missing, async () => {
    // Scalable endpoints on, their count from the thread ranks, whatever the environment says.
    const params = resolveParams({ ofiSep: true, ofiContexts: 0 });
    const dev = ofiComponent.queryDevices(params).find((d) => d.name === R.device);
    const real = loadOfi();
    const infos = real.getinfo().usable.filter((i) => `${i.provider}/${i.domain}` === R.device);
    const info = infos.find((i) => i.addrFormat === 2) ?? infos[0];
    const asked = [];
    const refusing = { ...real, open(o) { asked.push(o.contexts ?? 0); if ((o.contexts ?? 0) > 1) throw new Error('injected: fi_scalable_ep refused'); return real.open(o); } };
    const a = makeSide(0, params);
    const b = makeSide(1, params);
    a.env = { ...a.env, threadRanks: 2, log: new Logger('warn', 'railcomm', (line) => a.logged.push(line)) };
    // Unrefused, two thread ranks get a context of one scalable endpoint: the injection is what changes it.
    const sep = new OfiRail(dev, { ...b.env, threadRanks: 2 }, real, info);
    try {
      assert.equal(sep.opened.contexts, 2, 'sockets opens a scalable endpoint of 2 contexts here');
    } finally { await sep.close(); }
    try {
      a.rail = new OfiRail(dev, a.env, refusing, info);
      b.rail = await ofiComponent.open(dev, b.env);
      polled.add(a.rail); polled.add(b.rail);
      assert.deepEqual(asked, [2, 0], 'a scalable endpoint asked for, then a plain one');
      assert.equal(a.rail.opened.contexts, 0);
      assert.ok(a.logged.some((l) => /no scalable endpoint of 2 contexts \(injected: fi_scalable_ep refused\); this rank opens an endpoint of its own/.test(l)), `the warning: ${a.logged.join(' | ')}`);
      const ab = a.rail.endpoint(b.id, b.rail.address());
      const ba = b.rail.endpoint(a.id, a.rail.address());
      for (let i = 0; i < 3; i++) { ab.sendCopy(AM_MSG, hdrOf(i), 8, fill(10, i)); ba.sendCopy(AM_MSG, hdrOf(i), 8, fill(12, i)); }
      await b.until(() => b.got.length === 3 && a.got.length === 3, 'three frames each way');
      assert.deepEqual(b.got.map((g) => g.payload.length), [10, 10, 10]);
      assert.deepEqual(a.got.map((g) => g.payload.length), [12, 12, 12]);
    } finally {
      await a.rail?.close(); await b.rail?.close();
      polled.delete(a.rail); polled.delete(b.rail);
    }
  });
}

// A peer given up on while the response to a read from it is half received
// (multirail drops a silent ofi lane so): libfabric 1.17's tcp provider
// completes that read twice when the connection is flushed at close, and
// ofi_rxm crashes on the second completion's NULL context (segfault in
// fi_close; rail/ofi/close-hazard.ts). The rail then leaves its endpoint open
// to the process's exit. In a process of its own, which must exit cleanly.
{
  const R = RAILS.find((r) => r.name === 'ofi-tcp');
  test('ofi-tcp: a rail closes without crashing after giving up on a peer whose read response is half received', R.missing.reason === null ? {} : R.missing, async () => {
    const { spawnSync } = await import('node:child_process');
    const script = new URL('./ofi-given-up-mid-read.mjs', import.meta.url).pathname;
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.stdout, 'midway\nclosed\n', `stdout: ${r.stdout}\nstderr: ${r.stderr.slice(-2000)}`);
    assert.equal(r.signal, null, `killed by ${r.signal}: ${r.stderr.slice(-2000)}`);
    assert.equal(r.status, 0, r.stderr.slice(-2000));
  });
}
