// Helpers for integration tests that start real multi-rank jobs through the
// launcher and read what the ranks printed.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
export const jobScript = (name) => fileURLToPath(new URL(`../jobs/${name}`, import.meta.url));

/**
 * Run any command with `env` over this process's environment; resolves with
 * { code, stdout, stderr } once it exits, rejects (after killing it) when it
 * runs past limitMs.
 */
export function runCommand(cmd, args, env, limitMs) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '', stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${cmd} still running after ${limitMs} ms\n${stdout}\n${stderr}`)); }, limitMs);
    child.on('close', (code) => { clearTimeout(t); resolve({ code, stdout, stderr }); });
  });
}

/** Run `railcomm <args>`; resolves with exit code, output and duration; kills it after limitMs. */
export function railcomm(args, { limitMs = 120_000, env = {}, wrap = [] } = {}) {
  // `wrap` runs the launcher under another command (ip netns exec NS).
  const argv = [...wrap, process.execPath, CLI, ...args];
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { stderr += d; });
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`railcomm ${args.join(' ')} still running after ${limitMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, limitMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** Lines `[rank] PREFIX rest` -> [{ rank, rest }]. */
export function linesWith(stdout, prefix) {
  const out = [];
  for (const line of stdout.split('\n')) {
    const m = /^\[(\d+)\] (.*)$/.exec(line);
    if (m && m[2].startsWith(prefix + ' ')) out.push({ rank: Number(m[1]), rest: m[2].slice(prefix.length + 1) });
  }
  return out;
}

/** Case results of a harness job: Map name -> Map rank -> 'ok' | failure text. */
export function caseResults(stdout) {
  const res = new Map();
  for (const { rank, rest } of linesWith(stdout, 'CASE')) {
    const ok = rest.endsWith(' ok');
    const m = ok ? [rest, rest.slice(0, -3)] : /^(.*?) FAIL (.*)$/.exec(rest);
    if (!m) continue;
    const name = ok ? m[1] : m[1];
    if (!res.has(name)) res.set(name, new Map());
    res.get(name).set(rank, ok ? 'ok' : m[2]);
  }
  return res;
}
