// udp sessions pack whole fragments into one datagram: those queued behind a
// full window, and those sent in the synchronous run that already posted one
// (the session corks until the run ends). Over the simulated link of
// udp-session-rig.mjs, whose hosts check the session contract at every step.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AM, hdrOf, payload, rig, run, settled } from '../helpers/udp-session-rig.mjs';
import { COMMON_BYTES, FRAG_BYTES, RECORD_BYTES } from '../../dist/rail/udp/wire.js';

const delivered = (r, n, size) => {
  assert.equal(r.b.got.length, n);
  r.b.got.forEach((g, i) => { assert.equal(g.id, i, 'in the order sent'); assert.deepEqual(g.bytes, payload(i, size)); });
};

test('a window of sends in one run: the first goes at once, the rest as one datagram when the run ends', () => {
  const r = rig(0, { cork: true, limits: { dataMax: 2048 } });
  const s = r.a.session;
  for (let i = 0; i < 64; i++) assert.equal(s.send(AM, 0, hdrOf(i), 8, payload(i, 8), null), true);
  assert.equal(r.a.tx.first, 1, 'only the first is on the wire while the run lasts');
  assert.equal(s.corked, true);
  r.a.endRun();
  assert.equal(s.corked, false);
  assert.equal(r.a.tx.first, 2, 'the other 63 in one datagram');
  assert.equal(r.a.tx.log[1].len, COMMON_BYTES + 63 * (RECORD_BYTES + 16));
  assert.equal(r.a.counters.bundled, 62);
  assert.ok(run(r, () => s.idle && r.b.got.length === 64, 1000));
  delivered(r, 64, 8);
  settled(r.a);
});

test('a lone send in each run goes at once, as without corking', () => {
  const r = rig(0, { cork: true });
  const s = r.a.session;
  for (let i = 0; i < 5; i++) {
    s.send(AM, 0, hdrOf(i), 8, payload(i, 20), null);
    assert.equal(r.a.tx.first, i + 1, `send ${i} on the wire at the call`);
    r.a.endRun();
    assert.ok(run(r, () => s.idle && r.b.got.length === i + 1, 1000));
  }
  assert.ok(r.a.counters.bundled === 0);
  delivered(r, 5, 20);
  settled(r.a);
});

test('packing stops at dataMax; a tiny datagram that outgrows its buffer moves to a full one', () => {
  // dataMax 600, tinyMax 200 (the rig's). 100-byte payloads: 4 records fill 32+16+100 + 3 * 124 = 520.
  const r = rig(0, { cork: true });
  const s = r.a.session;
  for (let i = 0; i < 11; i++) s.send(AM, 0, hdrOf(i), 8, payload(i, 100), null);
  r.a.endRun();
  const lens = r.a.tx.log.filter((t) => t.first).map((t) => t.len);
  const one = FRAG_BYTES + 108, more = RECORD_BYTES + 108;
  assert.deepEqual(lens, [one, one + 3 * more, one + 3 * more, one + more]);
  assert.ok(lens.every((n) => n <= 600));
  // 40-byte payloads: the first goes at once; of the four queued, three fit a tiny buffer (200 bytes), the fourth does not.
  for (let i = 11; i < 16; i++) s.send(AM, 0, hdrOf(i), 8, payload(i, 40), null);
  r.a.endRun();
  assert.ok(run(r, () => s.idle && r.b.got.length === 16, 1000));
  const tail = r.a.tx.log.filter((t) => t.first).slice(4);
  assert.deepEqual(tail.map((t) => t.len), [FRAG_BYTES + 48, FRAG_BYTES + 48 + 3 * (RECORD_BYTES + 48)]);
  assert.equal(tail[1].prio, false, 'the packed datagram outgrew the tiny size: data channel');
  r.b.got.slice(11).forEach((g, k) => assert.deepEqual(g.bytes, payload(11 + k, 40)));
  settled(r.a); // the tiny segment was given back once, when its contents moved
});

test('a header-only checksum (RAILCOMM_UDP_CHECKSUM=0) packs nothing: it would not cover the later records', () => {
  const r = rig(0, { cork: true, limits: { headerSumOnly: true } });
  const s = r.a.session;
  for (let i = 0; i < 40; i++) s.send(AM, 0, hdrOf(i), 8, payload(i, 8), null);
  r.a.endRun();
  assert.ok(run(r, () => s.idle && r.b.got.length === 40, 2000));
  assert.ok(r.a.counters.bundled === 0);
  assert.equal(r.a.tx.first, 40);
  delivered(r, 40, 8);
});

test('packed datagrams lost, duplicated and reordered still deliver every fragment once, in order', () => {
  let k = 0;
  const acts = ['deliver', 'drop', 'deliver', 'dup', 'reorder', 'deliver', 'deliver'];
  const r = rig(0, { cork: true, limits: { window: 4 } });
  const s = r.a.session;
  let sent = 0;
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 25; i++, sent++) s.send(AM, 0, hdrOf(sent), 8, payload(sent, (sent * 37) % 90), null);
    r.a.endRun();
    assert.ok(run(r, () => s.idle && r.b.got.length === sent, 5000, () => acts[k++ % acts.length]));
  }
  assert.ok(r.a.counters.bundled > 200, `${r.a.counters.bundled} packed`);
  r.b.got.forEach((g, i) => { assert.equal(g.id, i); assert.deepEqual(g.bytes, payload(i, (i * 37) % 90)); });
  settled(r.a);
});

test('a handler that ends the session stops delivery in the middle of a packed datagram', () => {
  const r = rig(0, { cork: true });
  const s = r.a.session;
  let killed = false;
  const h = r.b.handlers[AM];
  r.b.handlers[AM] = { recv: (ep, rx) => { h.recv(ep, rx); if (r.b.got.length === 3) { killed = true; r.b.session.kill(new Error('closed')); } } };
  for (let i = 0; i < 10; i++) s.send(AM, 0, hdrOf(i), 8, payload(i, 8), null);
  r.a.endRun();
  run(r, () => killed && r.link.length === 0, 1000);
  assert.equal(r.b.got.length, 3, 'nothing delivered after the session ended');
});
