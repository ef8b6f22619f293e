// Shared pieces of the launcher tests: a temp dir for throwaway rank scripts,
// running `railcomm run` as its own process with a time limit, telling live
// processes from dead ones, and killing every pid a test saw when it ends.

import { after } from 'node:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const runCli = fileURLToPath(new URL('./run-cli.mjs', import.meta.url));
export const kvClientUrl = new URL('../../dist/boot/kv-client.js', import.meta.url).href;

/**
 * A rank script that talks to the launcher's key-value service directly (no
 * railcomm init): argv[2] is 'abort' (rank 1 aborts with code 5), 'nofinalize'
 * (rank 0 leaves without finalize) or 'clean' (all fence and finalize).
 */
export const kvRankScript = `
const { KvClient } = await import(${JSON.stringify(kvClientUrl)});
const rank = Number(process.env.RAILCOMM_RANK);
const [host, port] = process.env.RAILCOMM_KV.split(':');
const kv = await KvClient.connect({ host, port: Number(port) }, process.env.RAILCOMM_JOB_KEY, rank);
const mode = process.argv[2];
if (mode === 'abort' && rank === 1) await kv.abort('out of cheese', 5);
if (mode === 'nofinalize' && rank === 0) { kv.close(); process.exit(0); }
if (mode === 'clean') { await kv.fence(); await kv.finalize(); kv.close(); process.exit(0); }
setInterval(() => {}, 1000);
`;

export function launchKit(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  /** Every pid a test learned about; killed at the end whatever happened. */
  const seenPids = new Set();
  after(() => {
    for (const pid of seenPids) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone, as it should be */ }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  function script(name, body) {
    const path = join(dir, name);
    writeFileSync(path, body);
    return path;
  }

  /** Runs the launcher (under `wrap`, e.g. taskset -c 0); kills it (and fails) if it runs past limitMs. */
  function launch(args, { limitMs = 20_000, onSpawn, wrap = [] } = {}) {
    const argv = [...wrap, process.execPath, runCli, ...args];
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const t0 = Date.now();
    onSpawn?.(child);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`launcher still running after ${limitMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
      }, limitMs);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 });
      });
    });
  }

  return { dir, seenPids, script, launch };
}

/** A zombie still answers kill(pid, 0) until reaped; for us it is dead. */
export function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

export async function waitFor(cond, ms, what) {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
