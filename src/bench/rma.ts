// The rank program behind `railcomm bench put|get|atomic`: one-sided operations
// from rank 0 on rank 1's window (osu_put_latency / osu_get_bw /
// osu_atomic_latency style). Rank 0 holds a shared lock on rank 1 for the whole
// run; rank 1 waits in a barrier. Rank 0 prints one JSON line.

import { init, type Window } from '../index.js';
import { tellProgress } from './progress.js';

interface Row { op?: string; size: number; usec: number; usec_median?: number; usec_median_flush?: number; usec_median_awaited?: number; mbps?: number; ops_per_sec?: number; iters: number }

const WINDOW = 64;

// A put or an atomic on mapped memory costs a fraction of a microsecond, so V8
// must see a few hundred thousand calls before the path is fully optimised
// (fetch-add here: 0.22 us per call over the first 300,000, 0.13 after
// 900,000), and the clock is read once per batch of BATCH operations, not
// per operation.
const BATCH = 100;
function iterations(size: number, base: number): { iters: number; warmup: number } {
  if (size <= 8192) return { iters: Math.max(BATCH, base * 25), warmup: Math.max(200000, base * 100) };
  if (size < 1 << 20) return { iters: Math.max(50, Math.ceil(base / 10)), warmup: 20 };
  return { iters: Math.max(20, Math.ceil(base / 40)), warmup: 5 };
}

/**
 * n operations of one kind, each completed at the target before the next
 * (osu_put_latency / osu_get_latency: MPI_Put or MPI_Get, then
 * MPI_Win_flush). The fastest correct form in railcomm tests whether a flush
 * is needed (never on mapped memory) and awaits one only then; the other
 * forms await the flush always ('put-flush'), or the operation's own promise
 * as well ('put-awaited', 'get-awaited': a get's promise resolves when the
 * bytes are here, which is what the flush gives MPI_Get).
 */
async function latencyLoop(win: Window, kind: string, msg: Uint8Array, n: number): Promise<void> {
  switch (kind) {
    case 'put': for (let i = 0; i < n; i++) { void win.put(msg, 1, 0); if (!win.testFlush(1)) await win.flush(1); } break;
    case 'put-flush': for (let i = 0; i < n; i++) { void win.put(msg, 1, 0); await win.flush(1); } break;
    case 'put-awaited': for (let i = 0; i < n; i++) { await win.put(msg, 1, 0); await win.flush(1); } break;
    case 'get': for (let i = 0; i < n; i++) { void win.get(msg, 1, 0); if (!win.testFlush(1)) await win.flush(1); } break;
    case 'get-awaited': for (let i = 0; i < n; i++) await win.get(msg, 1, 0); break;
    default: for (let i = 0; i < n; i++) await win.fetchAndOp(1n, 1, 0, 'sum', 'i64');
  }
}

/** Time iters operations in batches: per-operation times of each batch into times (sorted); returns the total (us). */
async function timeBatches(win: Window, kind: string, msg: Uint8Array, iters: number, batch: number, times: number[]): Promise<number> {
  let total = 0;
  for (let i = 0; i < iters; i += batch) {
    const t0 = performance.now();
    await latencyLoop(win, kind, msg, batch);
    const dt = ((performance.now() - t0) * 1000) / batch;
    times.push(dt);
    total += dt * batch;
  }
  times.sort((a, b) => a - b);
  return total;
}

async function main(): Promise<void> {
  const [kind = 'put', sizesText = '8', itersText = '2000'] = process.argv.slice(2);
  const comm = await init();
  if (comm.size < 2) throw new Error('the benchmark needs 2 ranks');
  const sizes = kind === 'atomic' ? [8] : sizesText.split(',').filter(Boolean).map(Number);
  const base = Number(itersText);
  const maxSize = Math.max(...sizes, 8);
  const win = await comm.allocWindow(maxSize * WINDOW);
  const rows: Row[] = [];
  if (comm.rank === 0) {
    const buf = new Uint8Array(maxSize).fill(3);
    await win.lock(1, 'shared');
    for (const [k, size] of sizes.entries()) {
      const { iters, warmup } = iterations(size, base);
      const msg = buf.subarray(0, size);
      const times: number[] = [];
      tellProgress(comm.rank, { phase: 'start', size: kind === 'atomic' ? 'fetch-add' : size, index: k + 1, of: sizes.length });
      // Latency: one operation then its completion at the target; timed per
      // batch. The loop calls the API directly, as osu's C loop does: an async
      // wrapper per operation would add its own promise to every figure.
      await latencyLoop(win, kind, msg, warmup);
      const batch = size <= 8192 ? BATCH : 1;
      const total = await timeBatches(win, kind, msg, iters, batch, times);
      const row: Row = { size, usec: round(total / iters, 3), usec_median: round(times[times.length >> 1]!, 3), iters };
      if (kind !== 'atomic' && size <= 8192) {
        // The same completed through awaits: the flush's (put), and the operation's own.
        for (const [form, key] of kind === 'put' ? [['put-flush', 'usec_median_flush'], ['put-awaited', 'usec_median_awaited']] as const : [['get-awaited', 'usec_median_awaited']] as const) {
          await latencyLoop(win, form, msg, warmup);
          const t: number[] = [];
          await timeBatches(win, form, msg, iters, batch, t);
          row[key] = round(t[t.length >> 1]!, 3);
        }
      }
      if (kind === 'atomic') {
        // Compare-and-swap latency, reported beside fetch-add's.
        for (let i = 0; i < warmup; i++) await win.compareAndSwap(0n, 1n, 1, 8, 'i64');
        const t0 = performance.now();
        for (let i = 0; i < iters; i++) await win.compareAndSwap(0n, 1n, 1, 8, 'i64');
        const cas = (performance.now() - t0) * 1000;
        row.ops_per_sec = Math.round(1e6 / (total / iters));
        // The second row is compare-and-swap: its mean only (timed as one run, not in batches).
        row.op = 'fetch-add';
        rows.push(row, { op: 'compare-and-swap', size: 8, usec: round(cas / iters, 3), iters });
        tellProgress(comm.rank, { phase: 'done', size: 'fetch-add', index: k + 1, of: sizes.length, value: row.usec_median ?? 0, unit: 'us' });
        continue;
      }
      // Bandwidth: a window of operations to distinct offsets, then one flush.
      const ops: Array<Promise<void>> = new Array<Promise<void>>(WINDOW);
      const bwIters = Math.max(5, Math.ceil(iters / 10));
      let t0 = 0n;
      for (let i = 0; i < 2 + bwIters; i++) {
        if (i === 2) t0 = process.hrtime.bigint();
        for (let w = 0; w < WINDOW; w++) ops[w] = kind === 'put' ? win.put(msg, 1, w * size) : win.get(msg, 1, w * size);
        await Promise.all(ops);
        await win.flush(1);
      }
      row.mbps = round((size * WINDOW * bwIters) / (Number(process.hrtime.bigint() - t0) / 1e9) / 1e6);
      rows.push(row);
      tellProgress(comm.rank, { phase: 'done', size, index: k + 1, of: sizes.length, value: row.usec_median ?? 0, unit: 'us' });
    }
    await win.unlock(1);
  }
  await comm.barrier();
  if (comm.rank === 0) {
    const ep = comm.world.ctx.endpointFor(1);
    const direct = win.directTargets > 1;
    process.stdout.write(JSON.stringify({ benchmark: kind, rails: direct ? `${ep.lane?.rail.component ?? '?'} (direct memory access)` : ep.lane?.rail.component ?? 'unknown', ranks: comm.size, results: rows }) + '\n');
  }
  await win.free();
  await comm.finalize();
}

function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exitCode = 1;
});
