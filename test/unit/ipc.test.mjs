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

test('state names follow the state numbers; the split point is half, rounded down to a 4 KiB page', async () => {
  const ipc = await import('../../dist/proto/ipc.js');
  assert.deepEqual([...ipc.IPC_STATE_NAMES], ['INIT', 'SENT', 'ACKING', 'ACKED', 'OK', 'BAD']);
  for (const s of ['INIT', 'SENT', 'ACKING', 'ACKED', 'OK', 'BAD']) assert.equal(ipc.IPC_STATE_NAMES[ipc[`IPC_${s}`]], s);
  assert.equal(ipc.SPLIT_MIN, 262144);
  for (const [size, split] of [[262144, 131072], [1_000_000, 499712], [8191, 0], [8192, 4096], [2 ** 33 + 8192 * 3, 2 ** 32 + 4096 * 3]]) assert.equal(ipc.splitPoint(size), split, String(size));
});

test('refusals that will not change (EPERM, EACCES, ENOSYS) are BAD at once; any other error is LATER', () => {
  for (const [err, bad] of [[-1, true], [-13, true], [-38, true], [-14, false], [-3, false], [13, false], [38, false], [1, false]]) {
    const p = pair(() => err);
    p.neg.want(p.a, p.linkA);
    p.flush();
    assert.equal(p.b.rx, bad ? IPC_BAD : IPC_INIT, `read answered ${err}`);
    assert.equal(p.a.tx, bad ? IPC_BAD : IPC_INIT, `read answered ${err}`);
  }
});

test('only a read that says it succeeded counts, even when the bytes happen to match', () => {
  // A reader that copies the right bytes but reports EFAULT (a partial read, say).
  const p = pair(() => 0);
  const read = p.linkB.reader.read;
  p.linkB.reader = { ...p.linkB.reader, read: (dst, addr) => { read(dst, addr); return -14; } };
  p.neg.want(p.a, p.linkA);
  p.flush();
  assert.equal(p.b.rx, IPC_INIT);
  assert.equal(p.a.tx, IPC_INIT);
});

test('a responder without a reader answers NO for good', () => {
  const p = pair(() => 0);
  p.linkB.reader = null;
  p.neg.want(p.a, p.linkA);
  p.flush();
  assert.equal(p.b.rx, IPC_BAD);
  assert.equal(p.a.tx, IPC_BAD);
});

test('the fifth not-ready answer makes the peer BAD at once; a negotiation allowed no tries never asks', () => {
  const p = pair(() => -14);
  for (let i = 1; i <= IPC_MAX_TRIES; i++) {
    assert.equal(p.a.tx, IPC_INIT, `before try ${i}`);
    p.neg.want(p.a, p.linkA);
    p.flush();
  }
  assert.equal(p.a.tx, IPC_BAD, 'BAD with the fifth answer, before any further send');
  const none = new IpcNegotiation(0);
  const a = new IpcPeer();
  assert.equal(none.want(a, p.linkA), false);
  assert.equal(a.tx, IPC_BAD);
  assert.equal(a.tries, 0);
});

test('an answer that arrives when none is awaited changes nothing (a late LATER after YES, a repeated YES)', () => {
  const p = pair(() => 0);
  p.neg.want(p.a, p.linkA); p.flush();
  assert.equal(p.a.tx, IPC_OK);
  p.neg.onAck(p.a, 3); // IPC_LATER, late
  assert.equal(p.a.tx, IPC_OK);
  const q = pair(() => -14);
  q.neg.want(q.a, q.linkA); q.flush();
  assert.equal(q.a.tx, IPC_INIT);
  q.neg.onAck(q.a, 1); // a YES nobody asked for now
  assert.equal(q.a.tx, IPC_INIT, 'not OK without a request in flight');
});

test('ipc wire: every field at the offset its comment draws, round trip, values past 4 GiB', async () => {
  const W = await import('../../dist/proto/ipc-wire.js');
  const { RTS_HDR } = await import('../../dist/proto/wire.js');
  assert.deepEqual([W.RTS_RGET_HDR, W.RTS_SEG_HDR, W.IPC_REQ_HDR, W.IPC_ACK_HDR, W.CTS_PUT_HDR, W.PUT_DONE_HDR], [40, 44, 16, 4, 24, 12]);
  const ids = [W.AM_IPC_REQ, W.AM_IPC_ACK, W.AM_RTS_RGET, W.AM_RTS_SEG, W.AM_CTS_PUT, W.AM_PUT_DONE];
  assert.deepEqual(ids, [28, 29, 30, 26, 31, 27]);
  assert.deepEqual([W.IPC_YES, W.IPC_NO, W.IPC_LATER], [1, 2, 3]);
  const at = 3;
  const frame = (n) => { const buf = new Uint8Array(at + n + 2).fill(0xee); return { buf, enc: new DataView(buf.buffer, at, n), dec: new DataView(buf.buffer) }; };
  const u32 = (buf, o) => new DataView(buf.buffer).getUint32(at + o, true);
  const u64 = (buf, o) => new DataView(buf.buffer).getBigUint64(at + o, true);
  const big = 2 ** 40 + 5, addr = 0xfedcba9876543210n;

  let f = frame(W.RTS_RGET_HDR);
  W.encodeRgetAddress(f.enc, addr);
  assert.equal(u64(f.buf, RTS_HDR), addr);
  assert.equal(W.rgetAddress(f.dec, at), addr);

  f = frame(W.RTS_SEG_HDR);
  W.encodeRtsSegment(f.enc, 77, big);
  assert.deepEqual([u32(f.buf, 32), u32(f.buf, 36), u32(f.buf, 40)], [77, 5, 256]);
  assert.deepEqual([W.rtsSegmentId(f.dec, at), W.rtsSegmentOffset(f.dec, at)], [77, big]);

  f = frame(W.IPC_REQ_HDR);
  W.encodeIpcReq(f.enc, addr, 0xdeadbeef, 4);
  assert.deepEqual([u64(f.buf, 0), u32(f.buf, 8), u32(f.buf, 12)], [addr, 0xdeadbeef, 4]);
  assert.deepEqual([W.ipcReqAddress(f.dec, at), W.ipcReqCookie(f.dec, at)], [addr, 0xdeadbeef]);
  assert.equal(f.buf[at + W.IPC_REQ_HDR], 0xee);

  f = frame(W.IPC_ACK_HDR);
  W.encodeIpcAck(f.enc, W.IPC_LATER);
  assert.equal(u32(f.buf, 0), 3);
  assert.equal(W.ipcAckStatus(f.dec, at), 3);

  f = frame(W.CTS_PUT_HDR);
  W.encodeCtsPut(f.enc, 11, 12, big, addr);
  assert.deepEqual([u32(f.buf, 0), u32(f.buf, 4), u32(f.buf, 8), u32(f.buf, 12), u64(f.buf, 16)], [11, 12, 5, 256, addr]);
  assert.deepEqual([W.ctsPutSendId(f.dec, at), W.ctsPutRecvId(f.dec, at), W.ctsPutSplit(f.dec, at), W.ctsPutAddress(f.dec, at)], [11, 12, big, addr]);
  assert.equal(f.buf[at + W.CTS_PUT_HDR], 0xee);

  f = frame(W.PUT_DONE_HDR);
  W.encodePutDone(f.enc, 13, big);
  assert.deepEqual([u32(f.buf, 0), u32(f.buf, 4), u32(f.buf, 8)], [13, 5, 256]);
  assert.deepEqual([W.putDoneRecvId(f.dec, at), W.putDoneBytes(f.dec, at)], [13, big]);
  assert.equal(f.buf[at + W.PUT_DONE_HDR], 0xee);
});
