// The rank program behind `railcomm bench allreduce|bcast|allgather|alltoall`
// (and barrier, run directly: node dist/cli/main.js run -n 16 dist/bench/coll.js barrier 0):
// osu_allreduce style, average microseconds per call over the ranks (each
// rank times its own calls; rank 0 reports the mean of the ranks' averages).
// With RAILCOMM_BENCH_SYNC=1 (railcomm bench --sync): allreduceSync,
// bcastSync, allgatherSync (alltoall has no synchronous twin).

import { init } from '../index.js';
import { SYNC_ENV, tellProgress } from './progress.js';

type Kind = 'allreduce' | 'bcast' | 'allgather' | 'alltoall' | 'barrier';

// V8 needs thousands of calls before the hot path is optimised (an 8-byte
// allreduce measured 187 us on average after 100 warm-up calls, 38 us after
// 3000), so small sizes warm up far longer than a C benchmark would. Larger
// sizes take other paths (split reduction, long kernels) that V8 compiles on a
// background thread, which on 2 cores preempts one of the two spinning ranks:
// a 64 KiB allreduce averaged 100-200 us over 100 calls after 5 warm-up calls,
// 16-17 us after 500. The timed calls stay as many as the C benchmark's.
// Below 1 MiB the warm-up also lasts at least WARM_MS on rank 0 (ranks agree
// after every WARM_CHUNK calls whether to go on): on shared memory an 8-byte
// allreduce takes half a microsecond, and 2,000 calls are over before V8 has
// optimised it (1,000 timed calls averaged 33 us after them, 0.47 us over
// 200,000). Small sizes time 10x the base count, so that one GC pause does not
// decide the average.
const WARM_MS = 300;
const WARM_CHUNK = 1000;
/** Batches the timed calls are split into (see the timing loop). */
const BATCHES = 20;

function median(xs: Float64Array): number {
  const s = Float64Array.from(xs).sort();
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

function iterations(size: number, base: number): { iters: number; warmup: number } {
  if (size <= 8192) return { iters: base * 10, warmup: Math.max(2000, base) };
  if (size < 1 << 20) return { iters: Math.max(10, Math.ceil(base / 10)), warmup: 200 };
  return { iters: Math.max(5, Math.ceil(base / 50)), warmup: 50 };
}

async function main(): Promise<void> {
  const [kindText = 'allreduce', sizesText = '', itersText = '1000'] = process.argv.slice(2);
  const kind = kindText as Kind;
  const comm = await init();
  const p = comm.size;
  const sizes = sizesText.split(',').filter(Boolean).map(Number);
  const rows: Array<{ size: number; usec: number; iters: number; usec_batch: number; usec_max_rank: number }> = [];
  const sync = process.env[SYNC_ENV] === '1';
  for (const [k, size] of sizes.entries()) {
    const { iters, warmup } = iterations(size, Number(itersText));
    tellProgress(comm.rank, { phase: 'start', size, index: k + 1, of: sizes.length });
    const n = Math.max(1, Math.floor(size / 8));
    const sendD = new Float64Array(n).fill(comm.rank + 1), recvD = new Float64Array(n);
    const bytes = new Uint8Array(size);
    const gatherIn = new Uint8Array(size), gatherOut = new Uint8Array(size * p);
    const a2aIn = new Uint8Array(size * p), a2aOut = new Uint8Array(size * p);
    const once = (): Promise<void> => {
      switch (kind) {
        case 'allreduce': return comm.allreduce(sendD, recvD, 'sum');
        case 'bcast': return comm.bcast(bytes, 0);
        case 'allgather': return comm.allgather(gatherIn, gatherOut);
        case 'alltoall': return comm.alltoall(a2aIn, a2aOut);
        case 'barrier': return comm.barrier();
      }
    };
    // One loop function for warm-up and timing: a loop of its own for the
    // timed calls would be compiled (on-stack replacement, on the background
    // thread) while it is being timed.
    const onceSync = (): void => {
      switch (kind) {
        case 'allreduce': comm.allreduceSync(sendD, recvD, 'sum'); return;
        case 'bcast': comm.bcastSync(bytes, 0); return;
        case 'allgather': comm.allgatherSync(gatherIn, gatherOut); return;
        case 'alltoall': throw new Error('alltoall has no synchronous twin: run it without --sync');
        case 'barrier': comm.barrierSync(); return;
      }
    };
    const callsSync = (n: number): void => { for (let i = 0; i < n; i++) onceSync(); };
    const calls = sync ? async (n: number): Promise<void> => { callsSync(n); } : async (n: number): Promise<void> => { for (let i = 0; i < n; i++) await once(); };
    await comm.barrier();
    const w0 = performance.now();
    await calls(warmup);
    if (size < 1 << 20) {
      // Rank 0 says whether to go on by a broadcast, in the timed calls' flavour (sync or
      // async): an allreduce of its own (another size and op) sent V8's optimized reduction
      // back to the interpreter after every chunk, and at 16 ranks the recompilation (7-13 ms
      // of TurboFan per function) landed among the timed calls.
      const more = new Uint8Array(1);
      for (;;) {
        more[0] = comm.rank === 0 && performance.now() - w0 < WARM_MS ? 1 : 0;
        if (sync) comm.bcastSync(more, 0);
        else await comm.bcast(more, 0);
        if (more[0] === 0) break;
        await calls(WARM_CHUNK);
      }
    }
    if (sync) comm.barrierSync();
    else await comm.barrier();
    // Timed in batches (the clock read once per batch): the average over all
    // calls is the figure; each rank's median batch beside it tells a uniform
    // slowdown from a few stalled batches (a rank that lost its core).
    // At least 5 calls a batch: 64 KiB (100 calls) and 1 MiB (20) get batches too, so that one
    // stalled batch shows beside the median instead of passing for a uniform slowdown.
    const batches = Math.max(1, Math.min(BATCHES, Math.floor(iters / 5)));
    const perBatch = new Float64Array(batches);
    let total = 0;
    for (let b = 0; b < batches; b++) {
      const n = b < batches - 1 ? Math.floor(iters / batches) : iters - Math.floor(iters / batches) * (batches - 1);
      const t0 = process.hrtime.bigint();
      await calls(n);
      const ns = Number(process.hrtime.bigint() - t0);
      total += ns;
      perBatch[b] = ns / 1000 / n;
    }
    const mine = total / 1000 / iters;
    const sums = new Float64Array(2), worst = new Float64Array(1);
    await comm.reduce(new Float64Array([mine, median(perBatch)]), comm.rank === 0 ? sums : null, 'sum', 0);
    await comm.reduce(new Float64Array([mine]), comm.rank === 0 ? worst : null, 'max', 0);
    const r2 = (x: number): number => Math.round(x * 100) / 100;
    const usec = r2(sums[0]! / p);
    rows.push({ size, usec, iters, usec_batch: r2(sums[1]! / p), usec_max_rank: r2(worst[0]!) });
    tellProgress(comm.rank, { phase: 'done', size, index: k + 1, of: sizes.length, value: usec, unit: 'us' });
  }
  if (comm.rank === 0) {
    const lane = p > 1 ? comm.world.ctx.endpointFor(1).lane : null;
    process.stdout.write(JSON.stringify({ benchmark: kind, rails: `${lane?.rail.component ?? 'self'}${sync ? ' sync' : ''}`, ranks: p, results: rows }) + '\n');
  }
  await comm.finalize();
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exitCode = 1;
});
