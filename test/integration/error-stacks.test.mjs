// Errors point at the program's line (issue 19, point 4): an error railcomm
// finds after the call that posted the operation (a truncation seen when the
// message arrives, a cancellation, a failure found before anyone waited)
// rejects the program's await with a stack that names the program's frames,
// in a world of one here and across ranks (processes over shm and tcp, thread
// ranks) in test/jobs/error-stack.mjs.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { init } from '../../dist/index.js';
import { jobScript, linesWith, railcomm } from './jobs.mjs';

const here = fileURLToPath(import.meta.url);
/** Line number of the line of `file` that contains `marker`. */
const lineOf = (file, marker) => readFileSync(file, 'utf8').split('\n').findIndex((l) => l.includes(marker)) + 1;
const name = (file) => file.slice(file.lastIndexOf('/') + 1);

let comm;
after(async () => { await comm?.finalize(); });

async function caught(f) {
  try {
    await f();
  } catch (e) {
    return e;
  }
  assert.fail('no error');
}

test('a truncation found when the message arrives names the await of the receive', async () => {
  comm = await init();
  const e = await caught(async function truncatedLater() {
    setTimeout(() => comm.send(new Uint8Array(64), 0, 1), 10);
    await comm.recv(new Uint8Array(4), 0, 1); // @truncated-later
  });
  assert.equal(e.code, 'ERR_TRUNCATE');
  assert.match(e.stack, /^RailcommError: message of 64 bytes/);
  assert.ok(e.stack.includes(`at async truncatedLater (${'file://' + here}:${lineOf(here, '@truncated-later')}:`), e.stack);
  assert.doesNotMatch(e.stack, /onEager|p2p\.js/, 'railcomm\'s own frames are left out');
});

test('a receive cancelled by its AbortSignal names the await', async () => {
  const e = await caught(async function cancelledLater() {
    const ac = new AbortController();
    setTimeout(() => ac.abort('enough'), 10);
    await comm.irecv(new Uint8Array(4), 0, 3, { signal: ac.signal }).wait(); // @cancelled
  });
  assert.equal(e.code, 'ERR_CANCELLED');
  assert.equal(e.cause, 'enough');
  assert.ok(e.stack.includes(`${name(here)}:${lineOf(here, '@cancelled')}:`), e.stack);
});

test('a request that failed before anyone waited names the call that waits, and so does test()', async () => {
  const r = comm.irecv(new Uint8Array(4), 0, 4);
  r.cancel();
  const e = await caught(async function waitsLate() {
    await r.wait(); // @waits-late
  });
  assert.equal(e.code, 'ERR_CANCELLED');
  assert.ok(e.stack.includes(`${name(here)}:${lineOf(here, '@waits-late')}:`), e.stack);
  let t;
  try { r.test(); } catch (err) { t = err; } // @tests
  assert.equal(t.code, 'ERR_CANCELLED');
  assert.ok(t.stack.includes(`${name(here)}:${lineOf(here, '@tests')}:`), t.stack);
});

test('one error failing several requests gives each waiter its own stack', async () => {
  const a = comm.irecv(new Uint8Array(4), 0, 5);
  const b = comm.irecv(new Uint8Array(4), 0, 5);
  const ea = caught(async function firstWaiter() { await a.wait(); });
  const eb = caught(async function secondWaiter() { await b.wait(); });
  // Both requests fail with the same error object (as a peer failure fails all that wait on it).
  const err = new (await import('../../dist/core/errors.js')).RailcommError('ERR_PEER_FAILED', 'rank 9 failed: test');
  a.fail(err);
  b.fail(err);
  const [x, y] = await Promise.all([ea, eb]);
  assert.equal(x.code, 'ERR_PEER_FAILED');
  assert.equal(y.message, 'rank 9 failed: test');
  assert.match(x.stack, /at async firstWaiter/);
  assert.doesNotMatch(x.stack, /secondWaiter/);
  assert.match(y.stack, /at async secondWaiter/);
});

const job = jobScript('error-stack.mjs');
const jobLine = lineOf(job, 'the line the stack must name');
for (const [mode, args] of [['processes (shm)', []], ['processes over tcp', ['--rails', 'tcp']], ['thread ranks', ['--threads']]]) {
  test(`${mode}: eager and rendezvous truncations found later name the receiving line`, async () => {
    const res = await railcomm(['run', '-n', '2', '--timeout', '60', ...args, job], { limitMs: 90_000 });
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
    const results = linesWith(res.stdout, 'RESULT');
    assert.equal(results.length, 2, res.stdout);
    for (const { rest } of results) {
      const [, tag, code, stack] = /^(\d) (\S+) (.*)$/.exec(rest);
      assert.equal(code, 'ERR_TRUNCATE', rest);
      const s = JSON.parse(stack);
      assert.ok(s.includes(`at async receiveSmall (file://${job}:${jobLine}:`), `tag ${tag}: ${s}`);
    }
  });
}
