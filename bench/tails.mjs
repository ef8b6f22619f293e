// Where the 8-byte async ping-pong's average goes beyond its median (issue
// 18, section 2): batches of 100 round trips, the clock read once per batch
// (a clock read allocates on Node 20), so the figure is osu_latency's
// average. Reports the average and median batch (half round trip, us), their
// ratio, the batches that took over 10x the median ("slow": a stall of about
// a millisecond or more inside them), how many of those overlap a garbage
// collection on either rank, and each rank's collections (count, total ms,
// kinds). SYNC=1: the same through sendSync/recvSync, with each rank's
// doorbell waits in the timed batches (syncBlocks: waits past the spin budget).
//   node dist/cli/main.js run -n 2 --rails shm,self bench/tails.mjs [batches, 2000] [warm-up round trips, 200000]
//   RAILCOMM_NODE_FLAGS='... --single-threaded-gc' node dist/cli/main.js run -n 2 bench/tails.mjs   (V8 flags to try)
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { init } from '../dist/index.js';

const comm = await init();
const BATCHES = Number(process.argv[2] ?? 2000);
const WARM = Number(process.argv[3] ?? 200000);
const BATCH = 100;
const sync = process.env.SYNC === '1';
const KIND = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
const gcs = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcs.push([performance.timeOrigin + e.startTime, e.duration, KIND[e.detail?.kind] ?? '?']); }).observe({ entryTypes: ['gc'] });
const b = new Uint8Array(8), peer = 1 - comm.rank, first = comm.rank === 0;

async function hops(n) {
  for (let i = 0; i < n; i++) {
    if (first) { await comm.send(b, peer, 1); await comm.recv(b, peer, 1); }
    else { await comm.recv(b, peer, 1); await comm.send(b, peer, 1); }
  }
}
function hopsSync(n) {
  for (let i = 0; i < n; i++) {
    if (first) { comm.sendSync(b, peer, 1); comm.recvSync(b, peer, 1); }
    else { comm.recvSync(b, peer, 1); comm.sendSync(b, peer, 1); }
  }
}
/** Batch k's start (absolute ms) and half round trip (us) in starts[k], us[k]. */
const starts = new Float64Array(BATCHES), us = new Float64Array(BATCHES);
async function batches(n, record) {
  for (let k = 0; k < n; k++) {
    const t0 = performance.now();
    if (sync) hopsSync(BATCH); else await hops(BATCH);
    if (record) { starts[k] = t0; us[k] = ((performance.now() - t0) * 500) / BATCH; }
  }
}
// The warm-up runs the timed loop itself (with its clock reads) and the barrier after it, twice: a
// warm-up without them left code cold that the window then ran, and V8 compiled it again during the
// window (10-37 ms of TurboFan on a background thread, taking a core from a spinning rank: the slow
// batches this script reported before). The second barrier finds everything optimized and stable.
for (let pass = 0; pass < 2; pass++) {
  for (let done = 0; done < WARM / BATCH / 2; done += BATCHES) await batches(BATCHES, true);
  await comm.barrier();
}
gcs.length = 0;
const blocks = () => comm.world.ctx.p2p.snapshot().syncBlocks;
const blocks0 = blocks();
await batches(BATCHES, true);
const myBlocks = blocks() - blocks0;
await new Promise((r) => setTimeout(r, 50));
const mine = gcs.map(([t, d, k]) => [t, d, k]);
if (!first) {
  await comm.sendObject({ mine, myBlocks }, 0, 99);
} else {
  const { value: { mine: theirs, myBlocks: theirBlocks } } = await comm.recvObject(1, 99);
  const sorted = Float64Array.from(us).sort();
  const med = sorted[BATCHES >> 1];
  let sum = 0;
  for (let k = 0; k < BATCHES; k++) sum += us[k];
  const avg = sum / BATCHES;
  const all = [...mine, ...theirs];
  const slow = [];
  for (let k = 0; k < BATCHES; k++) if (us[k] > 10 * med) slow.push(k);
  const t0 = (k) => performance.timeOrigin + starts[k];
  const overlapping = slow.filter((k) => all.some(([g, d]) => g <= t0(k) + (us[k] * BATCH * 2) / 1000 && g + d >= t0(k))).length;
  const summary = (list) => ({ n: list.length, ms: +list.reduce((a, [, d]) => a + d, 0).toFixed(1), kinds: list.reduce((o, [, , k]) => ((o[k] = (o[k] ?? 0) + 1), o), {}) });
  // What the slow batches cost: the average without them.
  let rest = 0;
  for (let k = 0; k < BATCHES; k++) if (us[k] <= 10 * med) rest += us[k];
  console.log(JSON.stringify({
    benchmark: 'tails', calls: sync ? 'sync' : 'async', flags: process.execArgv.join(' '), batches: BATCHES, batchRoundTrips: BATCH,
    avgUs: +avg.toFixed(3), medianUs: +med.toFixed(3), avgOverMedian: +(avg / med).toFixed(2), avgWithoutSlowUs: +(rest / (BATCHES - slow.length)).toFixed(3),
    slowBatches: slow.length, slowOverlappingGc: overlapping, slowestUs: +sorted[BATCHES - 1].toFixed(1),
    gcRank0: summary(mine), gcRank1: summary(theirs),
    // Doorbell waits of the synchronous calls in the timed batches (comm/sync.ts: a wait past its spin budget).
    syncBlocksRank0: myBlocks, syncBlocksRank1: theirBlocks,
  }));
}
await comm.finalize();
