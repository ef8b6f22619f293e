// The rank program behind `railcomm bench latency|bw`: osu_latency-style half
// round trips and osu_bw-style windows of nonblocking sends, between ranks 0
// and 1. Rank 0 prints one JSON line with the results. With
// RAILCOMM_BENCH_SYNC=1 (railcomm bench --sync) the same through the
// synchronous calls: sendSync/recvSync round trips, and windows of sendSync
// (recvSync on the other side) then an ack.

import { init, waitAll, type Communicator, type Request } from '../index.js';
import { SYNC_ENV, tellProgress } from './progress.js';

interface Row { size: number; usec?: number; usec_median?: number; usec_batch?: number; usec_batch_avg?: number; usec_p90?: number; usec_p99?: number; mbps?: number; iters: number }

// V8 optimises the hot path only after tens of thousands of calls (the
// 8-byte mean falls by half between 20,000 and 300,000 round trips here):
// small sizes warm up long, and time 10x the base count (a few milliseconds
// of timed round trips let one compiler or GC pause move the median). Mid
// sizes warm up and time the base count: with a hundred round trips of
// warm-up their paths were still being compiled while timed, and with two
// hundred timed the p99 was the second-slowest round trip (1-2 ms compiler
// stalls, where 2,000 warm round trips show a p99 of 7 us at 64 KiB on shm).
function iterations(size: number, base: number): { iters: number; warmup: number } {
  if (size <= 8192) return { iters: base * 10, warmup: Math.max(1000, base * 10) };
  if (size < 1 << 20) return { iters: Math.max(20, base), warmup: Math.max(20, base) };
  return { iters: Math.max(10, Math.ceil(base / 10)), warmup: Math.max(5, Math.ceil(base / 20)) };
}

/**
 * n round trips between ranks 0 and 1 (tag 1), the clock read every `every`
 * round trips: times[k] gets the half round trip averaged over the k-th group
 * (us), when given. One small function for the warm-up and both timings: V8
 * optimises it as a whole during the warm-up, where a loop inside main() was
 * compiled on-stack, apart from the code around it (the same 8-byte hop
 * measured 0.42-0.45 us there, 0.35-0.38 in a loop of its own).
 */
async function pingPong(comm: Communicator, msg: Uint8Array, n: number, every: number, times: Float64Array | null): Promise<void> {
  const first = comm.rank === 0;
  const peer = first ? 1 : 0;
  for (let i = 0; i < n; i += every) {
    const t0 = times !== null ? performance.now() : 0;
    for (let k = 0; k < every; k++) {
      if (first) { await comm.send(msg, peer, 1); await comm.recv(msg, peer, 1); }
      else { await comm.recv(msg, peer, 1); await comm.send(msg, peer, 1); }
    }
    if (times !== null) times[i / every] = ((performance.now() - t0) * 500) / every;
  }
}

/** pingPong through sendSync/recvSync: no promise anywhere (a function of its own, for the same reason). */
function pingPongSync(comm: Communicator, msg: Uint8Array, n: number, every: number, times: Float64Array | null): void {
  const first = comm.rank === 0;
  const peer = first ? 1 : 0;
  for (let i = 0; i < n; i += every) {
    const t0 = times !== null ? performance.now() : 0;
    for (let k = 0; k < every; k++) {
      if (first) { comm.sendSync(msg, peer, 1); comm.recvSync(msg, peer, 1); }
      else { comm.recvSync(msg, peer, 1); comm.sendSync(msg, peer, 1); }
    }
    if (times !== null) times[i / every] = ((performance.now() - t0) * 500) / every;
  }
}

/** The clock is read once per BATCH round trips for usec_batch (performance.now() costs 48 ns here, MPI_Wtime about 20). */
const BATCH = 100;

async function main(): Promise<void> {
  const [kind = 'latency', sizesText = '', itersText = '2000', windowText = '64'] = process.argv.slice(2);
  const comm = await init();
  if (comm.size < 2) throw new Error('the benchmark needs 2 ranks');
  const sizes = sizesText.split(',').filter(Boolean).map(Number);
  const base = Number(itersText);
  const window = Number(windowText);
  const rows: Row[] = [];
  const me = comm.rank;
  const maxSize = Math.max(...sizes, 4);
  const buf = new Uint8Array(maxSize).fill(1);
  const ack = new Uint8Array(4);
  const sync = process.env[SYNC_ENV] === '1';
  const pp = async (n: number, every: number, times: Float64Array | null): Promise<void> => {
    if (sync) pingPongSync(comm, buf.subarray(0, curSize), n, every, times);
    else await pingPong(comm, buf.subarray(0, curSize), n, every, times);
  };
  let curSize = 0;
  if (me <= 1) {
    for (const [k, size] of sizes.entries()) {
      const { iters, warmup } = iterations(size, base);
      const msg = buf.subarray(0, size);
      curSize = size;
      tellProgress(me, { phase: 'start', size, index: k + 1, of: sizes.length });
      await comm.barrier();
      if (kind === 'latency') {
        // One round trip binds the lane; on a shared-memory rail a round trip
        // costs about a microsecond, and V8's optimising compiler (a background
        // thread that competes with two spinning ranks for two cores) needs a
        // few hundred thousand of them before the path runs at full speed.
        if (me === 0) { await comm.send(msg, 1, 1); await comm.recv(msg, 1, 1); } else { await comm.recv(msg, 0, 1); await comm.send(msg, 0, 1); }
        const fast = size <= 8192 && (comm.world.ctx.endpointFor(1 - me).lane?.rail.caps.latencyUs ?? 99) < 2;
        const warm = fast ? Math.max(warmup, 200_000) : warmup;
        // Only rank 0 reads the clock (as osu_latency): rank 1's reads would lengthen the round trip.
        const times = new Float64Array(iters);
        const batches = new Float64Array(Math.max(1, Math.floor(iters / BATCH)));
        const small = size <= 8192;
        // The warm-up runs the timed calls themselves, in their order and with their arguments: a
        // warm-up without the clock left its branch cold, so V8 dropped the optimized loop at the
        // first timed call and compiled it again (10-15 ms of TurboFan on a background thread, here
        // among the timed batches: it takes a core from one of the two spinning ranks).
        // As many round trips as before, half of them batched where batches are timed.
        for (let done = 0; done < warm;) {
          const n = Math.min(iters, Math.ceil((warm - done) / (small ? 2 : 1)));
          await pp(n, 1, me === 0 ? times : null);
          done += n;
          if (!small) continue;
          const m = Math.max(1, Math.min(batches.length, Math.ceil(n / BATCH))) * BATCH;
          await pp(m, BATCH, me === 0 ? batches : null);
          done += m;
        }
        await pp(iters, 1, me === 0 ? times : null);
        // Medians of batch averages, with no clock read per round trip (as bench/mpi/pingpong's usec_batch).
        // Straight after the per-round-trip phase: the loops that sum and sort `times` run after it.
        // Between the two they made V8 compile main() on a background thread (a hot loop in it, on
        // both ranks) while the first batch ran: one stalled batch of 0.4-2.3 ms in 7 runs of 15 of
        // `bench latency --threads --sync`, 1.3-1.5x on the average.
        if (small) await pp(batches.length * BATCH, BATCH, me === 0 ? batches : null);
        let total = 0;
        for (let i = 0; i < iters; i++) total += times[i]!;
        times.sort();
        const q = (f: number): number => round(times[Math.min(times.length - 1, Math.floor(times.length * f))]!);
        const row: Row = { size, usec: round(total / iters), usec_median: q(0.5), usec_p90: q(0.9), usec_p99: q(0.99), iters };
        if (small) {
          // Their mean too: the average over all those round trips, the clock read once per batch
          // (osu_latency's average; bench/mpi/pingpong's usec_batch_avg).
          let sum = 0;
          for (let i = 0; i < batches.length; i++) sum += batches[i]!;
          row.usec_batch_avg = Math.round((sum / batches.length) * 1000) / 1000;
          batches.sort();
          row.usec_batch = Math.round(batches[batches.length >> 1]! * 1000) / 1000;
        }
        rows.push(row);
        tellProgress(me, { phase: 'done', size, index: k + 1, of: sizes.length, value: row.usec_median ?? 0, unit: 'us' });
      } else {
        const reqs: Request[] = new Array<Request>(window);
        let t0 = 0n;
        for (let i = 0; i < warmup + iters; i++) {
          if (i === warmup) t0 = process.hrtime.bigint();
          if (sync) {
            // Blocking sends: eager ones complete at once, larger ones once received.
            if (me === 0) { for (let w = 0; w < window; w++) comm.sendSync(msg, 1, 2); comm.recvSync(ack, 1, 3); }
            else { for (let w = 0; w < window; w++) comm.recvSync(msg, 0, 2); comm.sendSync(ack, 0, 3); }
          } else if (me === 0) {
            for (let w = 0; w < window; w++) reqs[w] = comm.isend(msg, 1, 2);
            await waitAll(reqs);
            await comm.recv(ack, 1, 3);
          } else {
            for (let w = 0; w < window; w++) reqs[w] = comm.irecv(msg, 0, 2);
            await waitAll(reqs);
            await comm.send(ack, 0, 3);
          }
        }
        const secs = Number(process.hrtime.bigint() - t0) / 1e9;
        const mbps = round((size * window * iters) / secs / 1e6);
        rows.push({ size, mbps, iters });
        tellProgress(me, { phase: 'done', size, index: k + 1, of: sizes.length, value: mbps, unit: 'MB/s' });
      }
    }
  } else {
    for (let i = 0; i < sizes.length; i++) await comm.barrier();
  }
  if (me === 0) {
    // The rail that actually carried the traffic to rank 1 (internal, for the report).
    const lane = comm.world.ctx.endpointFor(1).lane;
    process.stdout.write(JSON.stringify({ benchmark: kind, rails: `${lane?.rail.component ?? 'unknown'}${sync ? ' sync' : ''}`, ranks: comm.size, results: rows }) + '\n');
  }
  await comm.finalize();
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${(e as Error)?.stack ?? String(e)}\n`);
  process.exitCode = 1;
});
