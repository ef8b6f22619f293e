// The rows of README's performance table, as the report computes them: each
// names the measure (a benchmark run once per round) and the figure its JSON
// gives, for railcomm and for the baselines beside it.

import type { BenchJson } from './bench-runs.js';

export type Side = 'railcomm' | 'openmpi' | 'raw';

/** A figure of one measure's JSON lines in one round (undefined when missing). */
export interface Pick { id: string; get: (json: BenchJson[]) => number | undefined }

export interface Row {
  group: string;
  label: string;
  railcomm: Pick;
  openmpi?: Pick;
  raw?: Pick;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** results[size][key] of the measure's first line (or of its line named `bench`). */
export const at = (id: string, size: number, key: string, bench?: string): Pick => ({
  id,
  get: (js) => num(js.find((j) => bench === undefined || j.benchmark === bench)?.results.find((r) => r['size'] === size)?.[key]),
});

/** A figure computed from another (rates from latencies, datagrams from bytes). */
const map = (p: Pick, f: (v: number) => number): Pick => ({ id: p.id, get: (js) => { const v = p.get(js); return v === undefined ? undefined : f(v); } });

/** The first row of a line that has no sizes (idle-cpu, heap, raw-udp). */
const only = (id: string, key: string): Pick => ({ id, get: (js) => num(js[0]?.results[0]?.[key]) });

const KIB64 = 65536;
const MIB = 1048576;
const MIB4 = 4194304;
/** Payload of one 1472-byte datagram (the udp rail's 40-byte chunk header), as bench/compare-udp.mjs counts. */
const CHUNK_PAYLOAD_1472 = 1472 - 40;

function shmRows(group: 'tbsm' | 'shm', who: string): Row[] {
  const lat = `rc-${group}-lat`;
  const bw = `rc-${group}-bw`;
  const rows: Row[] = [
    { group, label: `8 B half round trip, ${who}, batch-timed (us)`, railcomm: at(lat, 8, 'usec_batch'), openmpi: at('ompi-vader-lat', 8, 'usec_batch') },
    { group, label: `8 B half round trip, ${who}, timed per round trip (us, median)`, railcomm: at(lat, 8, 'usec_median'), openmpi: at('ompi-vader-lat', 8, 'usec_median') },
    { group, label: `8 B half round trip, ${who} (us, average)`, railcomm: at(lat, 8, 'usec'), openmpi: at('ompi-vader-lat', 8, 'usec') },
  ];
  if (group === 'shm') {
    rows.push(
      { group, label: `64 KiB half round trip, ${who} (us, median)`, railcomm: at(lat, KIB64, 'usec_median'), openmpi: at('ompi-vader-lat', KIB64, 'usec_median') },
      { group, label: `1 MiB half round trip, ${who} (us, median)`, railcomm: at(lat, MIB, 'usec_median'), openmpi: at('ompi-vader-lat', MIB, 'usec_median') },
    );
  }
  for (const [size, name] of [[KIB64, '64 KiB'], [MIB, '1 MiB'], [MIB4, '4 MiB']] as const) {
    rows.push({ group, label: `${name} bandwidth, ${who} (MB/s)`, railcomm: at(bw, size, 'mbps'), openmpi: at('ompi-vader-bw', size, 'mbps') });
  }
  return rows;
}

export const ROWS: readonly Row[] = [
  { group: 'tcp', label: '8 B half round trip, processes over tcp (us, median)', railcomm: at('rc-tcp-lat', 8, 'usec_median'), openmpi: at('ompi-tcp-lat', 8, 'usec_median'), raw: at('raw-tcp-lat', 8, 'usec_median') },
  { group: 'tcp', label: '8 B half round trip, processes over tcp (us, average)', railcomm: at('rc-tcp-lat', 8, 'usec'), openmpi: at('ompi-tcp-lat', 8, 'usec'), raw: at('raw-tcp-lat', 8, 'usec') },
  { group: 'tcp', label: '1 MiB bandwidth, tcp (MB/s)', railcomm: at('rc-tcp-bw', MIB, 'mbps'), openmpi: at('ompi-tcp-bw', MIB, 'mbps'), raw: at('raw-tcp-bw', MIB, 'mbps') },
  { group: 'tcp', label: '4 MiB bandwidth, tcp (MB/s)', railcomm: at('rc-tcp-bw', MIB4, 'mbps'), openmpi: at('ompi-tcp-bw', MIB4, 'mbps'), raw: at('raw-tcp-bw', MIB4, 'mbps') },

  { group: 'udp', label: '8 B half round trip, processes over udp (us, median; raw: Node dgram)', railcomm: at('rc-udp-lat', 8, 'usec_median'), raw: only('raw-udp-lat', 'usec_median') },
  { group: 'udp', label: '8 B half round trip, processes over udp (us, average)', railcomm: at('rc-udp-lat', 8, 'usec'), raw: only('raw-udp-lat', 'usec_avg') },
  { group: 'udp', label: '1 MiB bandwidth, udp, no loss (MB/s; raw: one dgram receiver, 60000 B datagrams)', railcomm: at('rc-udp-bw', MIB, 'mbps'), raw: only('raw-udp-intake', 'mbps') },
  { group: 'udp', label: '1 MiB bandwidth, udp, 1% dropped (MB/s)', railcomm: at('rc-udp-bw-1', MIB, 'mbps') },
  { group: 'udp', label: '1 MiB bandwidth, udp, 5% dropped (MB/s)', railcomm: at('rc-udp-bw-5', MIB, 'mbps') },
  { group: 'udp', label: 'udp at a 1472-byte MTU (datagrams/s; raw: one dgram receiver)', railcomm: map(at('rc-udp-mtu', MIB, 'mbps'), (v) => (v * 1e6) / CHUNK_PAYLOAD_1472), raw: only('raw-udp-intake-1472', 'datagramsPerSec') },

  ...shmRows('tbsm', 'worker threads (tbsm)'),
  ...shmRows('shm', 'processes over shm'),

  { group: 'idle', label: 'CPU of a rank waiting in recv, shm (% of a core)', railcomm: only('rc-idle', 'cpuPercent'), openmpi: only('ompi-idle', 'cpuPercent') },

  { group: 'allreduce', label: '8 B allreduce, 2 processes (us, osu average)', railcomm: at('rc-allreduce', 8, 'usec'), openmpi: at('ompi-allreduce', 8, 'usec') },
  { group: 'allreduce', label: '64 KiB allreduce, 2 processes (us, osu average)', railcomm: at('rc-allreduce', KIB64, 'usec'), openmpi: at('ompi-allreduce', KIB64, 'usec') },
  { group: 'allreduce', label: '1 MiB allreduce, 2 processes (us, osu average)', railcomm: at('rc-allreduce', MIB, 'usec'), openmpi: at('ompi-allreduce', MIB, 'usec') },

  // Open MPI's small one-sided figures are its usec_batch (median of batch averages), timed as railcomm's.
  { group: 'rma', label: '8 B put + flush, testFlush (us, median of batches)', railcomm: at('rc-put', 8, 'usec_median'), openmpi: at('ompi-osc', 8, 'usec_batch', 'put') },
  { group: 'rma', label: '8 B put + awaited flush (us)', railcomm: at('rc-put', 8, 'usec_median_flush'), openmpi: at('ompi-osc', 8, 'usec_batch', 'put') },
  { group: 'rma', label: '8 B awaited put + awaited flush (us)', railcomm: at('rc-put', 8, 'usec_median_awaited'), openmpi: at('ompi-osc', 8, 'usec_batch', 'put') },
  { group: 'rma', label: '8 B get + flush, testFlush (us)', railcomm: at('rc-get', 8, 'usec_median'), openmpi: at('ompi-osc', 8, 'usec_batch', 'get') },
  { group: 'rma', label: '8 B fetch-add (us)', railcomm: at('rc-atomic', 8, 'usec_median'), openmpi: at('ompi-osc', 8, 'usec_batch', 'fadd') },
  { group: 'rma', label: 'fetch-add rate (M ops/s, from the median)', railcomm: map(at('rc-atomic', 8, 'usec_median'), (v) => 1 / v), openmpi: map(at('ompi-osc', 8, 'usec_batch', 'fadd'), (v) => 1 / v) },
  { group: 'rma', label: '1 MiB put bandwidth (MB/s)', railcomm: at('rc-put', MIB, 'mbps'), openmpi: at('ompi-osc', MIB, 'mbps', 'putbw') },

  { group: 'heap', label: 'heap growth over the heap run\'s messages (MB, after full GCs)', railcomm: only('rc-heap', 'heapGrowthMB') },
];
