// The wire-up service cannot be jammed (issue "Hardening"): 200 idle
// connections that never prove the key do not keep a late rank out (it
// retries, the service makes room), and a wrong key is refused for good at
// once instead of being retried until the timeout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { KvServer } from '../../dist/boot/kv-server.js';
import { KvClient } from '../../dist/boot/kv-client.js';
import { newJobKey } from '../../dist/core/auth.js';

test('200 idle strangers, then a late rank: it connects within a second', async () => {
  const jobKey = newJobKey();
  const server = await KvServer.start({ size: 2, jobKey });
  const idle = [];
  try {
    for (let i = 0; i < 200; i++) {
      idle.push(await new Promise((resolve) => { const s = net.connect(server.address(), () => resolve(s)); s.on('error', () => {}); s.resume(); }));
    }
    const t0 = Date.now();
    const c = await KvClient.connectRetrying(server.address(), jobKey, 1, 10_000);
    const ms = Date.now() - t0;
    await c.put('k', 'v');
    c.close();
    assert.ok(ms < 1000, `took ${ms} ms`);
    assert.ok(server.evicted >= 1, 'a stranger was closed to make room');
  } finally {
    for (const s of idle) s.destroy();
    await server.close();
  }
});

test('a wrong job key is refused for good: no retries until the timeout', async () => {
  const server = await KvServer.start({ size: 2, jobKey: newJobKey() });
  try {
    const t0 = Date.now();
    await assert.rejects(KvClient.connectRetrying(server.address(), newJobKey(), 0, 10_000), /refused rank 0: wrong job key or rank/);
    assert.ok(Date.now() - t0 < 2000);
  } finally {
    await server.close();
  }
});
