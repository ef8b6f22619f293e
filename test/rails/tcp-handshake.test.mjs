// Connection set-up cannot be jammed (issue "Hardening"): strangers that open
// connections and never prove the job key, or that claim to be a real peer,
// cannot keep that peer out of a tcp rail. Real rails on loopback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { tcpComponent } from '../../dist/rail/tcp/component.js';
import { resolveParams } from '../../dist/core/params.js';
import { endpointId } from '../../dist/core/ids.js';
import { Logger } from '../../dist/core/log.js';
import { encodeHello } from '../../dist/rail/tcp/wire.js';

const JOB = 91;
const KEY = 'cd'.repeat(32);

function side(rank, params) {
  const s = { id: endpointId(JOB, rank), got: [], failed: [], rail: null };
  s.upcalls = {
    am: [undefined, { recv: (_ep, rx) => s.got.push(Buffer.from(rx.buf.subarray(rx.payOff, rx.payOff + rx.payLen)).toString()) }],
    ready: () => {}, accepted: () => {}, activity: () => {},
    failed: (_ep, err) => s.failed.push(err.message),
  };
  // What the rail logs stays here (negative cases log errors on purpose), not on the runner's output.
  s.env = { self: s.id, jobId: JOB, jobKey: KEY, params, log: new Logger('error', 'railcomm', (line) => (s.logged ??= []).push(line)), upcalls: s.upcalls };
  return s;
}

async function pair() {
  const params = resolveParams({});
  const a = side(0, params);
  const b = side(1, params);
  const lo = tcpComponent.queryDevices(params).find((d) => d.kind === 'loopback');
  a.rail = await tcpComponent.open(lo, a.env);
  b.rail = await tcpComponent.open(lo, b.env);
  return { a, b, close: async () => { await a.rail.close(); await b.rail.close(); } };
}

function connectTo(address) {
  const i = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const s = net.connect({ host: address.slice(0, i), port: Number(address.slice(i + 1)) }, () => resolve(s));
    s.on('error', () => {});
  });
}

async function until(cond, what, ms = 5000) {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - t0;
}

const HDR = new Uint8Array(0);

test('300 idle connections that never prove the key do not keep a real peer\'s first contact out', async () => {
  const { a, b, close } = await pair();
  const idle = [];
  try {
    for (let i = 0; i < 300; i++) idle.push(await connectTo(a.rail.address()));
    const ep = b.rail.endpoint(a.id, a.rail.address());
    ep.sendCopy(1, HDR, 0, Buffer.from('late first contact'));
    const ms = await until(() => a.got.includes('late first contact'), 'the real peer\'s message');
    assert.ok(ms < 2000, `took ${ms} ms`);
    assert.deepEqual(b.failed, []);
  } finally {
    for (const s of idle) s.destroy();
    await close();
  }
});

test('a forged hello claiming to be a real peer does not lock it out', async () => {
  const { a, b, close } = await pair();
  const forged = [];
  try {
    // Claims to be b (job and rank are no secret) and then says nothing more.
    for (let i = 0; i < 8; i++) {
      const s = await connectTo(a.rail.address());
      s.write(encodeHello({ jobId: JOB, from: b.id, to: a.id, nonce: Buffer.alloc(16, i) }));
      forged.push(s);
    }
    await new Promise((r) => setTimeout(r, 50));
    // ... also when a is itself trying to reach b at that moment.
    a.rail.endpoint(b.id, b.rail.address()).sendCopy(1, HDR, 0, Buffer.from('from a'));
    b.rail.endpoint(a.id, a.rail.address()).sendCopy(1, HDR, 0, Buffer.from('from b'));
    const ms = await until(() => a.got.includes('from b') && b.got.includes('from a'), 'both messages');
    assert.ok(ms < 2000, `took ${ms} ms`);
    assert.deepEqual([a.failed, b.failed], [[], []]);
  } finally {
    for (const s of forged) s.destroy();
    await close();
  }
});
