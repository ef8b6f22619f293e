// The hang report's logic without a job: when a rank reports (HangWatch), what
// the launcher makes of the reports (hangPicture, findCycles), and what it
// accepts from the wire (parseHangReport).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { HangWatch, MAX_REPORTED_WAITS } from '../../dist/proto/hang.js';
import { HangBoard, findCycles, hangPicture, parseHangReport } from '../../dist/cli/hang-board.js';

/** A watch over a fake rank, driven by hand (its own timer is disposed at once). */
function watch(timeoutMs, { sink = true } = {}) {
  const src = { outstanding: 0, settled: 0, waits: [{ peer: 1, what: 'receive from rank 1' }] };
  const sent = [];
  const printed = [];
  const w = new HangWatch({ outstanding: () => src.outstanding, settledCount: () => src.settled, waits: () => src.waits },
    timeoutMs, { warn: (m) => printed.push(m) }, 3, sink ? (r) => sent.push(r) : null);
  w.dispose();
  return { src, sent, printed, w };
}

test('a rank reports waiting once after the timeout, moving when an operation completes, and idle when nothing is pending', () => {
  const { src, sent, w } = watch(1000);
  src.outstanding = 1;
  w.tick(0);
  w.tick(999);
  assert.equal(sent.length, 0);
  w.tick(1000);
  w.tick(5000);
  assert.deepEqual(sent.map((r) => r.state), ['waiting']);
  assert.deepEqual(sent[0], { rank: 3, state: 'waiting', forMs: 1000, timeoutMs: 1000, waits: src.waits });
  src.settled++;
  w.tick(5100);
  assert.deepEqual(sent.map((r) => r.state), ['waiting', 'moving']);
  // Completions keep coming: never stuck.
  for (let t = 5200; t < 9000; t += 100) { src.settled++; w.tick(t); }
  assert.equal(sent.length, 2);
  src.outstanding = 0;
  w.tick(9000);
  w.tick(10_500);
  assert.deepEqual(sent.map((r) => r.state), ['waiting', 'moving', 'idle']);
  assert.deepEqual(sent[2].waits, []);
  // A wait starts: the idle report is withdrawn, and the new wait gets its own full timeout.
  src.outstanding = 1;
  w.tick(10_600);
  w.tick(11_500);
  assert.deepEqual(sent.map((r) => r.state), ['waiting', 'moving', 'idle', 'moving']);
  w.tick(11_600);
  assert.equal(sent.at(-1).state, 'waiting');
});

test('a report carries at most MAX_REPORTED_WAITS waits, the last saying how many more', () => {
  const { src, sent, w } = watch(10);
  src.outstanding = 1;
  src.waits = Array.from({ length: 1000 }, (_, i) => ({ peer: null, what: `unexpected ${i}` }));
  w.tick(0);
  w.tick(10);
  assert.equal(sent[0].waits.length, MAX_REPORTED_WAITS);
  assert.equal(sent[0].waits.at(-1).what, `... and ${1000 - MAX_REPORTED_WAITS + 1} more`);
});

test('with no launcher to gather them, a rank prints its waiting report itself, once, and keeps idle to itself', () => {
  const { src, printed, w } = watch(100, { sink: false });
  src.outstanding = 1;
  w.tick(0);
  w.tick(100);
  w.tick(200);
  assert.equal(printed.length, 1);
  assert.match(printed[0], /^rank 3: no request completed for 100 ms \(RAILCOMM_HANG_TIMEOUT=100; the job goes on\); waiting on:\n {2}receive from rank 1$/);
  src.outstanding = 0;
  src.settled++;
  w.tick(300);
  w.tick(1000);
  assert.equal(printed.length, 1);
});

const rep = (rank, state, peers, forMs = 1000) => ({ rank, state, forMs, timeoutMs: 1000, waits: peers.map((p) => ({ peer: p, what: `wait on ${p}` })) });

test('the picture waits until every running rank is stuck, and needs one that waits', () => {
  const running = () => 'running';
  const reports = new Map([[0, rep(0, 'waiting', [1])], [1, rep(1, 'waiting', [0])]]);
  assert.equal(hangPicture(3, reports, running), undefined, 'rank 2 has not reported: it moves');
  reports.set(2, rep(2, 'idle', []));
  const lines = hangPicture(3, reports, running);
  assert.ok(lines);
  assert.match(lines[0], /^hang report: no operation completed on any running rank for at least 1\.0 s/);
  assert.ok(lines.includes('  rank 2: nothing pending in railcomm (in its own code, or idle)'));
  assert.ok(lines.includes('  deadlock: cycle rank 0 -> rank 1 -> rank 0 (each waits on the next)'));
  // At --timeout the picture is drawn from the reports that came, saying who sent none.
  const stop = hangPicture(3, new Map([[0, rep(0, 'waiting', [1])]]), running, '--timeout 5 s');
  assert.equal(stop[0], 'hang report at --timeout 5 s: what each rank waits for now; who waits on whom (world ranks):');
  assert.ok(stop.includes('  ranks 1, 2 sent no report when asked: busy in code that does not return to the event loop (a long computation, or a synchronous call)'), stop.join('\n'));
  assert.ok(!stop.some((l) => l.includes('the job goes on')), stop.join('\n'));
  // A rank that never joined is no railcomm rank; one that still completes operations says so.
  const moving = new Map([[0, rep(0, 'waiting', [1])], [1, { ...rep(1, 'moving', []), forMs: 0 }]]);
  const stop2 = hangPicture(3, moving, running, '--timeout 5 s', (r) => r !== 2);
  assert.ok(stop2.includes('  rank 1: still completing operations'), stop2.join('\n'));
  assert.ok(stop2.includes('  rank 2: not in railcomm (it never called init(), or is not a railcomm program)'), stop2.join('\n'));
  assert.ok(!stop2.some((l) => l.includes('sent no report')), stop2.join('\n'));
  // The same cycle, where rank 1 says no lane to rank 0 answers heartbeats: maybe a cut network, not a deadlock.
  const cut = new Map(reports);
  cut.set(1, { ...rep(1, 'waiting', [0]), waits: [{ peer: 0, what: 'silent lanes to world rank 0: no heartbeat answer on any lane to it (tcp:l1) for 9.0 s: ...' }, { peer: 0, what: 'wait on 0' }] });
  const cutLines = hangPicture(3, cut, running);
  assert.ok(cutLines.some((l) => /^ {2}no answer: cycle rank 0 -> rank 1 -> rank 0, but the lanes between some of them answer no heartbeat .*may be cut, not a deadlock$/.test(l)), cutLines.join('\n'));
  assert.ok(!cutLines.some((l) => l.startsWith('  deadlock:')), cutLines.join('\n'));
  assert.equal(hangPicture(2, new Map([[0, rep(0, 'idle', [])], [1, rep(1, 'idle', [])]]), running), undefined, 'all idle is no hang');
  // A rank that finalized or exited counts as not running.
  const state = (r) => (r === 1 ? 'finalized' : r === 2 ? 'exited' : 'running');
  const one = hangPicture(3, new Map([[0, rep(0, 'waiting', [1, 2, 'any'])]]), state);
  assert.ok(one.includes('  rank 0 waits on rank 1, rank 2, any rank (ANY_SOURCE):'), one.join('\n'));
  assert.ok(one.includes('  rank 1: finalized'));
  assert.ok(one.includes('  rank 2: exited'));
  assert.ok(one.includes('  rank 0 waits on rank 1, which has finalized: it will never answer'));
  assert.ok(one.includes('  rank 0 waits on rank 2, which has exited: it will never answer'));
  const self = hangPicture(1, new Map([[0, rep(0, 'waiting', [0])]]), running);
  assert.ok(self.some((l) => l.includes('rank 0 waits on itself')), self.join('\n'));
  const nocycle = hangPicture(2, new Map([[0, rep(0, 'waiting', ['any'])], [1, rep(1, 'waiting', [null])]]), running);
  assert.ok(nocycle.some((l) => l.includes('no cycle of waits')), nocycle.join('\n'));
});

test('findCycles finds each cycle once, smallest rank first, and only cycles', () => {
  assert.deepEqual(findCycles(new Map([[0, [1]], [1, [2]], [2, [0]]])), [[0, 1, 2]]);
  assert.deepEqual(findCycles(new Map([[2, [1]], [1, [2]], [0, [1]]])), [[1, 2]]);
  assert.deepEqual(findCycles(new Map([[0, [1]], [1, [5]]])), [], 'rank 5 is not stuck: no edge');
  fc.assert(fc.property(fc.array(fc.array(fc.nat(7), { maxLength: 3 }), { minLength: 1, maxLength: 8 }), (adj) => {
    const edges = new Map(adj.map((peers, r) => [r, peers.filter((p) => p < adj.length)]));
    for (const c of findCycles(edges)) {
      assert.equal(c[0], Math.min(...c));
      assert.equal(new Set(c).size, c.length);
      for (let i = 0; i < c.length; i++) assert.ok(edges.get(c[i]).includes(c[(i + 1) % c.length]), `${c} is a cycle`);
    }
    // A graph where every rank waits on someone stuck has a cycle.
    if ([...edges.values()].every((p) => p.length > 0)) assert.ok(findCycles(edges).length > 0);
  }));
});

test('the board prints once per stuck spell, again after a rank moved, and ignores malformed reports', () => {
  const printed = [];
  const b = new HangBoard(2, () => 'running', (l) => printed.push(l));
  const j = (r) => JSON.stringify(r);
  b.add(0, j(rep(0, 'waiting', [1])));
  b.add(1, '{"state":"waiting"');
  b.add(1, j({ state: 'waiting', forMs: 1, timeoutMs: 1, waits: [{ peer: 'x', what: 'y' }] }));
  b.add(7, j(rep(7, 'waiting', [1])));
  assert.equal(printed.length, 0);
  b.add(1, j(rep(1, 'waiting', [0])));
  b.add(1, j(rep(1, 'waiting', [0])));
  b.check();
  assert.equal(printed.length, 1);
  b.add(1, j({ rank: 1, state: 'moving', forMs: 0, timeoutMs: 1000, waits: [] }));
  b.add(1, j(rep(1, 'waiting', [0])));
  assert.equal(printed.length, 2);
  // The rank is the connection's, not the text's.
  assert.equal(parseHangReport(j(rep(5, 'idle', [])), 1).rank, 1);
});

test('a rank that left: the board waits the reports\' timeout for a waiting rank\'s move before it prints', async () => {
  const j = (r) => JSON.stringify(r);
  const quick = (rank, state, peers) => ({ ...rep(rank, state, peers), timeoutMs: 40 });
  for (const moves of [true, false]) {
    const printed = [];
    let left = false;
    const b = new HangBoard(2, (r) => (r === 1 && left ? 'finalized' : 'running'), (l) => printed.push(l));
    b.add(0, j(quick(0, 'waiting', [1]))); // rank 1 busy: no report, so nothing yet
    assert.equal(printed.length, 0);
    left = true; // rank 1 sent its last message and finalized
    b.rankLeft();
    assert.equal(printed.length, 0, 'not at once: what it sent last may still be landing');
    if (moves) b.add(0, j({ rank: 0, state: 'moving', forMs: 0, timeoutMs: 40, waits: [] }));
    await new Promise((res) => setTimeout(res, 100));
    assert.equal(printed.length, moves ? 0 : 1, `moves: ${moves}`);
    if (!moves) assert.match(printed[0].join('\n'), /rank 0 waits on rank 1, which has finalized/);
  }
});

test('the waits list a rank\'s own waits first; hundreds of unexpected messages from one sender make one line', async () => {
  const { collectWaits, collectUnexpected } = await import('../../dist/proto/p2p-waits.js');
  const { newContextState } = await import('../../dist/proto/context-state.js');
  const st = newContextState();
  st.group = [0, 1, 2];
  for (let i = 0; i < 500; i++) st.queues.pushArrived({ src: 1, tag: i % 3, size: i === 0 ? 20000 : 8 });
  st.queues.pushArrived({ src: 2, tag: 5, size: 4 });
  const view = {
    host: { allEndpoints: () => [] },
    contexts: new Map([[0, st]]),
    rndv: {
      sends: new Map(),
      recvs: new Map([[1, { peerWorld: 1, progressBytes: 100, bytes: 70000 }]]),
    },
  };
  const waits = [];
  collectWaits(view, waits);
  assert.equal(waits.length, 1);
  collectUnexpected(view, waits);
  assert.deepEqual(waits.map((w) => w.what), [
    'large receive from world rank 1: 100 of 70000 B arrived',
    '500 unexpected messages on context 0 from rank 1 (tags 0, 1, 2; 23992 B in all; the first tag 0, 20000 B), not received yet',
    'unexpected message on context 0 from rank 2 tag 5, 4 B, not received yet',
  ]);
  assert.equal(waits[0].peer, 1);
});
