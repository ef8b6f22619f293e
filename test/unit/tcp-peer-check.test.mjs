// The tcp rail's peer check (src/rail/tcp/peer-check.ts): keepalive settings
// whose probes end about the timeout after the last traffic, and the ACK-wait
// verdict, which fails a connection only on a second look past the limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keepaliveFor, ackVerdict } from '../../dist/rail/tcp/peer-check.js';

test('keepalive: idle + count * interval is the timeout (or just past it), every value within the kernel\'s bounds', () => {
  for (const t of [1, 2, 3, 4, 10, 59, 60, 61, 300, 3600, 32767, 100000, 400000]) {
    const k = keepaliveFor(t);
    const end = k.idle + k.count * k.interval;
    assert.ok(k.idle >= 1 && k.interval >= 1 && k.count >= 1, `${t}: ${JSON.stringify(k)}`);
    assert.ok(end >= t && end <= t + Math.max(2, k.interval), `${t}: probes end after ${end} s (${JSON.stringify(k)})`);
    assert.ok(k.count <= 127 && k.idle <= 32767 && k.interval <= 32767, `${t}: ${JSON.stringify(k)} (TCP_KEEPCNT <= 127, TCP_KEEPIDLE/INTVL <= 32767)`);
  }
  assert.deepEqual(keepaliveFor(60), { idle: 20, interval: 6, count: 7 });
});

test('ACK wait: a connection fails only when two looks in a row see it past the limit with no ACK between', () => {
  assert.equal(ackVerdict(0, 60_000, undefined), 'ok', 'nothing waits');
  assert.equal(ackVerdict(-9, 60_000, undefined), 'ok', 'a negative errno');
  assert.equal(ackVerdict(59_999, 60_000, 61_000), 'ok', 'an ACK came: forgotten');
  assert.equal(ackVerdict(600_000, 60_000, undefined), 'suspect', 'a first sight (the last ACK time may be stale as new data just left)');
  assert.equal(ackVerdict(605_000, 60_000, 600_000), 'fail', 'still no ACK on the next look');
  assert.equal(ackVerdict(61_000, 60_000, 600_000), 'suspect', 'an ACK came between the looks, and the wait grew past the limit again');
});
