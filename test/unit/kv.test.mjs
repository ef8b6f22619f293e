// Unit tests of the launcher's key-value service: KvServer with real KvClients
// and raw sockets (for strangers and garbage), plus the idle/pending ref rules
// checked in a child process.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { spawn } from 'node:child_process';
import { KvServer } from '../../dist/boot/kv-server.js';
import { KvClient } from '../../dist/boot/kv-client.js';
import { newJobKey } from '../../dist/core/auth.js';

const kvClientUrl = new URL('../../dist/boot/kv-client.js', import.meta.url).href;

async function withJob(fn, serverOpts = {}) {
  const jobKey = newJobKey();
  const server = await KvServer.start({ size: 2, jobKey, ...serverOpts });
  const clients = [];
  const connect = async (rank, key = jobKey) => {
    const c = await KvClient.connect(server.address(), key, rank, { timeoutMs: 3000 });
    clients.push(c);
    return c;
  };
  try {
    await fn({ server, jobKey, connect });
  } finally {
    for (const c of clients) c.close();
    await server.close();
  }
}

/** Resolves when the server closes the raw socket (or rejects after ms). */
function closedWithin(socket, ms) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { socket.destroy(); reject(new Error(`socket still open after ${ms} ms`)); }, ms);
    socket.on('error', () => {});
    // Read (and ignore) the nonce: an unread socket never reports its end.
    socket.resume();
    socket.on('close', () => { clearTimeout(t); resolve(); });
  });
}

const tick = (ms) => new Promise((r) => setTimeout(r, ms));

test('put then get, both ranks', async () => {
  await withJob(async ({ connect }) => {
    const a = await connect(0);
    const b = await connect(1);
    await a.put('addr/0', 'tcp://127.0.0.1:1234');
    assert.equal(await b.get('addr/0', 1000), 'tcp://127.0.0.1:1234');
    assert.equal(await a.get('addr/0', 1000), 'tcp://127.0.0.1:1234');
    await b.put('addr/0', 'replaced ✓');
    assert.equal(await a.get('addr/0', 1000), 'replaced ✓');
  });
});

test('get waits until some rank puts the key', async () => {
  await withJob(async ({ connect }) => {
    const a = await connect(0);
    const b = await connect(1);
    let got;
    const p = b.get('late', 3000).then((v) => { got = v; return v; });
    await tick(100);
    assert.equal(got, undefined);
    await a.put('late', 'here');
    assert.equal(await p, 'here');
  });
});

test('fence completes only when both ranks fenced, generation by generation', async () => {
  await withJob(async ({ connect }) => {
    const a = await connect(0);
    const b = await connect(1);
    let aDone = false;
    const fa = a.fence().then(() => { aDone = true; });
    await tick(100);
    assert.equal(aDone, false, 'rank 0 passed the fence alone');
    await Promise.all([fa, b.fence()]);
    assert.equal(aDone, true);
    // Second generation: b arrives first this time.
    let bDone = false;
    const fb = b.fence().then(() => { bDone = true; });
    await tick(100);
    assert.equal(bDone, false);
    await Promise.all([fb, a.fence()]);
  });
});

test('get of a key nobody puts rejects with ERR_TIMEOUT naming the key', async () => {
  await withJob(async ({ server, connect }) => {
    const a = await connect(0);
    const t0 = Date.now();
    await assert.rejects(a.get('never/put', 200), (err) => {
      assert.equal(err.code, 'ERR_TIMEOUT');
      assert.match(err.message, /never\/put/);
      return true;
    });
    assert.ok(Date.now() - t0 < 2000);
    // The server forgets the abandoned get shortly after the client's own deadline.
    assert.equal(server.waitingGets, 1);
    await tick(1300);
    assert.equal(server.waitingGets, 0);
    // The client is still usable afterwards.
    await a.put('k', 'v');
    assert.equal(await a.get('k', 500), 'v');
  });
});

test('a client with the wrong job key is refused and the service keeps working', async () => {
  await withJob(async ({ server, connect }) => {
    const a = await connect(0);
    await assert.rejects(connect(1, newJobKey()), (err) => {
      assert.equal(err.code, 'ERR_BOOT');
      return true;
    });
    assert.equal(server.refused, 1);
    const b = await connect(1);
    await a.put('x', '1');
    assert.equal(await b.get('x', 500), '1');
    await Promise.all([a.fence(), b.fence()]);
  });
});

test('a second connection for an already connected rank is refused', async () => {
  await withJob(async ({ server, connect }) => {
    await connect(0);
    await assert.rejects(connect(0), { code: 'ERR_BOOT' });
    await assert.rejects(connect(2), { code: 'ERR_BOOT' }, 'rank outside the job');
    assert.equal(server.refused, 2);
  });
});

test('garbage, over-long lines and silent connections are refused; the service keeps working', async () => {
  await withJob(async ({ server, connect }) => {
    const addr = server.address();
    const garbage = net.connect(addr.port, addr.host);
    garbage.on('connect', () => garbage.write(Buffer.from([0, 1, 2, 0xff, 0xfe, 10, 0x7b, 10])));
    await closedWithin(garbage, 2000);

    const long = net.connect(addr.port, addr.host);
    long.on('connect', () => long.write('x'.repeat(64 * 1024)));
    await closedWithin(long, 2000);

    const silent = net.connect(addr.port, addr.host);
    await closedWithin(silent, 2000);

    assert.equal(server.refused, 3);
    const a = await connect(0);
    const b = await connect(1);
    await a.put('still', 'works');
    assert.equal(await b.get('still', 500), 'works');
  }, { authTimeoutMs: 300 });
});

test('finalize is recorded; abort reaches the listener', async () => {
  await withJob(async ({ server, connect }) => {
    const aborts = [];
    server.onAbort((rank, message, code) => aborts.push({ rank, message, code }));
    const a = await connect(0);
    const b = await connect(1);
    assert.equal(server.joined(0), true);
    assert.equal(server.finalized(0), false);
    await a.finalize();
    assert.equal(server.finalized(0), true);
    assert.equal(server.finalized(1), false);
    await b.abort('disk full', 7);
    assert.deepEqual(aborts, [{ rank: 1, message: 'disk full', code: 7 }]);
  });
});

test('bad puts get an error reply, not a dropped connection', async () => {
  await withJob(async ({ connect }) => {
    const a = await connect(0);
    await assert.rejects(a.put('big', 'v'.repeat(300 * 1024)), { code: 'ERR_BOOT' });
    // Escaping makes this one too long for a line: refused by the client, the connection survives.
    await assert.rejects(a.put('escaped', '\u0001'.repeat(200 * 1024)), { code: 'ERR_INVALID_ARG' });
    // Fits a line but not the value limit once JSON-escaped.
    await assert.rejects(a.put('escaped', '\u0001'.repeat(100 * 1024)), { code: 'ERR_BOOT' });
    await a.put('small', 'ok');
    assert.equal(await a.get('small', 500), 'ok');
  });
});

test('losing the service rejects pending calls with ERR_BOOT and fires onLost', async () => {
  const jobKey = newJobKey();
  const server = await KvServer.start({ size: 2, jobKey });
  const a = await KvClient.connect(server.address(), jobKey, 0);
  const lost = new Promise((resolve) => a.onLost(resolve));
  const pending = a.get('never', 10_000);
  await tick(50);
  await server.close();
  await assert.rejects(pending, { code: 'ERR_BOOT' });
  const err = await lost;
  assert.equal(err.code, 'ERR_BOOT');
  await assert.rejects(a.put('k', 'v'), { code: 'ERR_BOOT' });
  a.close();
});

test('close() by us does not fire onLost', async () => {
  await withJob(async ({ connect }) => {
    const a = await connect(0);
    let fired = false;
    a.onLost(() => { fired = true; });
    a.close();
    await tick(100);
    assert.equal(fired, false);
  });
});

test('an idle client does not keep its process alive; a pending get does', async () => {
  await withJob(async ({ server, jobKey, connect }) => {
    const { port, host } = server.address();
    const script = `
      const { KvClient } = await import(${JSON.stringify(kvClientUrl)});
      const c = await KvClient.connect({ host: ${JSON.stringify(host)}, port: ${port} }, ${JSON.stringify(jobKey)}, 1);
      const v = await c.get('later', 5000);
      console.log('got ' + v);
      // no close(): the idle connection must not hold the process
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 8000);
    const a = await connect(0);
    await tick(500);
    await a.put('later', 'value');
    const code = await exited;
    clearTimeout(killer);
    assert.equal(code, 0);
    assert.equal(out.trim(), 'got value');
  });
});
