// The GPU benchmark of issue 16, all in one call on one machine: the raw driver
// baseline (bench/gpu/memcpy.c, built here with gcc) and railcomm's jobs
// (bench/gpu/p2p.mjs) under each configuration, side by side. Writes
// <out>/bench.json (every result) and <out>/bench.md (the table for bench/RESULTS.md).
//   node bench/gpu/run.mjs <out-dir>      (from the repository root, after npm run build)

import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const out = path.resolve(process.argv[2] ?? 'gpu-bench');
mkdirSync(out, { recursive: true });
const results = [];
const log = [];
const say = (s) => { log.push(s); console.log(s); };

function lines(text, prefix) {
  const r = [];
  for (const l of text.split('\n')) {
    const m = /^(?:\[\d+\] )?(\{.*\})$/.exec(l.trim());
    if (prefix === null && m) r.push(JSON.parse(m[1]));
    const k = l.indexOf(`${prefix} `);
    if (prefix !== null && k >= 0) r.push(JSON.parse(l.slice(k + prefix.length + 1)));
  }
  return r;
}

// 1. The raw baseline.
const exe = path.join(out, 'memcpy');
const cc = spawnSync('gcc', ['-O2', '-std=gnu11', `-I${process.env.CUDA_HOME ?? '/usr/local/cuda'}/include`, '-o', exe, 'bench/gpu/memcpy.c', '-ldl'], { encoding: 'utf8' });
if (cc.status !== 0) say(`memcpy.c did not build: ${cc.stderr}`);
else {
  for (const args of [[], ['ipc']]) {
    const r = spawnSync(exe, args, { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) say(`memcpy ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    for (const o of lines(r.stdout, null)) results.push({ label: 'raw driver API', ...o });
  }
}
writeOut();

// 2. railcomm, one job per configuration (every rank of a job sees the same environment).
const runs = [
  { label: 'default', env: { BENCH_PARTS: 'pingpong,host,open,allreduce', BENCH_SIZES: `8,${1 << 20},${1 << 30}` } },
  { label: 'RAILCOMM_CUDA_EAGER=0 (8 B by IPC)', env: { RAILCOMM_CUDA_EAGER: '0', BENCH_PARTS: 'pingpong', BENCH_SIZES: '8' } },
  { label: 'RAILCOMM_CUDA_IPC=0 (staged)', env: { RAILCOMM_CUDA_IPC: '0', BENCH_PARTS: 'pingpong', BENCH_SIZES: `8,${1 << 20},${1 << 30}` } },
  { label: 'RAILCOMM_CUDA_REDUCE_MIN=1t (allreduce staged)', env: { RAILCOMM_CUDA_REDUCE_MIN: '1t', BENCH_PARTS: 'allreduce' } },
];
for (const run of runs) {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['dist/cli/main.js', 'run', '-n', '2', '--timeout', '150', 'bench/gpu/p2p.mjs'], {
    encoding: 'utf8', timeout: 170_000, env: { ...process.env, ...run.env, BENCH_LABEL: run.label },
  });
  writeFileSync(path.join(out, `bench-${results.length}.log`), `${run.label}\n${r.stdout}\n${r.stderr}`);
  if (r.status !== 0) say(`railcomm job '${run.label}' exited ${r.status}: ${r.stderr.slice(-800)}`);
  results.push(...lines(r.stdout, 'RESULT'));
  const stats = lines(r.stdout, 'STATS');
  if (stats.length > 0) results.push({ label: run.label, what: 'rank 0 counters (stats().cuda)', stats: stats[0] });
  say(`${run.label}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  writeOut();
}
console.log(writeOut());

// 3. The table: each railcomm figure beside the raw one it is held to. Written after every
// step, so that a run cut short by its time limit still leaves what it measured.
function writeOut() {
  const find = (label, what, bytes) => results.find((r) => r.label === label && r.what.startsWith(what) && (bytes === undefined || r.bytes === bytes));
  const raw = (bytes) => find('raw driver API', 'raw cuMemcpyDtoD', bytes);
  const ipcRaw = (bytes) => find('raw driver API', 'raw copy from an IPC-opened', bytes);
  const dev = (label, bytes) => find(label, 'device ping-pong', bytes);
  const fmt = (x) => (x === undefined ? 'n/a' : `${x.us} us`);
  const rows = [['measure', 'railcomm', 'raw driver (same machine, same call)', 'ratio / target']];
  const g = dev('default', 1 << 30), r1g = raw(1 << 30);
  rows.push(['1 GiB device message, 2 processes, one GPU (IPC)', fmt(g), `${fmt(r1g)} DtoD; ${fmt(ipcRaw(1 << 30))} from an IPC-opened allocation`, g && r1g ? `${(r1g.us / g.us).toFixed(2)}x of raw (target >= 0.9x)` : 'n/a']);
  const m = dev('default', 1 << 20), r1m = raw(1 << 20);
  rows.push(['1 MiB device message (IPC)', fmt(m), fmt(r1m), m && r1m ? `${(m.us / r1m.us).toFixed(1)}x the raw time` : 'n/a']);
  for (const [label, name] of [['default', 'staged (pinned host, eager)'], ['RAILCOMM_CUDA_EAGER=0 (8 B by IPC)', 'IPC']]) {
    const e = dev(label, 8);
    rows.push([`8 B device message half round trip, ${name}`, fmt(e), `${fmt(raw(8))} DtoD; DtoH ${fmt(find('raw driver API', 'raw cuMemcpyDtoH', 8))}, HtoD ${fmt(find('raw driver API', 'raw cuMemcpyHtoD', 8))}`, e ? `target <= 15 us: ${e.us <= 15 ? 'met' : 'missed'}` : 'n/a']);
  }
  const h8 = find('default', 'host ping-pong', 8);
  rows.push(['8 B host message half round trip (same job, for the device overhead)', fmt(h8), '', '']);
  for (const bytes of [8, 1 << 20, 1 << 30]) {
    const s = dev('RAILCOMM_CUDA_IPC=0 (staged)', bytes);
    rows.push([`${bytes === 8 ? '8 B' : bytes === 1 << 20 ? '1 MiB' : '1 GiB'} device message with RAILCOMM_CUDA_IPC=0 (pinned host chunks)`, fmt(s), '', '']);
  }
  const same = find('default', '1 MiB message from the same buffer'), fresh = find('default', '1 MiB message from a new buffer');
  const open = find('raw driver API', 'raw cuIpcOpenMemHandle');
  rows.push(['1 MiB message + reply, cached handle', fmt(same), '', same ? `receiver cache ${JSON.stringify(same.receiverCache)}` : '']);
  rows.push(['1 MiB message + reply, new buffer each time (handle opened)', fmt(fresh), open ? `cuIpcOpenMemHandle ${open.firstUs} us first, ${open.againUs} us again` : '', fresh && same ? `+${(fresh.us - same.us).toFixed(1)} us a message; cache ${JSON.stringify(fresh.receiverCache)}` : '']);
  const ag = find('default', 'allreduce of 64 MiB'), as = find('RAILCOMM_CUDA_REDUCE_MIN=1t (allreduce staged)', 'allreduce of 64 MiB');
  rows.push(['allreduce 64 MiB f32, 2 ranks: GPU kernel', ag ? `${ag.us} us${ag.correct ? '' : ' (WRONG RESULT)'}` : 'n/a', '', ag && as ? `${(as.us / ag.us).toFixed(1)}x faster than staged` : '']);
  rows.push(['allreduce 64 MiB f32, 2 ranks: host staging', as ? `${as.us} us${as.correct ? '' : ' (WRONG RESULT)'}` : 'n/a', '', '']);

  const gpuName = spawnSync('nvidia-smi', ['--query-gpu=name,driver_version', '--format=csv,noheader'], { encoding: 'utf8' }).stdout?.trim() || 'GPU unknown (no nvidia-smi)';
  const md = [`GPU figures (bench/gpu/run.mjs), ${new Date().toISOString().slice(0, 10)}, ${gpuName}, ${os.cpus().length} cores, node ${process.version}`, '',
    ...rows.map((r, i) => `| ${r.join(' | ')} |${i === 0 ? `\n|${' --- |'.repeat(r.length)}` : ''}`), '', ...log.map((l) => `- ${l}`)].join('\n');
  writeFileSync(path.join(out, 'bench.json'), JSON.stringify(results, null, 1));
  writeFileSync(path.join(out, 'bench.md'), md + '\n');
  return md;
}
