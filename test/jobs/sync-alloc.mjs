// The synchronous calls allocate nothing per call: rank 0 plays both sides of
// an 8-byte ping-pong over its shm lane (it writes rank 1's next frame into
// its own inbound ring and drains what it sends, as bench/hop-cpu.mjs does),
// so nothing waits and the count is exact whatever the machine's load: the
// garbage collections during HOPS sendSync/recvSync pairs after a warm-up,
// and the heap's growth. Then the same for allreduceSync of one double
// through the shared segment, rank 0 raising rank 1's flag and filling its
// box itself before each call. Rank 1 steps aside until rank 0 is done.
//   railcomm run -n 2 --rails shm,self test/jobs/sync-alloc.mjs [hops]
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { init } from '../../dist/index.js';
import { Ring } from '../../dist/rail/shared/ring.js';
import { AM_EAGER, EAGER_HDR, EAGER_OVERHEAD, encodeMatchHeader } from '../../dist/proto/wire.js';

const HOPS = Number(process.argv[2] ?? 1000000);
const comm = await init();
const me = comm.rank, peer = 1 - me;
const b = new Uint8Array(8);
const pidBuf = new Float64Array(1);
if (me === 0) { pidBuf[0] = process.pid; await comm.send(pidBuf, peer); await comm.recv(b, peer); } else { await comm.recv(pidBuf, peer); await comm.send(b, peer); }
// Both attach the segment (the first collective), then rank 1 steps aside.
const x = new Float64Array([me + 1]), y = new Float64Array(1);
comm.allreduceSync(x, y, 'sum');
if (me === 1) {
  // Its rings now say things its own view of them does not: no finalize here.
  const alive = () => { try { process.kill(pidBuf[0], 0); return true; } catch { return false; } };
  while (alive()) await new Promise((r) => setTimeout(r, 50));
  process.exit(0);
}
const ctx = comm.world.ctx;
const ep = ctx.endpointFor(peer);
const lane = ep.lane;
const fakeIn = new Ring(lane.inbound.ring.sab); // producer side of our inbound ring, in rank 1's place
const fakeOut = new Ring(lane.out.sab); // consumer side of our outbound ring
const hdr = new Uint8Array(64), hv = new DataView(hdr.buffer);
const nothing = () => {};
const pc = comm.p2pCtx;
function hop() {
  encodeMatchHeader(hv, pc, peer, 0, ep.rx.expected, 8 + EAGER_OVERHEAD);
  if (!fakeIn.write(AM_EAGER, hdr, EAGER_HDR, b)) throw new Error('inbound ring full');
  comm.recvSync(b, peer, 0);
  comm.sendSync(b, peer, 0);
  fakeOut.drain(nothing);
}
function run(n) { for (let i = 0; i < n; i++) hop(); }
// Warm-up: the loop is entered several times, with pauses between, so that
// the measured entry runs optimized code (after one long warm-up only the
// loop's on-stack-replacement code existed, and a CI run now and then
// measured the few hundred KiB that a late tier-up allocates once).
// Then a full collection: marking the warm-up's garbage, begun before the timed
// loop, is finished by V8 inside the loop (a GC entry with no allocation of the
// loop's; a CI run counted 2 that way), so none may be left in progress.
v8.setFlagsFromString('--expose-gc');
const fullGc = vm.runInNewContext('gc');
async function warm(f) {
  for (let k = 0; k < 4; k++) { f(50000); await new Promise((r) => setTimeout(r, 25)); }
  await new Promise((r) => setTimeout(r, 100));
  fullGc();
  // (Its own entry reaches the observer later: let it come before the count is reset.)
  await new Promise((r) => setTimeout(r, 50));
}
let gcs = 0;
const KIND = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
const kinds = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) { gcs++; kinds.push(KIND[e.detail?.kind] ?? '?'); } }).observe({ entryTypes: ['gc'] });
await warm(run);
gcs = 0; kinds.length = 0;
const h0 = process.memoryUsage().heapUsed;
run(HOPS);
const h1 = process.memoryUsage().heapUsed;
await new Promise((r) => setTimeout(r, 100));
console.log(`ALLOC ${JSON.stringify({ hops: HOPS, gcs, kinds, heapGrowthBytes: h1 - h0 })}`);

// allreduceSync: rank 1's arrival written by rank 0 (flat phases, 2 ranks: its flag on line 2, its
// box for the round's parity after the flag word; shared.ts and shared-phase.ts lay them out).
const sh = comm.planner.shared;
const ctrl = sh.phases.ctrl;
const seg = sh.seg;
const boxes = [0, 1].map((ph) => new Float64Array(seg.buffer, seg.byteOffset + 2 * 64 + 8 + ph * 24, 1));
function call() {
  boxes[(sh.round + 1) & 1][0] = 2;
  Atomics.store(ctrl, 2 * 16, sh.phases.seq + 1);
  comm.allreduceSync(x, y, 'sum');
}
function calls(n) { for (let i = 0; i < n; i++) call(); if (y[0] !== 3) throw new Error(`allreduceSync gave ${y[0]}`); }
await warm(calls);
gcs = 0; kinds.length = 0;
const c0 = process.memoryUsage().heapUsed;
calls(HOPS);
const c1 = process.memoryUsage().heapUsed;
await new Promise((r) => setTimeout(r, 100));
console.log(`ALLOC_COLL ${JSON.stringify({ calls: HOPS, gcs, kinds, heapGrowthBytes: c1 - c0 })}`);
await comm.finalize();
