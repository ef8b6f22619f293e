// Connection set-up over udp cannot be jammed (issue "Hardening"): HELLOs that
// merely claim to be a real peer (job id and rank are no secret), or claim
// made-up ranks by the hundred, neither keep a real peer out nor redirect an
// endpoint; lost CHALLENGEs and PROOFs are repaired. Real rails on loopback
// (the tcp version: tcp-handshake.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { udpComponent } from '../../dist/rail/udp/component.js';
import { resolveParams } from '../../dist/core/params.js';
import { endpointId } from '../../dist/core/ids.js';
import { Logger } from '../../dist/core/log.js';
import { HS_AUTH, HS_BYTES, T_CHALLENGE, T_HELLO, T_PROOF, encodeHandshake, setSum } from '../../dist/rail/udp/wire.js';
import { datagramSum } from '../../dist/rail/udp/checksum.js';
import { STRANGER_ACCEPTS } from '../../dist/rail/udp/handshake.js';

const JOB = 92;
const KEY = 'ef'.repeat(32);
const HDR = new Uint8Array(0);

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

async function pair(opts = {}) {
  const params = resolveParams(opts);
  const a = side(0, params);
  const b = side(1, params);
  const lo = udpComponent.queryDevices(params).find((d) => d.kind === 'loopback');
  a.rail = await udpComponent.open(lo, a.env);
  b.rail = await udpComponent.open(lo, b.env);
  return { a, b, close: async () => { await a.rail.close(); await b.rail.close(); } };
}

/** A stranger's socket: sends HELLOs claiming any rank, records what comes back. */
async function stranger() {
  const s = dgram.createSocket('udp4');
  const heard = [];
  s.on('message', (m) => heard.push(m));
  await new Promise((r) => s.bind(0, '127.0.0.1', r));
  const port = s.address().port;
  return {
    heard, port,
    /** A HELLO claiming to be `from`, to the rail at `address` (its ports: this socket's unless given). */
    hello(from, to, address, ports = [port, port]) {
      const b = Buffer.alloc(HS_BYTES);
      encodeHandshake(b, {
        type: T_HELLO, jobId: JOB, token: randomBytes(4).readUInt32LE(0) || 1, from, to, nonce: randomBytes(16),
        dataPort: ports[0], prioPort: ports[1], credit: 1 << 20, mac: Buffer.alloc(32), keyNonce: randomBytes(16), flags: HS_AUTH,
      });
      const v = new DataView(b.buffer, b.byteOffset, HS_BYTES);
      setSum(v, datagramSum(v, b, HS_BYTES));
      const [ip, , prio] = address.split(':');
      return new Promise((r) => s.send(b, Number(prio), ip, r));
    },
    close: () => new Promise((r) => s.close(r)),
  };
}

async function until(cond, what, ms = 5000) {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return Date.now() - t0;
}

const portsOf = (ep) => `${ep.ip}:${ep.dataPort}:${ep.prioPort}`;

test('udp: forged HELLOs claiming a real peer, before and while both connect, do not keep it out', async () => {
  const { a, b, close } = await pair();
  const f = await stranger();
  let flooding = false;
  let flood = Promise.resolve();
  try {
    // Claims to be b (job and rank are no secret), more than one peer's pending slots, then says nothing more.
    for (let i = 0; i < 12; i++) await f.hello(b.id, a.id, a.rail.address());
    await until(() => f.heard.length >= 12, 'a to answer each forged HELLO (at the forger\'s own address)');
    assert.deepEqual(a.failed, []);
    // ... and more of them while a is itself reaching b and b reaches a.
    flooding = true;
    flood = (async () => { while (flooding) { await f.hello(b.id, a.id, a.rail.address()); await new Promise((r) => setTimeout(r, 2)); } })();
    a.rail.endpoint(b.id, b.rail.address()).sendCopy(1, HDR, 0, Buffer.from('from a'));
    b.rail.endpoint(a.id, a.rail.address()).sendCopy(1, HDR, 0, Buffer.from('from b'));
    const ms = await until(() => a.got.includes('from b') && b.got.includes('from a'), 'both messages');
    assert.ok(ms < 2000, `took ${ms} ms`);
    assert.deepEqual([a.failed, b.failed], [[], []]);
    const ep = a.rail.endpoint(b.id, b.rail.address());
    assert.equal(portsOf(ep), b.rail.address(), 'a reaches b at b\'s own address');
  } finally {
    flooding = false;
    await flood;
    await f.close();
    await close();
  }
});

test('udp: forged HELLOs claiming a real peer that only waits do not keep its first contact out, nor fail it when they expire', async () => {
  // (Before, the claims held a's only handshake slot for b until the handshake timeout, then failed b.)
  const { a, b, close } = await pair({ handshakeTimeout: 1500 });
  const f = await stranger();
  try {
    for (let i = 0; i < 20; i++) await f.hello(b.id, a.id, a.rail.address());
    await until(() => f.heard.length >= 20, 'the forged HELLOs answered');
    // b speaks first; a has no endpoint for b yet (b's HELLO finds only the strangers' claims).
    b.rail.endpoint(a.id, a.rail.address()).sendCopy(1, HDR, 0, Buffer.from('first contact'));
    const ms = await until(() => a.got.includes('first contact'), 'b\'s first contact');
    assert.ok(ms < 1000, `took ${ms} ms`);
    // The forged claims expire (handshake timeout 1.5 s) silently: b stays a's peer.
    await new Promise((r) => setTimeout(r, 1700));
    assert.equal(a.rail.counters.snapshot().hsPending, 0, 'the unproven handshakes are gone');
    a.rail.endpoint(b.id, '').sendCopy(1, HDR, 0, Buffer.from('reply'));
    await until(() => b.got.includes('reply'), 'a\'s reply');
    assert.deepEqual([a.failed, b.failed], [[], []]);
  } finally {
    await f.close();
    await close();
  }
});

test('udp: 300 HELLOs for made-up ranks, then a real first contact succeeds; thousands stay bounded (the oldest evicted)', async () => {
  const { a, b, close } = await pair();
  const f = await stranger();
  try {
    for (let i = 0; i < 300; i++) await f.hello(endpointId(JOB, 1000 + i), a.id, a.rail.address());
    await until(() => a.rail.counters.snapshot().hsPending === 300, '300 pending handshakes');
    b.rail.endpoint(a.id, a.rail.address()).sendCopy(1, HDR, 0, Buffer.from('late first contact'));
    const ms = await until(() => a.got.includes('late first contact'), 'the real peer\'s message');
    assert.ok(ms < 2000, `took ${ms} ms`);
    assert.deepEqual([a.failed, b.failed], [[], []]);
    // Far more than the table holds: bounded, the oldest evicted, nothing refused.
    for (let i = 0; i < STRANGER_ACCEPTS + 500; i++) await f.hello(endpointId(JOB, 5000 + i), a.id, a.rail.address());
    await until(() => a.rail.counters.hsEvicted >= 300, 'evictions');
    assert.ok(a.rail.counters.snapshot().hsPending <= STRANGER_ACCEPTS, 'bounded');
    b.rail.endpoint(a.id, '').sendCopy(1, HDR, 0, Buffer.from('still fine'));
    await until(() => a.got.includes('still fine'), 'traffic after the flood');
  } finally {
    await f.close();
    await close();
  }
});

test('udp: a forged HELLO cannot redirect an endpoint: its address stays the peer\'s until a handshake proves the key', async () => {
  const { a, b, close } = await pair();
  const f = await stranger();
  try {
    const ep = a.rail.endpoint(b.id, b.rail.address());
    await f.hello(b.id, a.id, a.rail.address());
    await until(() => f.heard.length >= 1, 'the CHALLENGE, sent to the forger');
    assert.equal(portsOf(ep), b.rail.address(), 'untouched by the HELLO');
    assert.equal(ep.open, false);
    ep.sendCopy(1, HDR, 0, Buffer.from('to the real b'));
    await until(() => b.got.includes('to the real b'), 'a\'s message at the real b');
    assert.equal(portsOf(ep), b.rail.address());
    // Once open, a forged HELLO (with the real b's own ports) changes nothing either.
    await f.hello(b.id, a.id, a.rail.address());
    await f.hello(b.id, a.id, a.rail.address(), [1, 2]);
    await until(() => f.heard.length >= 2, 'answered, at the forger\'s address');
    assert.equal(portsOf(ep), b.rail.address());
    b.rail.endpoint(a.id, '').sendCopy(1, HDR, 0, Buffer.from('back'));
    await until(() => a.got.includes('back'), 'b\'s message');
    assert.deepEqual([a.failed, b.failed], [[], []]);
  } finally {
    await f.close();
    await close();
  }
});

/** Drop the first datagram of `type` that `s`'s rail receives. */
function loseFirst(s, type) {
  const receive = s.rail.receive;
  const lost = { n: 0 };
  s.rail.receive = function (msg, rinfo) {
    if (lost.n === 0 && msg.length === HS_BYTES && (msg[3] & 0x3f) === type) { lost.n++; return; }
    return receive.call(this, msg, rinfo);
  };
  return lost;
}

test('udp: a lost CHALLENGE (the HELLO again) and a lost PROOF (early data asks again) are repaired', async () => {
  for (const [name, lose] of [['CHALLENGE', (p) => loseFirst(p.b, T_CHALLENGE)], ['PROOF', (p) => loseFirst(p.a, T_PROOF)]]) {
    const p = await pair();
    try {
      const lost = lose(p);
      p.b.rail.endpoint(p.a.id, p.a.rail.address()).sendCopy(1, HDR, 0, Buffer.from(`after a lost ${name}`));
      const ms = await until(() => p.a.got.includes(`after a lost ${name}`), `the message after a lost ${name}`);
      assert.equal(lost.n, 1, `the ${name} was lost`);
      assert.ok(ms < 2000, `took ${ms} ms`);
      assert.deepEqual([p.a.failed, p.b.failed], [[], []]);
    } finally { await p.close(); }
  }
});

test('udp: the PROOF that opened a session, arriving again (its CHALLENGE went twice), is no refused handshake', async () => {
  const p = await pair();
  try {
    // Every PROOF reaches a twice: the second copy comes once the first opened the session.
    const receive = p.a.rail.receive;
    let proofs = 0;
    p.a.rail.receive = function (msg, rinfo) {
      const r = receive.call(this, msg, rinfo);
      if (msg.length === HS_BYTES && (msg[3] & 0x3f) === T_PROOF) {
        proofs++;
        receive.call(this, Buffer.from(msg), rinfo);
        // And one that differs in its token (byte 12): not the same PROOF, refused as before.
        const other = Buffer.from(msg);
        other[12] ^= 1;
        const v = new DataView(other.buffer, other.byteOffset, HS_BYTES);
        setSum(v, datagramSum(v, other, HS_BYTES));
        receive.call(this, other, rinfo);
      }
      return r;
    };
    p.b.rail.endpoint(p.a.id, p.a.rail.address()).sendCopy(1, HDR, 0, Buffer.from('once'));
    await until(() => p.a.got.includes('once'), 'the message');
    assert.equal(proofs, 1);
    assert.equal(p.a.rail.counters.refused, 1, 'the copy is not counted as a refused handshake (nor warned about); the altered one is');
    assert.deepEqual([p.a.failed, p.b.failed, p.a.got], [[], [], ['once']]);
  } finally { await p.close(); }
});
