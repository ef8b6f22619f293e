// A udp rail's last message, sent in a quiet period and lost, must still be
// delivered: nothing else will come to wake the sender up, so its own timer
// has to retransmit. Two real rails over loopback; the loss is injected by
// dropping exactly one datagram at the sender's sockets (deterministic).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { udpComponent } from '../../dist/rail/udp/component.js';
import { resolveParams } from '../../dist/core/params.js';
import { Logger } from '../../dist/core/log.js';
import { endpointId } from '../../dist/core/ids.js';
import { DONE } from '../../dist/rail/api.js';
import { T_FRAG } from '../../dist/rail/udp/wire.js';

const JOB = 78;
const KEY = 'cd'.repeat(32);
const AM_MSG = 1;

function makeSide(rank, params) {
  const side = { rank, id: endpointId(JOB, rank), got: [], failed: [] };
  const handlers = [];
  handlers[AM_MSG] = { recv: (_ep, rx) => { side.got.push(rx.view.getUint32(rx.hdrOff, true)); } };
  const upcalls = {
    am: handlers,
    ready: () => {},
    failed: (_ep, err) => { side.failed.push(err.message); },
    accepted: () => {},
    activity: () => {},
  };
  // What the rail logs stays here, not on the runner's output.
  side.env = { self: side.id, jobId: JOB, jobKey: KEY, params, log: new Logger('error', 'railcomm', (line) => (side.logged ??= []).push(line)), upcalls };
  return side;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(cond, ms) {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) return false;
    await sleep(2);
  }
  return true;
}

/**
 * Drop the next `n` sequenced fragments (FRAG datagrams) the rail transmits,
 * on either channel. Patched where the rail hands a datagram to its sockets
 * (dgram.send or the addon's sendmmsg), so every way out is covered.
 */
function dropNextFrags(rail, n) {
  let left = n;
  const transmitRaw = rail.transmitRaw;
  rail.transmitRaw = function (ep, buf, len, prio) {
    if (left > 0 && (buf[3] & 0x3f) === T_FRAG) { left--; return; }
    transmitRaw.call(this, ep, buf, len, prio);
  };
  return () => n - left;
}

test('udp rail: a last message lost in a quiet period is retransmitted by the timer (no later traffic needed)', async () => {
  const params = resolveParams({ udpFaults: '' });
  const a = makeSide(0, params);
  const b = makeSide(1, params);
  const lo = udpComponent.queryDevices(params).find((d) => d.kind === 'loopback');
  a.rail = await udpComponent.open(lo, a.env);
  b.rail = await udpComponent.open(lo, b.env);
  try {
    const ep = a.rail.endpoint(b.id, b.rail.address());
    const hdr = (i) => { const h = new Uint8Array(8); new DataView(h.buffer).setUint32(0, i, true); return h; };
    assert.equal(ep.sendCopy(AM_MSG, hdr(0), 8, null), DONE);
    assert.ok(await until(() => b.got.length === 1 && ep.session.idle && b.rail.hotel.guests === 0, 5000), 'first message delivered and acknowledged');
    // Quiet: wait until both rails' backstop timers have run down (nothing waits on time).
    assert.ok(await until(() => a.rail.timer === null && b.rail.timer === null, 5000), 'both rails idle');
    await sleep(20);
    const dropped = dropNextFrags(a.rail, 1);
    // Sent from a timer callback, as a rank's own code does: not from inside the rail's receive path.
    await new Promise((resolve) => setTimeout(() => { assert.equal(ep.sendCopy(AM_MSG, hdr(1), 8, null), DONE); resolve(); }, 1));
    assert.equal(dropped(), 1, 'the first copy was lost');
    assert.ok(await until(() => b.got.length === 2, 3000), `the lost message was retransmitted and delivered (got ${b.got.join(',')}; sender hotel guests ${a.rail.hotel.guests})`);
    assert.deepEqual(b.got, [0, 1]);
    assert.ok(await until(() => ep.session.idle, 3000), 'the sender drained');
    assert.deepEqual(a.failed, []);
    assert.deepEqual(b.failed, []);
  } finally {
    await a.rail.close();
    await b.rail.close();
  }
});
