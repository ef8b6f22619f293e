// udp keepalive with the default RAILCOMM_UDP_PEER_TIMEOUT (300 s): a peer
// whose process is gone (its sockets closed) fails within seconds, through the
// ICMP "port unreachable" its host answers a probe with, whether this rank
// waits on it or sends to it; a peer that is alive but answers nothing (a
// rank computing without its event loop) is not failed. Real rails on loopback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { udpComponent } from '../../dist/rail/udp/component.js';
import { resolveParams } from '../../dist/core/params.js';
import { endpointId } from '../../dist/core/ids.js';
import { Logger } from '../../dist/core/log.js';
import { PORT_CHECK_AFTER_MS } from '../../dist/rail/udp/keepalive.js';

const JOB = 94;
const KEY = '7c'.repeat(32);
const HDR = new Uint8Array(0);

function side(rank, params) {
  const s = { id: endpointId(JOB, rank), got: [], failed: [], rail: null };
  s.upcalls = {
    am: [undefined, { recv: (_ep, rx) => s.got.push(Buffer.from(rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen)).toString()) }],
    ready: () => {}, accepted: () => {}, activity: () => {},
    failed: (_ep, err) => s.failed.push(err.message),
  };
  s.env = { self: s.id, jobId: JOB, jobKey: KEY, params, log: new Logger('error'), upcalls: s.upcalls };
  return s;
}

async function connected() {
  const params = resolveParams({});
  assert.equal(params.udpPeerTimeout, 300, 'the default verdict from silence');
  const a = side(0, params);
  const b = side(1, params);
  const lo = udpComponent.queryDevices(params).find((d) => d.kind === 'loopback');
  a.rail = await udpComponent.open(lo, a.env);
  b.rail = await udpComponent.open(lo, b.env);
  const ab = a.rail.endpoint(b.id, b.rail.address());
  ab.sendCopy(1, HDR, 0, Buffer.from('hello'));
  await until(() => b.got.includes('hello') && ab.session.idle, 'connected and acknowledged');
  return { a, b, ab };
}

async function until(cond, what, ms = 5000) {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - t0;
}

/** b's process as good as gone: its sockets closed, nothing said. */
async function vanish(b) {
  await new Promise((r) => b.rail.data.close(r));
  await new Promise((r) => b.rail.prio.close(r));
  b.rail.closed = true;
}

/** b alive but deaf: its sockets stay bound, it reads and answers nothing (a rank that computes). */
function deafen(b) {
  b.rail.receive = () => {};
}

test('udp keepalive: a peer this rank waits on whose process is gone fails within seconds (port unreachable), not after 300 s', async () => {
  const { a, b } = await connected();
  try {
    a.upcalls.waitingOn = () => true; // a receive from b is posted, say
    await vanish(b);
    const ms = await until(() => a.failed.length === 1, 'the verdict', 8000);
    assert.match(a.failed[0], /udp port is closed/);
    assert.ok(ms >= PORT_CHECK_AFTER_MS - 50 && ms < 5000, `failed after ${ms} ms`);
    assert.ok(a.rail.counters.portsClosed === 1 && a.rail.counters.portChecks >= 1);
  } finally { await a.rail.close(); }
});

test('udp keepalive: a peer this rank sends to whose process is gone fails within seconds too', async () => {
  const { a, b, ab } = await connected();
  try {
    await vanish(b);
    ab.sendCopy(1, HDR, 0, Buffer.from('into the void'));
    const ms = await until(() => a.failed.length === 1, 'the verdict', 8000);
    assert.match(a.failed[0], /udp port is closed/);
    assert.ok(ms < 5000, `failed after ${ms} ms`);
  } finally { await a.rail.close(); }
});

test('udp keepalive: a peer that is alive but answers nothing (busy) is probed and port-checked, and not failed', async () => {
  const { a, b, ab } = await connected();
  try {
    a.upcalls.waitingOn = () => true;
    deafen(b);
    ab.sendCopy(1, HDR, 0, Buffer.from('unanswered'));
    await new Promise((r) => setTimeout(r, 3500));
    assert.deepEqual(a.failed, [], 'silence alone fails nobody before RAILCOMM_UDP_PEER_TIMEOUT');
    assert.ok(a.rail.counters.portChecks >= 1, 'its port was checked');
    assert.equal(a.rail.counters.portsClosed, 0);
  } finally { await a.rail.close(); await b.rail.close(); }
});
