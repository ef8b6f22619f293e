// RAILCOMM_BIND=core (src/native/bind.ts): which CPU a rank takes, and why it takes none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bindRank } from '../../dist/native/bind.js';
import { loadNative } from '../../dist/native/addon.js';

const fake = (cpus, rc = 0) => {
  const calls = [];
  return { calls, native: { threadCpus: () => cpus, bindThread: (c) => { calls.push(c); return rc; } } };
};

test('bindRank: local rank k takes the k-th CPU it may use; none when ranks outnumber them or the launcher bound it', () => {
  let f = fake([2, 3, 5, 7]);
  assert.match(bindRank(f.native, 2, 4), /local rank 2 bound to CPU 5 \(of 4\)/);
  assert.deepEqual(f.calls, [5]);
  f = fake([0, 1]);
  assert.match(bindRank(f.native, 1, 3), /not bound \(3 ranks on this host share 2 CPUs\)/);
  assert.deepEqual(f.calls, []);
  f = fake([9]);
  assert.match(bindRank(f.native, 0, 4), /already bound to CPU 9/);
  assert.deepEqual(f.calls, []);
  f = fake([0, 1], -22);
  assert.match(bindRank(f.native, 0, 2), /sched_setaffinity\(0\) failed \(errno 22\)/);
  assert.match(bindRank(null, 0, 2), /needs the native addon/);
  assert.match(bindRank({}, 0, 2), /needs the native addon/);
});

test('the addon pins a thread and reads its CPUs back (a worker thread, so the test runner keeps its own)', async (t) => {
  const native = loadNative();
  if (native === null || native.bindThread === undefined) { t.skip('native addon not built'); return; }
  const { Worker } = await import('node:worker_threads');
  const src = `const { parentPort } = require('node:worker_threads');
    import(${JSON.stringify(new URL('../../dist/native/addon.js', import.meta.url).href)}).then((m) => {
      const n = m.loadNative(); const all = n.threadCpus(); const rc = n.bindThread(all[all.length - 1]);
      parentPort.postMessage({ all, rc, after: n.threadCpus() });
    });`;
  const got = await new Promise((resolve, reject) => {
    const w = new Worker(src, { eval: true });
    w.once('message', (m) => { resolve(m); void w.terminate(); });
    w.once('error', reject);
  });
  assert.equal(got.rc, 0);
  assert.deepEqual(got.after, [got.all[got.all.length - 1]]);
  assert.ok(native.threadCpus().length >= got.all.length, 'the main thread kept its CPUs');
});
