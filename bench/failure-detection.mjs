// How long survivors take to learn that a rank died, per rail and mode
// (issue "No silent failures"): 4 ranks exchange on a ring (p2p) or
// allreduce; rank 2 dies (SIGKILL, or an uncaught error in a thread rank) and
// prints when; every survivor prints when its pending operation failed.
//   node bench/failure-detection.mjs [--rounds N] [--json]
// Modes: railcomm run (processes over shm, tcp, udp; thread ranks), and
// env:// (no launcher of ours: rank 0 hosts the wire-up service) over shm and tcp.
import { spawn } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './lib/compare.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist/cli/main.js');
const args = process.argv.slice(2);
const rounds = Number(args[args.indexOf('--rounds') + 1] ?? 5) || 5;
const dir = mkdtempSync(join(tmpdir(), 'rc-fd-'));
const job = join(dir, 'job.mjs');
writeFileSync(job, `
import { init } from ${JSON.stringify(join(root, 'dist/index.js'))};
process.on('SIGTERM', () => {}); // measure before the launcher stops the survivors
const [mode] = process.argv.slice(2);
const comm = await init();
const right = (comm.rank + 1) % comm.size, left = (comm.rank + comm.size - 1) % comm.size;
const b = new Float64Array(4), s = new Float64Array(4);
try {
  for (let i = 0; ; i++) {
    if (i === 200 && comm.rank === 2) {
      console.log('DIED ' + (performance.timeOrigin + performance.now()));
      if (process.env.HOW === 'throw') setImmediate(() => { throw new Error('dies'); });
      else process.kill(process.pid, 'SIGKILL');
      await new Promise(() => {});
    }
    if (mode === 'allreduce') await comm.allreduce(s, b, 'sum');
    else { const r = comm.irecv(b, left, 1); await comm.send(s, right, 1); await r.wait(); }
  }
} catch (e) {
  console.log('FAILED ' + (performance.timeOrigin + performance.now()) + ' ' + e.code);
}
process.exit(0);
`);

function freePort() {
  return new Promise((res) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
}

function collect(children) {
  return Promise.all(children.map((c) => new Promise((resolve) => {
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.stderr.on('data', () => {});
    const t = setTimeout(() => c.kill('SIGKILL'), 60_000);
    c.on('close', () => { clearTimeout(t); resolve(out); });
  })));
}

async function once(mode, how, rails, launcher) {
  let outs;
  const env = { ...process.env, RAILCOMM_RAILS: rails, HOW: how };
  if (launcher === 'env') {
    const port = await freePort();
    outs = await collect([0, 1, 2, 3].map((r) => spawn(process.execPath, [job, mode], {
      env: { ...env, RANK: String(r), WORLD_SIZE: '4', LOCAL_RANK: String(r), LOCAL_WORLD_SIZE: '4', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), RAILCOMM_JOB_KEY: 'ab'.repeat(16) },
    })));
  } else {
    outs = await collect([spawn(process.execPath, [cli, 'run', '-n', '4', ...(launcher === 'threads' ? ['--threads'] : []), '--timeout', '50', job, mode], { env })]);
  }
  const text = outs.join('\n');
  const died = Number(/DIED (\d+(\.\d+)?)/.exec(text)?.[1]);
  const failed = [...text.matchAll(/FAILED (\d+(\.\d+)?) (\S+)/g)].map((m) => [Number(m[1]) - died, m[3]]);
  return { worst: Math.max(...failed.map((f) => f[0])), survivors: failed.length, codes: [...new Set(failed.map((f) => f[1]))].join(',') };
}

const cases = [
  ['processes, shm', 'kill', 'shm,self', 'run'], ['processes, tcp', 'kill', 'tcp,self', 'run'], ['processes, udp', 'kill', 'udp,self', 'run'],
  ['threads (uncaught error)', 'throw', '', 'threads'],
  ['env://, shm', 'kill', 'shm,self', 'env'], ['env://, tcp', 'kill', 'tcp,self', 'env'],
];
const rows = [];
for (const [name, how, rails, launcher] of cases) {
  for (const mode of ['p2p', 'allreduce']) {
    const ms = [];
    let note = '';
    for (let i = 0; i < rounds; i++) {
      const r = await once(mode, how, rails, launcher);
      if (r.survivors === 3 && Number.isFinite(r.worst)) ms.push(r.worst); else note = `${r.survivors}/3 survivors reported (${r.codes})`;
    }
    rows.push({ mode: name, op: mode, medianMs: ms.length ? Number(median(ms).toFixed(1)) : null, maxMs: ms.length ? Number(Math.max(...ms).toFixed(1)) : null, runs: ms.length, note });
    console.error(`failure-detection: ${name} ${mode}: ${ms.map((x) => x.toFixed(0)).join(' ')} ms ${note}`);
  }
}
rmSync(dir, { recursive: true, force: true });
if (args.includes('--json')) console.log(JSON.stringify(rows));
else {
  console.log('| mode | operation | median (ms) | worst (ms) | runs |\n|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.mode} | ${r.op} | ${r.medianMs ?? '-'} | ${r.maxMs ?? '-'} | ${r.runs}${r.note ? ' ' + r.note : ''} |`);
}
