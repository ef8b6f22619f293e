// Ports (comm/ports.ts): the port string, the pair key both jobs derive, and
// the listener's handshake: the right secret is let through, a wrong one and
// a stranger are refused while the port keeps waiting, a closed port refuses
// at once, a silent one times out. Also the wire-up service's spawn request.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import fc from 'fast-check';
import { PortListener, connectPort, formatPort, pairKey, parsePort } from '../../dist/comm/ports.js';
import { parseRequest } from '../../dist/boot/kv-wire.js';

test('port strings round-trip and bad ones are refused with ERR_INVALID_ARG', () => {
  fc.assert(fc.property(
    fc.array(fc.ipV4(), { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 65535 }), fc.uint8Array({ minLength: 16, maxLength: 40 }),
    (hosts, port, secret) => {
      const a = parsePort(formatPort({ hosts, port, secret: Buffer.from(secret) }));
      assert.deepEqual(a.hosts, hosts);
      assert.equal(a.port, port);
      assert.deepEqual([...a.secret], [...secret]);
    }));
  assert.deepEqual(parsePort(formatPort({ hosts: ['::1', '10.0.0.1'], port: 7, secret: Buffer.alloc(16, 1) })).hosts, ['::1', '10.0.0.1']);
  for (const bad of [42, '', 'tcp://1.2.3.4:5/00', 'railcomm://1.2.3.4:5', 'railcomm://1.2.3.4/' + 'ab'.repeat(16), 'railcomm://:5/' + 'ab'.repeat(16), 'railcomm://h:99999/' + 'ab'.repeat(16), 'railcomm://h:5/xyz']) {
    assert.throws(() => parsePort(bad), (e) => e.code === 'ERR_INVALID_ARG', String(bad));
  }
});

test('the pair key is the same on both sides, and differs per job pair and per connection', () => {
  const s = Buffer.alloc(32, 7), n1 = Buffer.alloc(16, 1), n2 = Buffer.alloc(16, 2);
  assert.equal(pairKey(s, n1, n2, 5, 9), pairKey(s, n1, n2, 9, 5));
  assert.notEqual(pairKey(s, n1, n2, 5, 9), pairKey(s, n1, n2, 5, 10));
  assert.notEqual(pairKey(s, n1, n2, 5, 9), pairKey(s, n2, n1, 5, 9));
  assert.match(pairKey(s, n1, n2, 5, 9), /^[0-9a-f]{64}$/);
});

test('a listener lets the right secret through and refuses a wrong one while accept waits on', async () => {
  const p = await PortListener.open(2000);
  try {
    const pending = p.accept();
    pending.catch(() => undefined);
    const wrong = p.name.replace(/\/[0-9a-f]+$/, `/${'00'.repeat(32)}`);
    await assert.rejects(connectPort(wrong, 3000), (e) => e.code === 'ERR_BOOT' && /wrong port secret/.test(e.message));
    // a stranger that sends garbage
    const s = net.connect(Number(/:(\d+)\//.exec(p.name)[1]), '127.0.0.1');
    await new Promise((r) => s.once('connect', r));
    s.resume();
    s.write('hello there\n');
    await new Promise((r) => s.once('close', r));
    // (the wrong secret was tried at every address the port names, each refused)
    assert.ok(p.refused >= 2, String(p.refused));
    const c = await connectPort(p.name, 3000);
    const srv = await pending;
    c.send({ hi: 1 });
    assert.deepEqual(await srv.next(1000, 'test'), { hi: 1 });
    srv.send({ back: [1, 2] });
    assert.deepEqual(await c.next(1000, 'test'), { back: [1, 2] });
    assert.deepEqual(c.clientNonce, srv.clientNonce);
    assert.deepEqual(c.serverNonce, srv.serverNonce);
    c.close(); srv.close();
  } finally {
    p.close();
  }
});

test('a closed port refuses at once; a silent one times out; accept on a closed port fails', async () => {
  const p = await PortListener.open(2000);
  const name = p.name;
  const waiting = p.accept();
  p.close();
  await assert.rejects(waiting, (e) => e.code === 'ERR_BOOT' && /closed/.test(e.message));
  const t0 = Date.now();
  await assert.rejects(connectPort(name, 5000), (e) => e.code === 'ERR_BOOT' && /nothing accepts/.test(e.message));
  assert.ok(Date.now() - t0 < 2000);
  const server = net.createServer(() => undefined);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const t1 = Date.now();
  await assert.rejects(connectPort(`railcomm://127.0.0.1:${server.address().port}/${'ab'.repeat(32)}`, 500), (e) => e.code === 'ERR_TIMEOUT');
  assert.ok(Date.now() - t1 < 1500);
  server.close();
});

test("the wire-up service's spawn request is checked like the others", () => {
  assert.deepEqual(parseRequest(JSON.stringify({ id: 1, op: 'spawn', command: ['w.js', '-x'], n: 3, port: 'p', cwd: '/' })),
    { req: { id: 1, op: 'spawn', command: ['w.js', '-x'], n: 3, port: 'p', cwd: '/' } });
  for (const bad of [{ command: [], n: 1 }, { command: ['a'], n: 0 }, { command: ['a', 3], n: 1 }, { command: ['a'], n: 1.5 }]) {
    const r = parseRequest(JSON.stringify({ id: 2, op: 'spawn', port: 'p', cwd: '/', ...bad }));
    assert.equal(r.id, 2);
    assert.ok('error' in r, JSON.stringify(bad));
  }
});
