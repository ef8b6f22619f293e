// Where a collective's tail goes at many ranks: every rank times each
// allreduce of a run on its own clock, and records its V8 GC pauses and its
// thread's context switches (/proc/thread-self/status) over the timed calls.
// A call is "slow" when it takes more than 3x the rank's median call (and
// 20 us more). Rank 0 then says, for its slow calls, how much time they lost
// in all, how many overlap a GC pause on some rank (absolute times, one
// clock), and how many context switches the ranks' threads took: preemption
// of a spinning rank (involuntary switches) stalls every rank, since each
// call waits for the slowest. Also the host's inter-processor interrupts over the timed calls
// (TLB shootdowns: thread ranks share one address space, so what one isolate unmaps or
// protects interrupts the CPUs of the others). Prints one JSON line ({"benchmark":"coll-stalls",...}).
//   node dist/cli/main.js run -n 16 [--threads] bench/coll-stalls.mjs [size=65536] [calls=2000] [async|sync]
// COLL_STALLS_WARM_MS: the warm-up (below); COLL_STALLS_MARK=1: lines around the timed calls.
import { PerformanceObserver } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { init } from '../dist/index.js';

const comm = await init();
const size = Number(process.argv[2] ?? 65536);
const N = Number(process.argv[3] ?? 2000);
const sync = process.argv[4] === 'sync';
const gcs = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcs.push([performance.timeOrigin + e.startTime, e.duration]); }).observe({ entryTypes: ['gc'] });

/** This thread's [voluntary, involuntary] context switches so far. */
function switches() {
  const s = readFileSync('/proc/thread-self/status', 'utf8');
  const v = /^voluntary_ctxt_switches:\s+(\d+)/m.exec(s), nv = /^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(s);
  return [Number(v?.[1] ?? NaN), Number(nv?.[1] ?? NaN)];
}

/** The host's inter-processor interrupts so far, summed over CPUs: TLB shootdowns, function calls, reschedules. */
function ipis() {
  const out = { tlb: NaN, call: NaN, resched: NaN };
  let text = '';
  try { text = readFileSync('/proc/interrupts', 'utf8'); } catch { return out; }
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    const key = { 'TLB:': 'tlb', 'CAL:': 'call', 'RES:': 'resched' }[f[0]];
    if (key !== undefined) out[key] = f.slice(1).filter((x) => /^\d+$/.test(x)).reduce((a, x) => a + Number(x), 0);
  }
  return out;
}

const n = Math.max(1, Math.floor(size / 8));
const send = new Float64Array(n).fill(comm.rank + 1), recv = new Float64Array(n);
const t = new Float64Array(N + 1);
// One loop function for warm-up and the timed calls, as bench/coll.ts: a loop of its own for
// the timed calls would be compiled (on-stack replacement) while it is timed.
function loopSync(count, times) {
  for (let i = 0; i < count; i++) {
    comm.allreduceSync(send, recv, 'sum');
    times[i + 1] = performance.now();
  }
}
async function loopAsync(count, times) {
  for (let i = 0; i < count; i++) {
    await comm.allreduce(send, recv, 'sum');
    times[i + 1] = performance.now();
  }
}
const loop = sync ? async (count, times) => { loopSync(count, times); } : loopAsync;
// Warm-up until rank 0 has run COLL_STALLS_WARM_MS (default 1000; the ranks agree after each
// chunk): V8 compiles the path in tiers, the last ones after hundreds of milliseconds, and a
// compile that lands among the timed calls (on a background thread that takes a spinning
// rank's core, or on the rank's own thread) is a stall of the warm-up's, not the library's.
const scratch = new Float64Array(Math.max(N, 2000) + 1);
const warmMs = Number(process.env.COLL_STALLS_WARM_MS ?? 1000);
// Rank 0's word to go on travels by broadcast, sync or async as the timed calls: an allreduce
// of another size and op among them sent the optimized reduction back to the interpreter.
const w0 = performance.now(), more = new Uint8Array(1);
for (;;) {
  await loop(size <= 8192 ? 2000 : 200, scratch);
  more[0] = comm.rank === 0 && performance.now() - w0 < warmMs ? 1 : 0;
  if (sync) comm.bcastSync(more, 0);
  else await comm.bcast(more, 0);
  if (more[0] === 0) break;
}
if (sync) comm.barrierSync();
else await comm.barrier();
const sw0 = switches();
const ipi0 = comm.rank === 0 ? ipis() : null;
const gc0 = gcs.length;
// COLL_STALLS_MARK=1: a line before and after the timed calls, to cut a --trace-opt/--trace-deopt log.
const mark = process.env.COLL_STALLS_MARK === '1';
if (mark) process.stdout.write('coll-stalls: timed calls begin\n');
t[0] = performance.now();
await loop(N, t);
if (mark) process.stdout.write('coll-stalls: timed calls end\n');
const sw1 = switches();
const ipi1 = comm.rank === 0 ? ipis() : null;
const d = new Float64Array(N);
for (let i = 0; i < N; i++) d[i] = t[i + 1] - t[i];
const sorted = Float64Array.from(d).sort();
const med = sorted[N >> 1];
const origin = performance.timeOrigin;
const slow = [];
let lost = 0;
for (let i = 0; i < N; i++) {
  if (d[i] > 3 * med && d[i] > med + 0.02) { slow.push([i, origin + t[i], d[i]]); lost += d[i] - med; }
}
const myGcs = gcs.slice(gc0).filter(([at]) => at >= origin + t[0] && at <= origin + t[N]);
const mine = {
  rank: comm.rank, medianUs: med * 1000, averageUs: (t[N] - t[0]) * 1000 / N, slow: slow.length, lostMs: lost,
  gcs: myGcs.length, gcMs: myGcs.reduce((a, [, ms]) => a + ms, 0), gcList: myGcs.slice(0, 200),
  voluntary: sw1[0] - sw0[0], involuntary: sw1[1] - sw0[1], slowList: comm.rank === 0 ? slow : [],
};
const all = await comm.allgatherObject(mine);
if (comm.rank === 0) {
  const gcAll = all.flatMap((r) => r.gcList);
  let withGc = 0, lostWithGc = 0;
  for (const [, at, ms] of slow) {
    if (gcAll.some(([g, gms]) => g < at + ms && g + gms > at)) { withGc++; lostWithGc += ms - med; }
  }
  const sum = (f) => all.reduce((a, r) => a + f(r), 0);
  const out = {
    benchmark: 'coll-stalls', size, calls: N, mode: sync ? 'sync' : 'async', ranks: comm.size,
    rank0: { medianUs: +(med * 1000).toFixed(3), averageUs: +mine.averageUs.toFixed(3), slowCalls: slow.length, lostMs: +lost.toFixed(3), slowWithGc: withGc, lostWithGcMs: +lostWithGc.toFixed(3) },
    // The whole host's, over rank 0's timed calls (other ranks' stragglers and other work included).
    ipis: { tlb: ipi1.tlb - ipi0.tlb, call: ipi1.call - ipi0.call, resched: ipi1.resched - ipi0.resched },
    allRanks: { gcs: sum((r) => r.gcs), gcMs: +sum((r) => r.gcMs).toFixed(3), involuntary: sum((r) => r.involuntary), voluntary: sum((r) => r.voluntary), maxAverageUs: +Math.max(...all.map((r) => r.averageUs)).toFixed(3) },
    perRank: all.map((r) => [r.rank, +r.averageUs.toFixed(2), r.slow, r.gcs, r.involuntary, r.voluntary]),
    slowest: slow.sort((a, b) => b[2] - a[2]).slice(0, 8).map(([i, , ms]) => [i, +(ms * 1000).toFixed(1)]),
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}
await comm.finalize();
