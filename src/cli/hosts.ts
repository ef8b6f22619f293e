// Where a job's ranks run: host lists and hostfiles, ranks placed in the
// hosts' slots, and the command line that starts a rank on another host
// (its secrets on standard input, never on the command line).

import os from 'node:os';
import { resolve as resolvePath } from 'node:path';
import { invalidArg } from '../core/errors.js';
import { UsageError } from './usage-error.js';
import type { JobOptions } from './job-options.js';

export interface HostSlots {
  host: string;
  slots: number;
}

export interface Placement { host: string; local: boolean; localRank: number; localSize: number }

/** Agents that hand the remote side one command line for a shell to parse. */
const SHELL_AGENTS = new Set(['ssh', 'rsh', 'oarsh', 'plink']);

/** A word for a POSIX shell, whatever it contains. */
export function shellQuote(w: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/**
 * How to start a rank on `host`: PREFIX host env NAME=VALUE... program args.
 * The remote side gets the railcomm variables (and -x ones) explicitly, as ssh
 * passes no environment. ssh-like agents join their arguments into one line
 * for the remote shell, so that line is built with every word quoted (and a
 * cd to the working directory); exec-style agents ('ip netns exec') get argv.
 * scriptAt: where args hold a script to resolve against the working
 * directory (after node's flags), or -1.
 */
export function remoteCommand(opts: Pick<JobOptions, 'rsh' | 'cwd' | 'env'>, host: string, env: NodeJS.ProcessEnv, file: string, args: string[], scriptAt: number): [string, string[]] {
  const rsh = opts.rsh ?? ['ssh'];
  const cwd = opts.cwd ?? process.cwd();
  const passed = Object.entries(env).filter(([k, v]) => v !== undefined && (k.startsWith('RAILCOMM_') || k in (opts.env ?? {})));
  const vars = passed.filter(([k]) => !SECRET_VARS.includes(k)).map(([k, v]) => `${k}=${v}`);
  // Secrets never go on a command line (any local user sees it with ps): the
  // remote shell reads them from its standard input (secretInput) first.
  const secrets = passed.filter(([k]) => SECRET_VARS.includes(k)).map(([k]) => `IFS= read -r ${k} && export ${k} && `).join('');
  // (A script's path is resolved here, where the rank starts: it comes after node's flags.)
  const prog = [file, ...args.map((a, i) => (i === scriptAt ? resolvePath(cwd, a) : a))];
  const agent = rsh[0]!;
  if (SHELL_AGENTS.has(agent.slice(agent.lastIndexOf('/') + 1))) {
    const line = `cd ${shellQuote(cwd)} && ${secrets}exec env ${[...vars, ...prog].map(shellQuote).join(' ')}`;
    return [agent, [...rsh.slice(1), host, line]];
  }
  const run = ['env', ...vars, ...prog];
  return [agent, [...rsh.slice(1), host, ...(secrets === '' ? run : ['sh', '-c', `${secrets}exec "$@"`, 'sh', ...run])]];
}

/** Variables that must not appear on a command line: they reach remote ranks on standard input. */
const SECRET_VARS: readonly string[] = ['RAILCOMM_JOB_KEY'];

/** What a remote rank's command (remoteCommand) reads on its standard input: the secrets, one line each. */
export function secretInput(env: NodeJS.ProcessEnv): string {
  return SECRET_VARS.filter((k) => env[k] !== undefined).map((k) => `${env[k]!}\n`).join('');
}

const LOCAL_NAMES = new Set(['localhost', '127.0.0.1', '::1']);

/** Ranks fill the hosts' slots in order; more ranks than slots is an error. */
export function placeRanks(np: number, hosts: HostSlots[] | undefined): Placement[] {
  if (hosts === undefined || hosts.length === 0) {
    return Array.from({ length: np }, (_, r) => ({ host: 'localhost', local: true, localRank: r, localSize: np }));
  }
  const total = hosts.reduce((a, h) => a + h.slots, 0);
  if (np > total) throw invalidArg(`${np} ranks do not fit the ${total} slots of ${hosts.map((h) => `${h.host}:${h.slots}`).join(',')}`);
  const out: Placement[] = [];
  for (const h of hosts) {
    const here = Math.min(h.slots, np - out.length);
    for (let i = 0; i < here; i++) out.push({ host: h.host, local: LOCAL_NAMES.has(h.host), localRank: 0, localSize: 0 });
  }
  // Ranks on one host count together however many entries name it (localhost:2,localhost:2,
  // or localhost and 127.0.0.1): the shm rail sizes inbox lifetimes by the local rank count.
  const onHost = (p: Placement): string => (p.local ? 'localhost' : p.host);
  const counts = new Map<string, number>();
  for (const p of out) {
    const k = onHost(p), n = counts.get(k) ?? 0;
    p.localRank = n;
    counts.set(k, n + 1);
  }
  for (const p of out) p.localSize = counts.get(onHost(p))!;
  return out;
}

/** This host's first non-internal IPv4 address, for remote ranks to reach the launcher. */
export function routableAddress(): string {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

/** "a:2,b" (slots default 1) */
export function parseHosts(text: string): HostSlots[] {
  return text.split(',').map((t) => t.trim()).filter(Boolean).map((t) => {
    const m = /^([^:\s]+)(?::(\d+))?$/.exec(t);
    if (!m || (m[2] !== undefined && Number(m[2]) < 1)) throw new UsageError(`--hosts: '${t}' is not host or host:slots`);
    return { host: m[1]!, slots: m[2] !== undefined ? Number(m[2]) : 1 };
  });
}

/** Open MPI's hostfile format: "host slots=N" per line, # comments. */
export function parseHostfile(text: string): HostSlots[] {
  const out: HostSlots[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const [host, ...rest] = line.split(/\s+/);
    let slots = 1;
    for (const kv of rest) {
      const m = /^(?:slots|max_slots)=(\d+)$/.exec(kv);
      if (m && kv.startsWith('slots')) slots = Number(m[1]);
      else if (!m) throw new UsageError(`hostfile: cannot read '${kv}' in '${line}' (expected slots=N)`);
    }
    if (slots < 1) throw new UsageError(`hostfile: slots must be at least 1 in '${line}'`);
    out.push({ host: host!, slots });
  }
  return out;
}
