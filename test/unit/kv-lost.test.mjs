// The wire-up service tells every rank when another rank's connection ends
// before it finalized (the rank died), so ranks that never talked to it fail
// what waits on it; a rank that finalized first is not reported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KvServer } from '../../dist/boot/kv-server.js';
import { KvClient } from '../../dist/boot/kv-client.js';
import { newJobKey } from '../../dist/core/auth.js';

test('a rank whose connection ends before finalize is reported lost to the others, once; a finalized one is not', async () => {
  const jobKey = newJobKey();
  const server = await KvServer.start({ size: 4, jobKey });
  const c = [];
  try {
    for (let r = 0; r < 4; r++) c.push(await KvClient.connect(server.address(), jobKey, r, { timeoutMs: 3000 }));
    const heard = [[], [], [], []];
    for (let r = 0; r < 4; r++) c[r].onPeerLost((rank, why) => heard[r].push([rank, why]));
    await c[3].finalize();
    c[3].close();
    // Rank 2 dies: its socket ends without a finalize.
    c[2].close();
    await new Promise((res) => setTimeout(res, 200));
    for (const r of [0, 1]) {
      assert.equal(heard[r].length, 1, `rank ${r} heard ${JSON.stringify(heard[r])}`);
      assert.equal(heard[r][0][0], 2);
      assert.match(heard[r][0][1], /ended before it finalized/);
    }
    assert.equal(server.lostRanks, 1);
  } finally {
    for (const x of c) x.close();
    await server.close();
  }
});

test('a malformed event from the service ends the connection as lost (never a silent misreading)', async () => {
  const { parseEvent } = await import('../../dist/boot/kv-wire.js');
  assert.deepEqual(parseEvent('{"event":"lost","rank":3,"why":"x"}'), { event: 'lost', rank: 3, why: 'x' });
  assert.equal(parseEvent('{"event":"lost","rank":-1}'), undefined);
  assert.equal(parseEvent('{"event":"gone","rank":1}'), undefined);
  assert.equal(parseEvent('not json'), undefined);
});

test('peekLost: a lost event not yet read is seen without being read (a synchronous wait), and still delivered after', async (t) => {
  const { loadNative } = await import('../../dist/native/addon.js');
  if (loadNative()?.peekSocket === undefined) { t.skip('no native addon'); return; }
  const jobKey = newJobKey();
  const server = await KvServer.start({ size: 3, jobKey });
  const c = [];
  try {
    for (let r = 0; r < 3; r++) c.push(await KvClient.connect(server.address(), jobKey, r, { timeoutMs: 3000 }));
    const heard = [];
    c[0].onPeerLost((rank) => heard.push(rank));
    assert.deepEqual(c[0].peekLost(), [], 'nothing waits');
    // Rank 0's socket is no longer read (as while a synchronous call holds the loop); rank 2 dies.
    c[0].socket._handle.readStop();
    c[2].close();
    let seen = [];
    for (let i = 0; i < 100 && seen.length === 0; i++) { await new Promise((res) => setTimeout(res, 10)); seen = c[0].peekLost(); }
    assert.deepEqual(seen.map((l) => l.rank), [2]);
    assert.match(seen[0].why, /ended before it finalized/);
    assert.deepEqual(heard, [], 'peeked at, not read');
    assert.deepEqual(c[0].peekLost().map((l) => l.rank), [2], 'still there for the next look');
    c[0].socket._handle.readStart();
    for (let i = 0; i < 100 && heard.length === 0; i++) await new Promise((res) => setTimeout(res, 10));
    assert.deepEqual(heard, [2], 'the loop reads it as usual');
    assert.deepEqual(c[0].peekLost(), [], 'read: nothing left to peek at');
  } finally {
    for (const x of c) x.close();
    await server.close();
  }
});

test('the service tells the other ranks that a rank finalized; a listener added later still hears it (and lost ranks)', async () => {
  const { parseEvent } = await import('../../dist/boot/kv-wire.js');
  assert.deepEqual(parseEvent('{"event":"finalized","rank":2}'), { event: 'finalized', rank: 2 });
  const jobKey = newJobKey();
  const server = await KvServer.start({ size: 3, jobKey });
  const c = [];
  try {
    for (let r = 0; r < 3; r++) c.push(await KvClient.connect(server.address(), jobKey, r, { timeoutMs: 3000 }));
    const early = [];
    c[0].onPeerFinalized((rank) => early.push(rank));
    await c[2].finalize();
    c[1].close(); // dies
    await new Promise((res) => setTimeout(res, 200));
    assert.deepEqual(early, [2]);
    // A rank whose context registers after the events came (init() still running) hears them all.
    const late = [], lost = [];
    c[0].onPeerFinalized((rank) => late.push(rank));
    c[0].onPeerLost((rank) => lost.push(rank));
    assert.deepEqual(late, [2]);
    assert.deepEqual(lost, [1]);
  } finally {
    for (const x of c) x.close();
    await server.close();
  }
});

test('a peer that finalized: with no connection, receives from it end as after its BYE; with one whose BYE never came, it fails', async () => {
  const { PeerFailures } = await import('../../dist/proto/peer-failures.js');
  const { ProtoEndpoint } = await import('../../dist/proto/endpoint.js');
  const byeLess = [], failed = [];
  const host = {
    params: { laneTimeout: 100, eagerCredits: 1 << 20, sendBuffer: 1000 }, launch: { rank: 0, size: 3, jobId: 7 },
    log: { warn() {}, debug() {} }, rails: [], lanes: {}, rma: { peerFailed() {} }, nameOf: (w) => `rank ${w}`,
    p2p: { finalizedWithoutBye: (ep) => { ep.peerFinalized = true; byeLess.push(ep.rank); }, peerFailed: (ep, e) => failed.push([ep.rank, e.code, e.message]) },
  };
  const endpoints = [];
  const f = new PeerFailures(host, endpoints, () => false);
  endpoints[2] = new ProtoEndpoint(2, 2n, 1 << 20);
  endpoints[2].lane = { fake: 'a lane whose every path was lost' };
  f.peerFinalized(1); // never connected
  f.peerFinalized(2); // connected, its BYE never comes
  // (Polled: on a loaded machine the timers run late, and a late one waits again.)
  for (const until = Date.now() + 15_000; (byeLess.length === 0 || failed.length === 0) && Date.now() < until;) await new Promise((res) => setTimeout(res, 50));
  assert.deepEqual(byeLess, [1]);
  assert.equal(failed.length, 1);
  assert.equal(failed[0][0], 2);
  assert.equal(failed[0][1], 'ERR_PEER_FAILED');
  assert.match(failed[0][2], /rank 2 finalized \d+\.\d s ago, but its goodbye never reached this rank: every lane to it was lost/);
});
