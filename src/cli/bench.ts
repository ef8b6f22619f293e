// `railcomm bench latency|bw`: starts a job of N ranks (2 by default) running
// the benchmark rank program, and prints its results as a table or JSON.

import { fileURLToPath } from 'node:url';
import { startJob } from './run.js';

const P2P = ['latency', 'bw'] as const;
const COLL = ['allreduce', 'bcast', 'allgather', 'alltoall'] as const;
const RMA = ['put', 'get', 'atomic'] as const;
const KINDS = [...P2P, ...COLL, ...RMA, 'wireup'] as const;
const COLL_SIZES = '8,64,1024,8192,65536,262144,1048576';
const DEFAULT_SIZES: Record<string, string> = {
  latency: '0,1,8,64,512,4096,16384,65536,262144,1048576,4194304',
  bw: '8,1024,16384,65536,262144,1048576,4194304',
  allreduce: COLL_SIZES, bcast: COLL_SIZES, allgather: COLL_SIZES, alltoall: COLL_SIZES,
  put: '8,1024,65536,1048576,4194304', get: '8,1024,65536,1048576,4194304', atomic: '8',
};

const USAGE = `railcomm bench latency|bw|allreduce|bcast|allgather|alltoall|put|get|atomic [-n N] [--threads] [--rails LIST] [--sizes LIST] [--iters N] [--window N] [--json]
  --threads: the ranks are worker threads of one process (tbsm rail)
  latency:   half round trip between ranks 0 and 1 (osu_latency style), microseconds
  bw:        windows of nonblocking sends then an ack (osu_bw style), MB/s = 10^6 bytes/s
  allreduce, bcast, allgather, alltoall: average microseconds per call over the ranks
             (osu_allreduce style); sizes in bytes (allreduce: doubles, size/8 of them)
  put, get:  rank 0 on rank 1's window under a shared lock: latency of one put (get) completed at the
             target: testFlush, and an awaited flush only when needed; then the same awaiting the
             flush (put), and awaiting the operation's own promise too (put: and the flush),
             and bandwidth of windows of 64 operations then a flush (osu_put_latency / osu_get_bw style)
  atomic:    fetch-and-op (sum, i64) latency and rate, and compare-and-swap latency
  wireup:    ms from a rank's start until it can exchange messages with all (init + barrier)`;

export async function benchCommand(argv: string[]): Promise<number> {
  let kind = '';
  let np = 2;
  let rails: string | undefined;
  let sizes = '';
  let iters = 2000;
  let window = 64;
  let json = false;
  let threads = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const val = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value\n${USAGE}`);
      return v;
    };
    if (a === '-n' || a === '--np') np = Number(val());
    else if (a === '--rails') rails = val();
    else if (a === '--sizes') sizes = val();
    else if (a === '--iters') iters = Number(val());
    else if (a === '--window') window = Number(val());
    else if (a === '--json') json = true;
    else if (a === '--threads') threads = true;
    else if (a === '-h' || a === '--help') { process.stdout.write(USAGE + '\n'); return 0; }
    else if (!kind) kind = a;
    else { process.stderr.write(`railcomm bench: unexpected argument '${a}'\n${USAGE}\n`); return 2; }
  }
  if (!(KINDS as readonly string[]).includes(kind)) {
    process.stderr.write(`railcomm bench: choose one of ${KINDS.join(', ')}\n${USAGE}\n`);
    return 2;
  }
  const isColl = (COLL as readonly string[]).includes(kind) || kind === 'wireup';
  if (!Number.isInteger(np) || np < (isColl ? 1 : 2) || !Number.isInteger(iters) || iters < 1 || !Number.isInteger(window) || window < 1) {
    process.stderr.write(`railcomm bench: -n must be >= ${isColl ? 1 : 2}, --iters and --window >= 1\n`);
    return 2;
  }
  const sizeList = sizes || DEFAULT_SIZES[kind] || '8';
  if (!sizeList.split(',').every((s) => /^\d+$/.test(s))) {
    process.stderr.write(`railcomm bench: --sizes takes byte counts separated by commas\n`);
    return 2;
  }
  const isRma = (RMA as readonly string[]).includes(kind);
  const script = fileURLToPath(new URL(kind === 'wireup' ? '../bench/wireup.js' : isColl ? '../bench/coll.js' : isRma ? '../bench/rma.js' : '../bench/p2p.js', import.meta.url));
  const job = await startJob({
    np, command: isColl ? [script, kind, sizeList, String(iters === 2000 ? 1000 : iters)] : isRma ? [script, kind, sizeList, String(iters)] : [script, kind, sizeList, String(iters), String(window)], capture: true,
    ...(rails !== undefined ? { rails } : {}), ...(threads ? { threadsPerProcess: np } : {}), timeoutSec: 600,
  });
  const res = await job.wait();
  const out = res.outputs?.[0]?.stdout.find((l) => l.startsWith('{'));
  if (res.code !== 0 || out === undefined) {
    for (const [r, o] of (res.outputs ?? []).entries()) for (const l of o.stderr) process.stderr.write(`[${r}] ${l}\n`);
    process.stderr.write(`railcomm bench: the benchmark job failed (${res.reason ?? 'exit ' + res.code})\n`);
    return res.code || 1;
  }
  if (json) { process.stdout.write(out + '\n'); return 0; }
  const data = JSON.parse(out) as { benchmark: string; rails: string; results: Array<Record<string, number>> };
  process.stdout.write(`# railcomm ${data.benchmark}, rails ${data.rails}, ${np} ranks\n`);
  if (kind === 'wireup') {
    const w = data as unknown as { ranks: number; rails: string; maxMs: number; medianMs: number };
    process.stdout.write(`slowest rank ready ${w.maxMs} ms after its start (median ${w.medianMs} ms), ${w.ranks} ranks, rails ${w.rails}\n`);
  } else if (isColl) {
    process.stdout.write(`${'size'.padStart(10)} ${'avg us'.padStart(10)}\n`);
    for (const r of data.results) process.stdout.write(`${String(r['size']).padStart(10)} ${String(r['usec']).padStart(10)}\n`);
  } else if (isRma) {
    const cols = kind === 'atomic' ? ['op', 'usec', 'usec_median', 'ops_per_sec'] : kind === 'put' ? ['size', 'usec', 'usec_median', 'usec_median_flush', 'usec_median_awaited', 'mbps'] : ['size', 'usec', 'usec_median', 'usec_median_awaited', 'mbps'];
    const heads = kind === 'atomic' ? ['op', 'avg us', 'median us', 'ops/s'] : kind === 'put' ? ['size', 'avg us', 'median us', 'await flush us', 'await both us', 'MB/s'] : ['size', 'avg us', 'median us', 'await get us', 'MB/s'];
    process.stdout.write(heads.map((c) => c.padStart(16)).join(' ') + '\n');
    for (const r of data.results) process.stdout.write(cols.map((c) => String(r[c] ?? '-').padStart(16)).join(' ') + '\n');
  } else if (kind === 'latency') {
    const cols = ['size', 'usec', 'usec_median', 'usec_p90', 'usec_p99'];
    process.stdout.write(['size', 'avg us', 'median us', 'p90 us', 'p99 us'].map((c) => c.padStart(10)).join(' ') + '\n');
    for (const r of data.results) process.stdout.write(cols.map((c) => String(r[c]).padStart(10)).join(' ') + '\n');
  } else {
    process.stdout.write(`${'size'.padStart(10)} ${'MB/s'.padStart(10)}\n`);
    for (const r of data.results) process.stdout.write(`${String(r['size']).padStart(10)} ${String(r['mbps']).padStart(10)}\n`);
  }
  return 0;
}
