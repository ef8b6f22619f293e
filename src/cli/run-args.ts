// `railcomm run`'s command line: its usage text, and the options it turns
// into a job's (what is wrong with them is a UsageError, printed with the usage).

import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { ENV } from '../boot/launch-env.js';
import { THREAD_ENV } from './thread-host.js';
import { parseHostfile, parseHosts, type HostSlots } from './hosts.js';
import { SCRIPT_RE } from './program.js';
import { UsageError } from './usage-error.js';
import { DEFAULT_GRACE_SEC, type JobOptions } from './job-options.js';

const IDENTITY_VARS: readonly string[] = [...Object.values(ENV), ...Object.values(THREAD_ENV)];

export function usage(): string {
  return `usage: railcomm run -n N [options] [--] script [args...]

Start N ranks of a program on this host (or on --hosts), wired up through a key-value service.

options:
  -n, -np, --np N   number of ranks (positive integer; with --hosts, default all slots)
  --hosts LIST      hosts and slots, e.g. nodeA:2,nodeB:2; ranks fill them in order
  --hostfile F      the same from a file in Open MPI's format (host slots=N per line)
  --rsh PREFIX      command that runs a command on a host (default ssh; e.g. 'ip netns exec')
  --kv-host ADDR    address remote ranks reach this launcher at (default: first routable IPv4)
  --threads         run the N ranks as worker threads of one node process
  --threads-per-process K
                    run N/K processes of K worker-thread ranks each (N a multiple of K);
                    process p runs ranks p*K .. p*K+K-1
  --timeout S       stop the job after S seconds (exit code 124); nothing else stops a hung job
  --rails LIST      rails the ranks use, e.g. tcp (sets RAILCOMM_RAILS)
  --stats[=json]    ranks print traffic counters at finalize, a table each (sets RAILCOMM_STATS=1;
                    =json: one JSON line each, RAILCOMM_STATS_FORMAT=json)
  --grace S         seconds between SIGTERM and SIGKILL when stopping ranks (default ${DEFAULT_GRACE_SEC})
  -x NAME=VALUE     set an environment variable for every rank (repeatable)
  -h, --help        show this help

A script ending in .js, .mjs or .cjs runs with this node, one in .ts, .mts or .cts
too (Node's type stripping from 22.6, else tsx installed in the project); the
script must exist before any rank starts. Anything else runs as a program.
Thread ranks need such a script, run on this host only (not with --hosts),
and see the same process.argv and environment as a process rank, plus
RAILCOMM_THREAD_BASE and RAILCOMM_THREADS. Output lines are prefixed with [rank].
The exit code is that of the first rank that failed (128+signal number if killed;
for thread ranks, their process's first failure), 0 when all ranks succeeded.

Hang report: when ranks wait and no operation completes on any rank for
RAILCOMM_HANG_TIMEOUT ms (default 60000; 0 turns it off; set it with -x or in
the environment), the launcher prints once what each rank waits for, who waits
on whom, and any cycle of waits (a deadlock). The report never stops the job:
--timeout does.
`;
}

export interface ParsedRun {
  opts: JobOptions;
}

/** The longest --timeout or --grace: Node's timers hold at most 2^31-1 ms (a longer one fires at once). */
const MAX_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/** The most ranks railcomm run starts (a placement and a process each; a typo's 10^11 would fill memory first). */
export const MAX_RANKS = 1 << 20;

function parseSeconds(text: string, what: string, allowZero: boolean): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0 || (!allowZero && n === 0)) {
    throw new UsageError(`${what} needs a ${allowZero ? 'non-negative' : 'positive'} number of seconds, got '${text}'`);
  }
  if (n > MAX_SECONDS) throw new UsageError(`${what} ${text} is longer than the ${MAX_SECONDS} s (24.8 days) a timer can wait; leave --timeout out for no limit`);
  return n;
}

export function parseRunArgs(argv: string[]): ParsedRun | 'help' {
  let np: number | undefined;
  let timeoutSec: number | undefined;
  let graceSec: number | undefined;
  let rails: string | undefined;
  let stats: boolean | 'json' = false;
  let hosts: HostSlots[] | undefined;
  let rsh: string[] | undefined;
  let kvHost: string | undefined;
  /** --threads (all ranks in one process) or --threads-per-process K. */
  let threads: 'all' | number | undefined;
  const env: Record<string, string> = {};
  let i = 0;
  const valueOf = (name: string, inline: string | undefined): string => {
    if (inline !== undefined) return inline;
    const v = argv[++i];
    if (v === undefined) throw new UsageError(`${name} needs a value`);
    return v;
  };
  for (; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === '--') {
      i++;
      break;
    }
    if (!a.startsWith('-') || a === '-') break;
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const name = eq > 0 ? a.slice(0, eq) : a;
    const inline = eq > 0 ? a.slice(eq + 1) : undefined;
    switch (name) {
      case '-h':
      case '--help':
        return 'help';
      case '-n':
      case '-np':
      case '--np': {
        const v = valueOf(name, inline);
        if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < 1) {
          throw new UsageError(`${name} needs a positive integer, got '${v}'`);
        }
        np = Number(v);
        break;
      }
      case '--timeout':
        timeoutSec = parseSeconds(valueOf(name, inline), name, false);
        break;
      case '--grace':
        graceSec = parseSeconds(valueOf(name, inline), name, true);
        break;
      case '--rails': {
        const v = valueOf(name, inline);
        if (v.trim() === '') throw new UsageError('--rails needs a list of rails, e.g. tcp');
        rails = v;
        break;
      }
      case '--hosts':
        hosts = parseHosts(valueOf(name, inline));
        break;
      case '--hostfile': {
        const f = valueOf(name, inline);
        let text: string;
        try { text = readFileSync(f, 'utf8'); } catch (e) { throw new UsageError(`--hostfile: cannot read ${f}: ${(e as Error).message}`); }
        hosts = parseHostfile(text);
        break;
      }
      case '--rsh': {
        const v = valueOf(name, inline).trim();
        if (!v) throw new UsageError('--rsh needs a command prefix, e.g. ssh');
        rsh = v.split(/\s+/);
        break;
      }
      case '--kv-host': {
        kvHost = valueOf(name, inline);
        // An address, or a host name (letters, digits, dots, dashes); 999.1.1.1 is neither, and ranks
        // would retry it for RAILCOMM_CONNECT_TIMEOUT before saying so.
        const dotted = /^[\d.]+$/.test(kvHost);
        if ((dotted && isIP(kvHost) === 0) || (!dotted && isIP(kvHost) === 0 && !/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(kvHost))) {
          throw new UsageError(`--kv-host '${kvHost}' is not an IP address or a host name`);
        }
        break;
      }
      case '--threads':
        if (inline !== undefined) throw new UsageError('--threads takes no value (for K threads per process: --threads-per-process K)');
        if (threads !== undefined && threads !== 'all') throw new UsageError('give either --threads or --threads-per-process, not both');
        threads = 'all';
        break;
      case '--threads-per-process': {
        const v = valueOf(name, inline);
        if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < 1) throw new UsageError(`${name} needs a positive integer, got '${v}'`);
        if (threads === 'all') throw new UsageError('give either --threads or --threads-per-process, not both');
        threads = Number(v);
        break;
      }
      case '--stats':
        if (inline !== undefined && inline !== 'json' && inline !== 'table') throw new UsageError(`--stats prints a table per rank; --stats=json prints JSON (not '${inline}')`);
        stats = inline === 'json' ? 'json' : true;
        break;
      case '-x': {
        const v = valueOf(name, inline);
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(v);
        if (!m) throw new UsageError(`-x needs NAME=VALUE, got '${v}'`);
        const key = m[1] ?? '';
        if (IDENTITY_VARS.includes(key)) throw new UsageError(`-x cannot set ${key}: railcomm run sets it for each rank`);
        env[key] = m[2] ?? '';
        break;
      }
      default:
        throw new UsageError(`unknown option '${a}'`);
    }
  }
  const command = argv.slice(i);
  if (np === undefined && hosts !== undefined) np = hosts.reduce((a, h) => a + h.slots, 0);
  if (np === undefined) throw new UsageError('-n N (the number of ranks) is required');
  if (np > MAX_RANKS) throw new UsageError(`${np} ranks: railcomm run starts at most ${MAX_RANKS}`);
  if (hosts !== undefined && np > hosts.reduce((a, h) => a + h.slots, 0)) throw new UsageError(`-n ${np} is more than the ${hosts.reduce((a, h) => a + h.slots, 0)} slots of the hosts`);
  if (command.length === 0 || !command[0]) throw new UsageError('no script or program given');
  if (threads !== undefined) {
    if (hosts !== undefined) throw new UsageError('--threads and --threads-per-process run ranks on this host only; they do not combine with --hosts or --hostfile');
    if (typeof threads === 'number' && np % threads !== 0) throw new UsageError(`-n ${np} is not a multiple of --threads-per-process ${threads}`);
    if (!SCRIPT_RE.test(command[0])) throw new UsageError(`thread ranks run a script (.js, .mjs, .cjs, .ts, .mts, .cts), not '${command[0]}'`);
  }
  const opts: JobOptions = { np, command, stats, env };
  if (threads !== undefined) opts.threadsPerProcess = threads === 'all' ? np : threads;
  if (timeoutSec !== undefined) opts.timeoutSec = timeoutSec;
  if (graceSec !== undefined) opts.graceSec = graceSec;
  if (rails !== undefined) opts.rails = rails;
  if (hosts !== undefined) opts.hosts = hosts;
  if (rsh !== undefined) opts.rsh = rsh;
  if (kvHost !== undefined) opts.kvHost = kvHost;
  return { opts };
}
