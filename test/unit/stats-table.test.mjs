// The --stats table (src/core/stats-table.ts): rows come from whatever counter
// keys exist, zero counters are summarised, wide groups turn to a row per member.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatStats } from '../../dist/core/stats-table.js';

const counters = (o = {}) => ({ msgsSent: 0, bytesSent: 0, msgsRecv: 0, bytesRecv: 0, pending: 0, retransmits: 0, drops: 0, ...o });

/** The whitespace-separated cells of the line that starts with `first` (after indentation). */
const rowOf = (text, first) => {
  const line = text.split('\n').find((l) => l.trim().split(/\s+/)[0] === first);
  assert.ok(line, `no row ${first} in\n${text}`);
  return line.trim().split(/\s+/);
};

test('formatStats: a column per rail, a row per counter, zero counters named', () => {
  const text = formatStats({
    rank: 3,
    rails: { shm: counters({ msgsSent: 12, bytesSent: 4096, retransmits: 0 }), 'udp:lo': counters({ msgsSent: 2, bytesSent: 16, retransmits: 5, windowSegs: 4096 }), self: counters() },
    peers: { 0: counters({ msgsSent: 7, drops: 1 }), 1: counters({ msgsSent: 7 }) },
    protocol: { posted: 2, unexpected: 0 },
    singleCopy: {},
  });
  assert.ok(text.endsWith('\n'));
  assert.equal(text.split('\n')[0], 'railcomm stats, rank 3');
  assert.deepEqual(rowOf(text, 'rails'), ['rails', 'shm', 'udp:lo']);
  assert.deepEqual(rowOf(text, 'msgsSent'), ['msgsSent', '12', '2']);
  assert.deepEqual(rowOf(text, 'bytesSent'), ['bytesSent', '4096', '16']);
  assert.deepEqual(rowOf(text, 'retransmits'), ['retransmits', '0', '5']);
  // A counter one rail lacks shows as '-'.
  assert.deepEqual(rowOf(text, 'windowSegs'), ['windowSegs', '-', '4096']);
  assert.match(text, /all counters 0: self/);
  assert.match(text, /0 everywhere: msgsRecv, bytesRecv, pending, drops/);
  assert.deepEqual(rowOf(text, 'peers'), ['peers', '0', '1']);
  assert.deepEqual(rowOf(text, 'drops'), ['drops', '1', '0']);
  assert.deepEqual(rowOf(text, 'posted'), ['posted', '2']);
  assert.match(text, /^singleCopy: none$/m);
});

test('formatStats: counters it has never heard of become rows; nested objects dotted; strings kept', () => {
  const text = formatStats({
    rank: 0,
    peers: { 1: { msgsSent: 1, lanes: { shm: { queueDepth: 9 }, tcp: { queueDepth: 0, resets: 2 } } } },
    singleCopy: { 1: { tx: 'cma', rx: 'ring', tries: 1 } },
    newGroup: { a: { laneFlips: 1.23456 } },
  });
  assert.deepEqual(rowOf(text, 'lanes.shm.queueDepth'), ['lanes.shm.queueDepth', '9']);
  assert.deepEqual(rowOf(text, 'lanes.tcp.resets'), ['lanes.tcp.resets', '2']);
  assert.deepEqual(rowOf(text, 'tx'), ['tx', 'cma']);
  assert.deepEqual(rowOf(text, 'laneFlips'), ['laneFlips', '1.235']);
  assert.deepEqual(rowOf(text, 'newGroup'), ['newGroup', 'a']);
});

test('formatStats: more members than columns give a row per member; many zero counters are counted', () => {
  const peers = {};
  for (let r = 0; r < 20; r++) peers[r] = counters({ msgsSent: r, bytesSent: 8 * r });
  const zeros = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`z${i}`, 0]));
  const text = formatStats({ rank: 1, peers, rails: { udp: { segsSent: 5, ...zeros } } });
  assert.deepEqual(rowOf(text, 'peers'), ['peers', 'msgsSent', 'bytesSent']);
  assert.deepEqual(rowOf(text, '19'), ['19', '19', '152']);
  assert.match(text, /all counters 0: 0\n/);
  assert.match(text, /\(30 more counters are 0 everywhere; --stats=json shows every counter\)/);
  // Columns line up: every row of the peers block is as wide as its header.
  const block = text.split('\n').filter((l) => /^ {2}\d+ +\d/.test(l));
  assert.equal(new Set(block.map((l) => l.length)).size, 1, block.join('\n'));
});

test('formatStats: a group whose counters are all zero is one line', () => {
  assert.equal(formatStats({ rank: 0, protocol: { posted: 0, unexpected: 0 } }), 'railcomm stats, rank 0\nprotocol: all 2 counters 0\n');
});
