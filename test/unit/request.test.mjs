// Unit tests of nonblocking requests (src/proto/request.ts): the lazily made
// promise (a failure nobody waits on is never an unhandled rejection), test(),
// cancel through a canceller, AbortSignal binding, settle listeners.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { spawnSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import {
  Request, PENDING, COMPLETE, FAILED, KIND_SEND, KIND_RECV, KIND_PROBE,
} from '../../dist/proto/request.js';
import { RailcommError, ErrorCode } from '../../dist/core/errors.js';

const recvReq = (n = 8) => new Request(KIND_RECV, new Uint8Array(n));
const peerErr = () => new RailcommError(ErrorCode.PEER_FAILED, 'rank 1 failed: gone');

/** A canceller that records calls and answers `answer`. */
function fakeCanceller(answer = true) {
  const calls = [];
  return { calls, cancel(r) { calls.push(r); return answer; } };
}

/** Run `fn`, then let the event loop turn a few times, collecting unhandled rejections meanwhile. */
async function collectUnhandled(fn) {
  const seen = [];
  const onUnhandled = (reason) => { seen.push(reason); };
  process.on('unhandledRejection', onUnhandled);
  try {
    await fn();
    for (let i = 0; i < 5; i++) await tick();
    await new Promise((r) => setTimeout(r, 10));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  return seen;
}

// ---- the lazy promise --------------------------------------------------------

test('a failed request that nobody waits on causes no unhandledRejection', async () => {
  const seen = await collectUnhandled(() => {
    for (let i = 0; i < 20; i++) {
      const r = recvReq();
      r.fail(peerErr());
      const c = recvReq();
      c.canceller = fakeCanceller();
      c.cancel();
    }
  });
  assert.deepEqual(seen, []);
});

// The same check with Node's default (an unhandled rejection kills the process),
// in a child, with a control: a bare rejected promise must kill it.
test('a failed, never-waited request does not crash a process; a bare rejected promise does (control)', () => {
  const requestUrl = new URL('../../dist/proto/request.js', import.meta.url).href;
  const errorsUrl = new URL('../../dist/core/errors.js', import.meta.url).href;
  const run = (body) => spawnSync(process.execPath, ['--input-type=module', '-e', `
    const { Request, KIND_RECV } = await import(${JSON.stringify(requestUrl)});
    const { RailcommError } = await import(${JSON.stringify(errorsUrl)});
    ${body}
    setTimeout(() => console.log('survived'), 20);
  `], { encoding: 'utf8', timeout: 10000 });
  const ok = run(`
    const r = new Request(KIND_RECV, new Uint8Array(4));
    r.fail(new RailcommError('ERR_PEER_FAILED', 'gone'));
    const c = new Request(KIND_RECV, new Uint8Array(4));
    c.canceller = { cancel: () => true };
    c.cancel(new Error('reason'));
  `);
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(ok.stdout.trim(), 'survived');
  const control = run(`Promise.reject(new Error('control'));`);
  assert.notEqual(control.status, 0, 'the control must die of its unhandled rejection');
  assert.match(control.stderr, /control/);
});

test('wait(): resolves with the Status; the same promise every time', async () => {
  const r = recvReq();
  const p = r.wait();
  assert.equal(r.wait(), p);
  r.complete(3, 7, 5);
  assert.deepEqual(await p, { source: 3, tag: 7, bytes: 5 });
  assert.equal(r.wait(), p);
  // wait() after completion, first call.
  const r2 = recvReq();
  r2.complete(1, 2, 3);
  assert.deepEqual(await r2.wait(), { source: 1, tag: 2, bytes: 3 });
});

test('wait(): rejects with the RailcommError, whether waited before or after the failure', async () => {
  const err = peerErr();
  const before = recvReq();
  const p = before.wait();
  before.fail(err);
  await assert.rejects(p, (e) => e === err);
  assert.equal(before.error, err);
  // The same error failing a second request reaches that one's waiter as a copy
  // with a stack of its own (core/at-await.ts): the code, message and class are the same.
  const after = recvReq();
  after.fail(err);
  const seen = await collectUnhandled(async () => {
    await assert.rejects(after.wait(), (e) => e !== err && e instanceof RailcommError && e.code === err.code && e.message === err.message);
  });
  assert.deepEqual(seen, []);
});

// ---- test() ----------------------------------------------------------------------

test('test(): undefined while pending, the Status once complete, throws the error once failed', () => {
  const r = recvReq();
  assert.equal(r.test(), undefined);
  assert.equal(r.done, false);
  assert.equal(r.state, PENDING);
  r.complete(2, 9, 4);
  assert.equal(r.state, COMPLETE);
  assert.equal(r.done, true);
  const s = r.test();
  assert.deepEqual(s, { source: 2, tag: 9, bytes: 4 });
  assert.equal(r.test(), s, 'the same Status object each time');

  const f = recvReq();
  const err = peerErr();
  f.fail(err);
  assert.equal(f.state, FAILED);
  assert.equal(f.done, true);
  assert.equal(f.error, err);
  assert.throws(() => f.test(), (e) => e === err);
  assert.throws(() => f.test(), (e) => e === err, 'every time');
});

test('a request settles once: complete/fail after settling change nothing', async () => {
  const r = recvReq();
  r.complete(1, 1, 1);
  r.fail(peerErr());
  r.complete(2, 2, 2);
  assert.equal(r.state, COMPLETE);
  assert.deepEqual(r.test(), { source: 1, tag: 1, bytes: 1 });
  const f = recvReq();
  const err = peerErr();
  f.fail(err);
  f.complete(1, 1, 1);
  f.fail(new RailcommError(ErrorCode.TIMEOUT, 'later'));
  assert.equal(f.error, err);
  await assert.rejects(f.wait(), (e) => e === err);
});

test('settling drops the user buffer (except for probes)', () => {
  const r = recvReq(64);
  r.complete(0, 0, 64);
  assert.equal(r.buf.byteLength, 0);
  const p = new Request(KIND_PROBE, new Uint8Array(4));
  p.complete(0, 0, 4);
  assert.equal(p.buf.byteLength, 4);
  const f = recvReq(16);
  f.fail(peerErr());
  assert.equal(f.buf.byteLength, 0);
});

// ---- cancel ----------------------------------------------------------------------

test('cancel(): with no canceller (a send, or already matched) is refused', () => {
  const s = new Request(KIND_SEND, new Uint8Array(4));
  assert.equal(s.cancel(), false);
  assert.equal(s.state, PENDING);
});

test('cancel(): the canceller removes it -> ERR_CANCELLED, reason as cause, canceller dropped', async () => {
  const r = recvReq();
  const c = fakeCanceller(true);
  r.canceller = c;
  const p = r.wait();
  const reason = new Error('user gave up');
  assert.equal(r.cancel(reason), true);
  assert.deepEqual(c.calls, [r]);
  assert.equal(r.state, FAILED);
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof RailcommError);
    assert.equal(e.code, 'ERR_CANCELLED');
    assert.equal(e.cause, reason);
    return true;
  });
  assert.equal(r.canceller, null);
  assert.equal(r.cancel(), false, 'second cancel: already settled');
  assert.equal(c.calls.length, 1, 'canceller not asked again');
  // Without a reason there is no cause.
  const r2 = recvReq();
  r2.canceller = fakeCanceller(true);
  r2.cancel();
  assert.equal('cause' in r2.error, false);
});

test('cancel(): the canceller answers false (it already matched) -> nothing changes', () => {
  const r = recvReq();
  const c = fakeCanceller(false);
  r.canceller = c;
  assert.equal(r.cancel(), false);
  assert.deepEqual(c.calls, [r]);
  assert.equal(r.state, PENDING);
  r.complete(1, 2, 3);
  assert.deepEqual(r.test(), { source: 1, tag: 2, bytes: 3 });
});

test('cancel(): after completion the canceller is not asked', () => {
  const r = recvReq();
  const c = fakeCanceller(true);
  r.canceller = c;
  r.complete(0, 0, 0);
  assert.equal(r.cancel(), false);
  assert.deepEqual(c.calls, []);
  assert.equal(r.state, COMPLETE);
});

// ---- bindSignal --------------------------------------------------------------------

test('bindSignal: aborting cancels the pending request with the abort reason as cause', async () => {
  const r = recvReq();
  const c = fakeCanceller(true);
  r.canceller = c;
  const ac = new AbortController();
  r.bindSignal(ac.signal);
  assert.equal(r.state, PENDING);
  const p = r.wait();
  const reason = new Error('timeout');
  ac.abort(reason);
  assert.equal(r.state, FAILED);
  await assert.rejects(p, (e) => e.code === 'ERR_CANCELLED' && e.cause === reason);
  assert.equal(c.calls.length, 1);
});

test('bindSignal: an already-aborted signal cancels at once (default reason is an AbortError)', () => {
  const r = recvReq();
  r.canceller = fakeCanceller(true);
  r.bindSignal(AbortSignal.abort('why not'));
  assert.equal(r.state, FAILED);
  assert.equal(r.error.code, 'ERR_CANCELLED');
  assert.equal(r.error.cause, 'why not');

  const r2 = recvReq();
  r2.canceller = fakeCanceller(true);
  const ac = new AbortController();
  ac.abort();
  r2.bindSignal(ac.signal);
  assert.equal(r2.state, FAILED);
  assert.equal(r2.error.cause?.name, 'AbortError');
});

test('bindSignal: aborting after the request settled does nothing, and the listener is removed', () => {
  const r = recvReq();
  const c = fakeCanceller(true);
  r.canceller = c;
  const ac = new AbortController();
  let added = 0;
  let removed = 0;
  const signal = ac.signal;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = (...a) => { added++; return add(...a); };
  signal.removeEventListener = (...a) => { removed++; return remove(...a); };
  r.bindSignal(signal);
  assert.equal(added, 1);
  r.complete(1, 1, 1);
  assert.equal(removed, 1, 'settling unhooks the signal');
  ac.abort(new Error('late'));
  assert.equal(r.state, COMPLETE);
  assert.deepEqual(c.calls, []);
});

test('bindSignal on an already-settled request adds no listener (an irecv that matched at once)', () => {
  const ac = new AbortController();
  for (let i = 0; i < 50; i++) {
    const r = recvReq();
    r.canceller = fakeCanceller(true);
    r.complete(0, 0, 0); // matched an unexpected message inside irecv, before bindSignal
    r.bindSignal(ac.signal);
    const f = recvReq();
    f.fail(peerErr());
    f.bindSignal(ac.signal);
  }
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0, 'listeners leaked onto a long-lived signal');
  // And pending ones are unhooked when they settle.
  const pending = [recvReq(), recvReq()];
  for (const r of pending) r.bindSignal(ac.signal);
  assert.equal(getEventListeners(ac.signal, 'abort').length, 2);
  for (const r of pending) r.complete(0, 0, 0);
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
});

test('bindSignal: an abort the canceller refuses (already matched) leaves the request to complete', () => {
  const r = recvReq();
  r.canceller = fakeCanceller(false);
  const ac = new AbortController();
  r.bindSignal(ac.signal);
  ac.abort();
  assert.equal(r.state, PENDING);
  r.complete(4, 5, 6);
  assert.deepEqual(r.test(), { source: 4, tag: 5, bytes: 6 });
});

// ---- onSettled and watchers ------------------------------------------------------------

test('onSettled: listeners run in order on settling, once; late listeners run at once', () => {
  const r = recvReq();
  const calls = [];
  r.onSettled((x) => calls.push(['a', x]));
  r.onSettled((x) => calls.push(['b', x.state]));
  assert.deepEqual(calls, []);
  r.complete(0, 0, 0);
  assert.deepEqual(calls, [['a', r], ['b', COMPLETE]]);
  r.complete(0, 0, 0);
  r.fail(peerErr());
  assert.equal(calls.length, 2, 'not run again');
  r.onSettled((x) => calls.push(['late', x]));
  assert.deepEqual(calls[2], ['late', r]);

  const f = recvReq();
  const seen = [];
  f.onSettled((x) => seen.push(x.error));
  const err = peerErr();
  f.fail(err);
  assert.deepEqual(seen, [err]);
});

test('onSettled listeners and the watcher run before the promise settles; the watcher is told once', async () => {
  const r = recvReq();
  const order = [];
  const watcher = { n: 0, requestSettled(x) { this.n++; order.push('watcher'); assert.equal(x, r); } };
  r.watcher = watcher;
  r.onSettled(() => order.push('listener'));
  const p = r.wait().then(() => order.push('promise'));
  r.complete(1, 1, 1);
  order.push('after complete');
  await p;
  assert.deepEqual(order, ['watcher', 'listener', 'after complete', 'promise']);
  assert.equal(watcher.n, 1);
  assert.equal(r.watcher, null);
});

// ---- railComplete (zero-copy sends) ----------------------------------------------------

test('railComplete: a send completes when every rail piece is done and all bytes were handed over', async () => {
  // A send knows its size from the call (comm.isend sets bytes), as it announced it.
  const s = new Request(KIND_SEND, new Uint8Array(100));
  s.source = 0;
  s.tag = 4;
  s.bytes = 100;
  s.railPending = 2;
  s.progressBytes = 100;
  s.railComplete(null);
  assert.equal(s.state, PENDING);
  s.railComplete(null);
  assert.equal(s.state, COMPLETE);
  assert.deepEqual(await s.wait(), { source: 0, tag: 4, bytes: 100 });

  const partial = new Request(KIND_SEND, new Uint8Array(100));
  partial.bytes = 100;
  partial.railPending = 1;
  partial.progressBytes = 60;
  partial.railComplete(null);
  assert.equal(partial.state, PENDING, 'bytes still to hand over');

  // A buffer detached while its pieces were out still completes with the size sent, never 0 bytes.
  const moved = new Request(KIND_SEND, new Uint8Array(64));
  moved.bytes = 64;
  moved.railPending = 1;
  moved.progressBytes = 64;
  structuredClone(moved.buf.buffer, { transfer: [moved.buf.buffer] });
  moved.railComplete(null);
  assert.deepEqual(await moved.wait(), { source: 0, tag: 0, bytes: 64 });

  const failed = new Request(KIND_SEND, new Uint8Array(10));
  failed.railPending = 2;
  failed.progressBytes = 10;
  const err = peerErr();
  failed.railComplete(err);
  assert.equal(failed.state, FAILED);
  assert.equal(failed.error, err);
  failed.railComplete(null);
  assert.equal(failed.state, FAILED, 'a later piece does not undo the failure');
});

test('waitAny removes its listeners from the requests that did not settle', async () => {
  const { waitAny } = await import('../../dist/comm/wait.js');
  const longLived = new Request(KIND_RECV, new Uint8Array(4));
  for (let i = 0; i < 100; i++) {
    const quick = new Request(KIND_RECV, new Uint8Array(4));
    const p = waitAny([longLived, quick]);
    quick.complete(0, 0, 0);
    const r = await p;
    assert.equal(r.index, 1);
  }
  // (Request keeps its listeners in `more`, made on first use: request.ts.)
  assert.ok(longLived.more !== null, 'waitAny did add listeners');
  assert.equal(longLived.more.listeners === null ? 0 : longLived.more.listeners.length, 0, 'no listener left behind');
});
