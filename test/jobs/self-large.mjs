// Messages to oneself larger than what one active message on the self rail
// carries (4 MiB) arrive intact: the protocol takes them by rendezvous, in
// chunks no larger than that, whatever the eager limit, rendezvous threshold
// or chunk size asked for. Run with plain node (a world of one rank):
//   node test/jobs/self-large.mjs
//   RAILCOMM_EAGER_LIMIT=64m RAILCOMM_RNDV_THRESHOLD=1g RAILCOMM_RNDV_CHUNK=64m node test/jobs/self-large.mjs
import { init } from '../../dist/index.js';
import assert from 'node:assert/strict';

const comm = await init();
assert.equal(comm.size, 1);
const caps = comm.world.ctx.endpointFor(0).lane.rail.caps;
const amMax = Math.max(caps.amCopyMax, caps.amZcopyMax);
// One active message to self is copied whole (at send, or into the receive buffer): its limit bounds that copy.
assert.ok(amMax <= 16 << 20, `the self rail takes active messages of up to ${amMax} B: larger ones should go by rendezvous`);
const pattern = (n, seed) => { const b = new Uint8Array(n); for (let i = 0; i < n; i += 512) b[i] = (i >>> 9) * 7 + seed; b[n - 1] = seed; return b; };
const selfMsgs = () => comm.stats().rails.self.msgsSent;

for (const n of [3 << 20, 4 << 20, (4 << 20) + 1, 64 << 20]) {
  for (const order of ['recv first', 'send first']) {
    const out = pattern(n, n & 0xff);
    const got = new Uint8Array(n);
    const m0 = selfMsgs();
    if (order === 'recv first') {
      const r = comm.irecv(got, 0, 7);
      await comm.send(out, 0, 7);
      await r.wait();
    } else {
      const s = comm.isend(out, 0, 7);
      await comm.recv(got, 0, 7);
      await s.wait();
    }
    assert.equal(Buffer.compare(got, out), 0, `${n} B (${order}) intact`);
    // Each active message carries at most amMax bytes: a larger message took several.
    const msgs = selfMsgs() - m0;
    assert.ok(msgs >= Math.ceil(n / amMax), `${n} B (${order}) took ${msgs} active messages of at most ${amMax} B`);
  }
}
console.log(`SELF-LARGE ok (one active message carries at most ${amMax} B)`);
await comm.finalize();
