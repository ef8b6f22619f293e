// The lazy single-copy negotiation (proto/ipc.ts, the smcuda design): state
// machine under yes, refusal, "not ready" retries and lost answers, and the
// LRU cache of opened remote regions (hits, eviction, invalidation).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  IpcNegotiation, IpcPeer, IPC_INIT, IPC_SENT, IPC_ACKED, IPC_OK, IPC_BAD, IPC_MAX_TRIES,
} from '../../dist/proto/ipc.js';
import { RegionCache } from '../../dist/core/region-cache.js';

/** Two peers wired back to back; `reads` decides what the responder's read returns. */
function pair(readResult) {
  const neg = new IpcNegotiation();
  const a = new IpcPeer();
  const b = new IpcPeer();
  const sent = [];
  const memory = new Map();
  const reader = {
    addressOf: (buf) => { const addr = BigInt(0x1000 + memory.size * 16); memory.set(addr, buf); return addr; },
    read: (dst, addr) => {
      const r = readResult();
      if (r !== 0) return r;
      dst.set(memory.get(addr).subarray(0, dst.byteLength));
      return 0;
    },
  };
  const linkA = { reader, sendRequest: (address, cookie, attempt) => sent.push({ kind: 'req', address, cookie, attempt }), sendAck: () => assert.fail('a only asks') };
  const linkB = { reader, sendRequest: () => assert.fail('b only answers'), sendAck: (status) => sent.push({ kind: 'ack', status }) };
  const scratch = new Uint8Array(8);
  /** Deliver everything in flight, as the rails would. */
  const flush = () => {
    while (sent.length > 0) {
      const m = sent.shift();
      if (m.kind === 'req') neg.onRequest(b, linkB, m.address, m.cookie, scratch);
      else neg.onAck(a, m.status);
    }
  };
  return { neg, a, b, linkA, linkB, sent, flush };
}

test('first large send asks (SENT) and takes the ring; after YES the next one reads directly (OK / ACKED)', () => {
  const p = pair(() => 0);
  assert.equal(p.a.tx, IPC_INIT);
  assert.equal(p.neg.want(p.a, p.linkA), false, 'the first send does not wait for the answer');
  assert.equal(p.a.tx, IPC_SENT);
  assert.equal(p.neg.want(p.a, p.linkA), false, 'still waiting: no second request');
  assert.equal(p.sent.length, 1);
  p.flush();
  assert.equal(p.b.rx, IPC_ACKED);
  assert.equal(p.a.tx, IPC_OK);
  assert.equal(p.neg.want(p.a, p.linkA), true);
  assert.equal(p.a.cookie, null, 'the cookie is released once answered');
});

test('refusal (EPERM: ptrace/Yama) -> BAD at once, no more asking, no hang', () => {
  const p = pair(() => -1);
  p.neg.want(p.a, p.linkA);
  p.flush();
  assert.equal(p.b.rx, IPC_BAD);
  assert.equal(p.a.tx, IPC_BAD);
  for (let i = 0; i < 10; i++) assert.equal(p.neg.want(p.a, p.linkA), false);
  assert.equal(p.sent.length, 0, 'a BAD peer is never asked again');
});

test('"not ready" answers are retried, at most 5 tries, then BAD', () => {
  const p = pair(() => -14); // EFAULT: e.g. the peer's pid is not known yet
  let requests = 0;
  for (let i = 0; i < 20; i++) {
    const before = p.sent.length;
    p.neg.want(p.a, p.linkA);
    requests += p.sent.length - before;
    p.flush();
  }
  assert.equal(requests, IPC_MAX_TRIES);
  assert.equal(p.a.tries, IPC_MAX_TRIES);
  assert.equal(p.a.tx, IPC_BAD);
});

test('a later try succeeds after a not-ready answer', () => {
  let n = 0;
  const p = pair(() => (n++ < 2 ? -14 : 0));
  for (let i = 0; i < 3; i++) { p.neg.want(p.a, p.linkA); p.flush(); }
  assert.equal(p.a.tx, IPC_OK);
  assert.equal(p.a.tries, 3);
});

test('a read that returns the wrong bytes is not trusted (answer LATER, not YES)', () => {
  const p = pair(() => 0);
  p.neg.want(p.a, p.linkA);
  p.sent[0].cookie ^= 1;
  p.flush();
  assert.notEqual(p.a.tx, IPC_OK);
  assert.equal(p.a.tx, IPC_INIT);
});

test('a rail without a reader never asks; an unanswered request never blocks sending', () => {
  const neg = new IpcNegotiation();
  const a = new IpcPeer();
  assert.equal(neg.want(a, { reader: null, sendRequest: () => assert.fail(), sendAck: () => assert.fail() }), false);
  assert.equal(a.tx, IPC_BAD);
  const p = pair(() => 0);
  p.neg.want(p.a, p.linkA);
  p.sent.length = 0; // the answer is lost (peer finalized)
  for (let i = 0; i < 5; i++) assert.equal(p.neg.want(p.a, p.linkA), false);
  assert.equal(p.a.tx, IPC_SENT);
});

test('a failed direct read after agreement tells the sender to stop (NO) and counts the fallback', () => {
  const p = pair(() => 0);
  p.neg.want(p.a, p.linkA); p.flush();
  assert.equal(p.a.tx, IPC_OK);
  p.neg.onReadFailed(p.b, p.linkB);
  assert.equal(p.b.fallbacks, 1);
  p.flush();
  assert.equal(p.a.tx, IPC_BAD);
});

test('RegionCache: hits, LRU eviction with close, invalidation by the owner and per peer', () => {
  const closed = [];
  let opened = 0;
  const c = new RegionCache(2, (v) => closed.push(v));
  const open = (v) => () => { opened++; return v; };
  assert.equal(c.get(1, 'r1', open('A')), 'A');
  assert.equal(c.get(1, 'r1', open('X')), 'A', 'hit: not opened again');
  assert.equal(c.hits, 1);
  c.get(1, 'r2', open('B'));
  c.get(1, 'r1', open('X')); // r1 most recent now
  c.get(2, 'r1', open('C')); // evicts r2 (least recently used)
  assert.deepEqual(closed, ['B']);
  assert.equal(c.size, 2);
  assert.equal(opened, 3);
  assert.equal(c.invalidate(1, 'r1'), true);
  assert.deepEqual(closed, ['B', 'A']);
  assert.equal(c.invalidate(1, 'r1'), false);
  assert.equal(c.get(1, 'r1', open('A2')), 'A2', 'reopened after invalidation');
  assert.equal(c.invalidatePeer(2), 1);
  assert.deepEqual(closed, ['B', 'A', 'C']);
  c.clear();
  assert.equal(c.size, 0);
});
