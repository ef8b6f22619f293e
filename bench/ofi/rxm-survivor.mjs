// libfabric 1.17's ofi_rxm and a peer that dies mid-transfer (README, ofi):
// for each setting, RUNS env:// pairs over tcp;ofi_rxm where rank 1 streams
// 16 MiB messages to rank 0 in DATA frames (RAILCOMM_RDMA_RGET_MIN=0) and
// SIGKILLs itself 300-840 ms in (test/jobs/ofi-stream-killed.mjs); counts how
// the survivor ended (SIGSEGV, or exit 0 with ERR_PEER_FAILED), and reads each
// rank's resident memory at the end of a 2-rank job of 100 KB messages
// (VmRSS). Settings: libfabric's defaults (railcomm's), and README's setting
// that makes every frame an rxm eager message.
//   node bench/ofi/rxm-survivor.mjs [RUNS=20]
import { spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const RUNS = Number(process.argv[2] ?? 20);
const job = fileURLToPath(new URL('../../test/jobs/ofi-stream-killed.mjs', import.meta.url));
const main = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const rssJob = fileURLToPath(new URL('./rxm-rss-job.mjs', import.meta.url));
const SETTINGS = [
  ['libfabric defaults', {}],
  ['FI_OFI_RXM_BUFFER_SIZE=131348 FI_OFI_RXM_MSG_RX_SIZE=1024', { FI_OFI_RXM_BUFFER_SIZE: '131348', FI_OFI_RXM_MSG_RX_SIZE: '1024' }],
  ['FI_OFI_RXM_BUFFER_SIZE=131348 (rxm\'s receive depth, 4096)', { FI_OFI_RXM_BUFFER_SIZE: '131348' }],
];
const clean = Object.fromEntries(Object.keys(process.env).filter((k) => /^(RAILCOMM_|FI_|RANK|WORLD_SIZE|LOCAL_|MASTER_)/.test(k)).map((k) => [k, undefined]));

function freePort() {
  return new Promise((resolve) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); }); });
}

function run(cmd, args, env) {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { env: { ...process.env, ...clean, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.stderr.on('data', (d) => { out += d; });
    const t = setTimeout(() => c.kill('SIGKILL'), 60_000);
    c.on('close', (code, signal) => { clearTimeout(t); resolve({ code, signal, out }); });
  });
}

async function pair(killMs, extra) {
  const port = await freePort();
  const env = (r) => ({ RANK: String(r), WORLD_SIZE: '2', LOCAL_RANK: String(r), LOCAL_WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port),
    RAILCOMM_JOB_KEY: 'cd'.repeat(16), RAILCOMM_RAILS: 'ofi,self', RAILCOMM_OFI_PROVIDERS: 'tcp', RAILCOMM_RDMA_RGET_MIN: '0', KILL_MS: String(killMs), ...extra });
  const [survivor] = await Promise.all([run(process.execPath, [job], env(0)), run(process.execPath, [job], env(1))]);
  return survivor;
}

console.log(`# ofi_rxm survivors and memory, ${new Date().toISOString()}, node ${process.version}, ${RUNS} runs per setting`);
for (const [name, extra] of SETTINGS) {
  const ends = new Map();
  for (let i = 0; i < RUNS; i++) {
    const s = await pair(300 + 60 * (i % 10), extra);
    const end = s.signal !== null ? s.signal : s.code === 0 && /RESULT ERR_PEER_FAILED/.test(s.out) ? 'ERR_PEER_FAILED, exit 0' : `exit ${s.code}`;
    ends.set(end, (ends.get(end) ?? 0) + 1);
  }
  const xs = Object.entries(extra).flatMap(([k, v]) => ['-x', `${k}=${v}`]);
  const m = await run(process.execPath, [main, 'run', '-n', '2', '--rails', 'ofi,self', ...xs, '--timeout', '50', rssJob], { RAILCOMM_OFI_PROVIDERS: 'tcp' });
  const rss = [...m.out.matchAll(/RSS (\d+) MB/g)].map((x) => Number(x[1])).sort((a, b) => a - b);
  console.log(`${name}: survivor ${[...ends].map(([k, v]) => `${k} ${v}`).join(', ')}; resident per rank ${rss.join(', ')} MB`);
}
