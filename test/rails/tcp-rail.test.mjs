// The tcp rail's own behaviours, beside the conformance suite it passes
// (conformance*.test.mjs): back-pressure, simultaneous connects, a peer lost
// without a BYE, and peers that cannot be reached.

import assert from 'node:assert/strict';
import { tcpComponent } from '../../dist/rail/tcp/component.js';
import { resolveParams } from '../../dist/core/params.js';
import { endpointId } from '../../dist/core/ids.js';
import { DONE, NO_RESOURCE } from '../../dist/rail/api.js';
import { blackHole } from '../helpers/black-hole.mjs';
import { forRail, railNamed, JOB, AM_MSG, makeSide, loopback, hdrOf, fill, connected } from './harness.mjs';

const R = railNamed('tcp');
const { test } = forRail(R);

test('tcp: back-pressure answers NO_RESOURCE, then ready() once the socket drains', async () => {
  const pair = await R.open(resolveParams({ tcpSendHighWater: 65536 }));
  try {
    const ep = await connected(pair);
    const big = fill(60000, 1);
    let sent = 1, st;
    for (let i = 0; i < 10000; i++) { st = ep.sendCopy(AM_MSG, hdrOf(sent), 8, big); if (st === NO_RESOURCE) break; sent++; }
    assert.equal(st, NO_RESOURCE, 'a full socket says no resource');
    await pair.a.until(() => pair.a.ready > 0, 'ready upcall');
    assert.equal(ep.sendCopy(AM_MSG, hdrOf(sent), 8, big), DONE);
    sent++;
    await pair.b.until(() => pair.b.got.length === sent, 'everything accepted arrives');
  } finally { await pair.close(); }
});

test('tcp: simultaneous connects leave one connection and lose nothing', async () => {
  const pair = await R.open(resolveParams());
  try {
    const ab = pair.epAB(), ba = pair.epBA();
    for (let i = 0; i < 50; i++) { ab.sendCopy(AM_MSG, hdrOf(i), 8, fill(10, i)); ba.sendCopy(AM_MSG, hdrOf(i), 8, fill(10, i)); }
    await pair.a.until(() => pair.a.got.length === 50, 'b -> a');
    await pair.b.until(() => pair.b.got.length === 50, 'a -> b');
    pair.a.got.forEach((m, i) => assert.equal(m.hdr.readUInt32LE(0), i));
    pair.b.got.forEach((m, i) => assert.equal(m.hdr.readUInt32LE(0), i));
    assert.ok(ab.open && ba.open);
    for (let i = 50; i < 60; i++) { ab.sendCopy(AM_MSG, hdrOf(i), 8, null); ba.sendCopy(AM_MSG, hdrOf(i), 8, null); }
    await pair.b.until(() => pair.b.got.length === 60 && pair.a.got.length === 60, 'after');
    assert.deepEqual(pair.a.failed, []);
    assert.deepEqual(pair.b.failed, []);
  } finally { await pair.close(); }
});

// (The graceful close is a conformance case, on every rail: conformance.test.mjs.)
test('tcp: a peer lost without a BYE is reported as a failure, not graceful', async () => {
  const p2 = await R.open(resolveParams());
  const e2 = p2.epAB();
  e2.sendCopy(AM_MSG, hdrOf(0), 8, null);
  await p2.b.until(() => p2.b.got.length === 1, 'connected');
  // Kill a's socket without a BYE, as a crashed process would (a private field: test only).
  e2.sock.destroy();
  await p2.b.until(() => p2.b.failed.length === 1, 'b sees the loss');
  assert.equal(p2.b.failed[0].graceful, false);
  await p2.close();
});

test('tcp: a peer that cannot be reached fails with a message naming the address and device', async () => {
  const params = resolveParams({ connectTimeout: 1500 });
  const a = makeSide(0, params);
  const lo = tcpComponent.queryDevices(params).find((d) => d.kind === 'loopback');
  a.rail = await tcpComponent.open(lo, a.env);
  try {
    const ep = a.rail.endpoint(endpointId(JOB, 5), '127.0.0.1:1'); // nothing listens on port 1
    ep.sendCopy(AM_MSG, hdrOf(0), 8, null);
    await a.until(() => a.failed.length === 1, 'connect failure', 15_000);
    assert.equal(a.failed[0].code, 'ERR_PEER_FAILED');
    assert.match(a.messages[0], /cannot connect to 127\.0\.0\.1:1 on device lo after \d+ tries/);
  } finally { await a.rail.close(); }
});

test('tcp: a peer whose host drops the connection request fails at the connect timeout, not after the kernel\'s minutes of retries', async () => {
  const params = resolveParams({ connectTimeout: 2000, handshakeTimeout: 500 });
  const a = makeSide(0, params);
  const lo = tcpComponent.queryDevices(params).find((d) => d.kind === 'loopback');
  a.rail = await tcpComponent.open(lo, a.env);
  const hole = await blackHole();
  try {
    const t0 = performance.now();
    a.rail.endpoint(endpointId(JOB, 5), `127.0.0.1:${hole.port}`).sendCopy(AM_MSG, hdrOf(0), 8, null);
    await a.until(() => a.failed.length === 1, 'connect failure', 10_000);
    const ms = performance.now() - t0;
    assert.ok(ms >= 1900 && ms < 4000, `failed after ${Math.round(ms)} ms (connect timeout 2000)`);
    assert.equal(a.failed[0].code, 'ERR_PEER_FAILED');
    assert.match(a.messages[0], /cannot connect to 127\.0\.0\.1:\d+ on device lo after \d+ tries: the connection request got no answer within \d+ ms/);
  } finally {
    hole.close();
    await a.rail.close();
  }
});
