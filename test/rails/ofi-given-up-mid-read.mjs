// Run by ofi-rail.test.mjs in a process of its own (a crash must not take the
// test runner with it): two tcp;ofi_rxm rails in this process, a reads 64 MiB
// of b's registered memory (fi_read), and gives up on b while the response is
// half way in (some bytes of the destination written, the last not yet), then
// both rails close. libfabric 1.17's tcp provider completes that read's
// receive twice when the connection is flushed at close (fixed in 1.18.0,
// commit a74ea0fcd), and the second completion, a zeroed one, crashes
// ofi_rxm (a NULL context). Prints "closed" once both rails closed.
import { resolveParams } from '../../dist/core/params.js';
import { ofiComponent } from '../../dist/rail/ofi/component.js';
import { openPair, connected } from './harness.mjs';

const BYTES = 64 << 20;
const pair = await openPair(ofiComponent, resolveParams(), (ds) => ds.find((d) => d.name === 'tcp;ofi_rxm/lo'), true);
const ep = await connected(pair);
const src = new Uint8Array(BYTES).fill(7);
const mem = pair.b.rail.registerMemory(src);
const key = pair.a.rail.unpackRemoteKey(mem.packed);
const dst = new Uint8Array(BYTES);
let done = null;
ep.get(dst, key, 0, { railComplete: (err) => { done = err ?? 'ok'; } });
// Both sides' progress until the response is partly in: its first bytes written, not its last.
const until = Date.now() + 10_000;
while (!(dst[0] === 7 && dst[BYTES - 1] === 0) && done === null && Date.now() < until) {
  pair.b.rail.poll();
  pair.a.rail.poll();
}
const midway = dst[0] === 7 && dst[BYTES - 1] === 0;
console.log(midway ? 'midway' : `not midway (done: ${done})`);
ep.giveUp('a test: the response is half way in');
await pair.a.rail.close();
mem.release();
await pair.b.rail.close();
console.log('closed');
