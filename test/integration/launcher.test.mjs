// Integration tests of `railcomm run` (through test/helpers/run-cli.mjs) with
// throwaway rank scripts: output prefixing, exit codes, stopping, timeouts,
// signals, and that no rank or grandchild outlives the launcher.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync, readFileSync, readdirSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { startJob } from '../../dist/cli/run.js';
import { shellQuote } from '../../dist/cli/hosts.js';
import { DEFAULT_NODE_FLAGS } from '../../dist/cli/program.js';
import { launchKit, alive, kvRankScript, waitFor } from '../helpers/launch-kit.mjs';
import { need } from '../helpers/requires.mjs';
import { railcomm, jobScript } from './jobs.mjs';
import { shmJobPrefix } from '../../dist/native/addon.js';

const { dir, seenPids, script, launch } = launchKit('railcomm-launcher-');


function pidsIn(sub) {
  const d = join(dir, sub);
  let names = [];
  try { names = readdirSync(d); } catch { return []; }
  const pids = names.filter((n) => n.endsWith('.pid')).map((n) => Number(readFileSync(join(d, n), 'utf8'))).filter((n) => n > 0);
  for (const p of pids) seenPids.add(p);
  return pids;
}

/** Rank script prelude: writes this process's pid (and optionally a grandchild's) under dir/sub. */
const pidPrelude = (sub) => `
import { writeFileSync, mkdirSync, renameSync } from 'node:fs';
import { spawn } from 'node:child_process';
const pidDir = ${JSON.stringify(join(dir, sub))};
mkdirSync(pidDir, { recursive: true });
const rank = process.env.RAILCOMM_RANK;
function notePid(name, pid) {
  // Written then renamed, so the test never reads a half-written pid.
  writeFileSync(pidDir + '/' + name + '.tmp', String(pid));
  renameSync(pidDir + '/' + name + '.tmp', pidDir + '/' + name + '.pid');
}
function spawnGrandchild() {
  const g = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  notePid('g' + rank, g.pid);
}
`;

const sleeper = `setInterval(() => {}, 1000);\n`;

test('output of 3 ranks is prefixed line by line, partial lines included', async () => {
  const s = script('prefix.mjs', `
const r = process.env.RAILCOMM_RANK;
process.stdout.write('part-');
setTimeout(() => {
  process.stdout.write('one\\nline two ✓\\n');
  process.stderr.write('err from ' + r + '\\n');
  process.stdout.write('last-without-newline');
}, 50);
`);
  const res = await launch(['-n', '3', s]);
  assert.equal(res.code, 0, res.stderr);
  const lines = res.stdout.split('\n').filter(Boolean);
  assert.equal(lines.length, 9, res.stdout);
  for (let r = 0; r < 3; r++) {
    const mine = lines.filter((l) => l.startsWith(`[${r}] `)).map((l) => l.slice(`[${r}] `.length));
    assert.deepEqual(mine, ['part-one', 'line two ✓', 'last-without-newline']);
    assert.match(res.stderr, new RegExp(`^\\[${r}\\] err from ${r}$`, 'm'));
  }
  assert.ok(lines.every((l) => /^\[\d\] /.test(l)), res.stdout);
});

test('lines printed just before process.exit() all arrive (processes and thread hosts, clean and failing exits)', async () => {
  for (const [args, code, fin] of [[[], 0, 'fin'], [['--threads-per-process', '2'], 0, 'fin'], [[], 3, 'nofin']]) {
    const N = 20000;
    const res = await railcomm(['run', '-n', '4', ...args, '--timeout', '100', jobScript('print-then-exit.mjs'), String(N), String(code), fin], { limitMs: 130_000 });
    const what = `${args.join(' ')} exit ${code} ${fin}`;
    assert.equal(res.code, code, `${what}\n${res.stderr.slice(-2000)}`);
    const lines = res.stdout.split('\n');
    assert.equal(lines.filter((l) => / line \d+ of rank /.test(l)).length, 4 * N, `${what}: lines lost`);
    for (let r = 0; r < 4; r++) {
      assert.ok(lines.includes(`[${r}] LAST ${r}`), `${what}: rank ${r}'s last line`);
      assert.match(res.stderr, new RegExp(`^\\[${r}\\] LAST-ERR ${r}$`, 'm'), `${what}: rank ${r}'s last stderr line`);
    }
  }
});

test('a non-JavaScript command runs as a program', async () => {
  const res = await launch(['-n', '2', '--', '/bin/sh', '-c', 'echo "rank $RAILCOMM_RANK of $RAILCOMM_SIZE"']);
  assert.equal(res.code, 0, res.stderr);
  assert.deepEqual(res.stdout.split('\n').filter(Boolean).sort(), ['[0] rank 0 of 2', '[1] rank 1 of 2']);
});

test('the RAILCOMM_ variables, --rails, --stats and -x reach every rank', async () => {
  const s = script('env.mjs', `
const pick = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('RAILCOMM_') || k === 'MY_VAR'));
console.log(JSON.stringify(pick));
`);
  const res = await launch(['-n', '2', '--rails', 'tcp', '--stats', '-x', 'MY_VAR=a=b c', s]);
  assert.equal(res.code, 0, res.stderr);
  const envs = res.stdout.split('\n').filter(Boolean).map((l) => {
    const m = /^\[(\d)\] (.*)$/.exec(l);
    return { rank: Number(m[1]), env: JSON.parse(m[2]) };
  }).sort((a, b) => a.rank - b.rank);
  assert.equal(envs.length, 2);
  for (const { rank, env } of envs) {
    assert.equal(env.RAILCOMM_RANK, String(rank));
    assert.equal(env.RAILCOMM_SIZE, '2');
    assert.equal(env.RAILCOMM_LOCAL_RANK, String(rank));
    assert.equal(env.RAILCOMM_LOCAL_SIZE, '2');
    assert.match(env.RAILCOMM_KV, /^127\.0\.0\.1:\d+$/);
    assert.match(env.RAILCOMM_JOB_KEY, /^[0-9a-f]{64}$/);
    assert.match(env.RAILCOMM_JOB_ID, /^\d+$/);
    assert.ok(Number(env.RAILCOMM_JOB_ID) <= 0xffffffff);
    assert.equal(env.RAILCOMM_RAILS, 'tcp');
    assert.equal(env.RAILCOMM_STATS, '1');
    assert.equal(env.MY_VAR, 'a=b c');
  }
  assert.equal(envs[0].env.RAILCOMM_JOB_KEY, envs[1].env.RAILCOMM_JOB_KEY);
  assert.equal(envs[0].env.RAILCOMM_JOB_ID, envs[1].env.RAILCOMM_JOB_ID);
  assert.equal(envs[0].env.RAILCOMM_KV, envs[1].env.RAILCOMM_KV);
});

test('a failing rank sets the exit code and the others are stopped (SIGKILL after --grace)', async () => {
  const s = script('fail.mjs', `${pidPrelude('fail')}
notePid('r' + rank, process.pid);
if (rank === '1') setTimeout(() => process.exit(3), 300);
// Rank 2 ignores SIGTERM: only the SIGKILL after the grace time stops it.
if (rank === '2') process.on('SIGTERM', () => {});
${sleeper}`);
  const res = await launch(['-n', '3', '--grace', '1', s], { limitMs: 15_000 });
  assert.equal(res.code, 3, res.stderr);
  assert.match(res.stderr, /rank 1 exited with code 3/);
  assert.ok(res.ms < 8000, `took ${res.ms} ms`);
  const pids = pidsIn('fail');
  assert.equal(pids.length, 3);
  for (const p of pids) assert.equal(alive(p), false, `pid ${p} survived`);
});

test('a rank killed by a signal exits the launcher with 128+signo', async () => {
  const s = script('segv.mjs', `
if (process.env.RAILCOMM_RANK === '0') setTimeout(() => process.kill(process.pid, 'SIGKILL'), 100);
else ${sleeper}`);
  const res = await launch(['-n', '2', s]);
  assert.equal(res.code, 137, res.stderr);
  assert.match(res.stderr, /rank 0 was killed by signal SIGKILL/);
});

test('--timeout stops a hung job with exit code 124', async () => {
  const s = script('hang.mjs', `${pidPrelude('hang')}notePid('r' + rank, process.pid);\n${sleeper}`);
  const res = await launch(['-n', '2', '--timeout', '1', '--grace', '1', s], { limitMs: 15_000 });
  assert.equal(res.code, 124, res.stderr);
  assert.match(res.stderr, /railcomm run: job exceeded --timeout 1 s; stopping it/);
  assert.ok(res.ms < 6000, `took ${res.ms} ms`);
  for (const p of pidsIn('hang')) assert.equal(alive(p), false, `pid ${p} survived`);
});

test('--timeout prints what each rank waits for before stopping the job (a rank busy in its own code says nothing)', async () => {
  for (const mode of [[], ['--threads']]) {
    const s = script('timeout-report.mjs', `const { init } = await import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)});
const comm = await init();
if (comm.rank === 2 && !process.env.RAILCOMM_THREADS) for (;;) {}
await comm.recv(new Uint8Array(4), (comm.rank + 1) % comm.size, 3);`);
    // (6 s: time for three ranks to start and post their receives on a busy 2-core machine.)
    const res = await launch(['-n', '3', ...mode, '--timeout', '6', '--grace', '1', s], { limitMs: 30_000 });
    assert.equal(res.code, 124, res.stderr);
    assert.match(res.stderr, /^railcomm run: hang report at --timeout 6 s: what each rank waits for now/m);
    assert.match(res.stderr, /^ {2}rank 0 waits on rank 1:\n {6}receive on context 0 from rank 1 tag 3 \(4 B buffer\), no matching message yet$/m);
    if (mode.length === 0) assert.match(res.stderr, /^ {2}rank 2 sent no report when asked: busy in code that does not return to the event loop/m);
    else assert.match(res.stderr, /^ {2}deadlock: cycle rank 0 -> rank 1 -> rank 2 -> rank 0/m);
    assert.ok(res.stderr.indexOf('hang report at') < res.stderr.indexOf('job exceeded --timeout'), res.stderr);
  }
});

test('SIGTERM to the launcher stops every rank and their children', async () => {
  const s = script('term.mjs', `${pidPrelude('term')}
spawnGrandchild();
notePid('r' + rank, process.pid);
${sleeper}`);
  let launcher;
  const done = launch(['-n', '3', s], { limitMs: 20_000, onSpawn: (c) => { launcher = c; } });
  await waitFor(() => pidsIn('term').length === 6, 10_000, 'ranks and grandchildren to start');
  const pids = pidsIn('term');
  for (const p of pids) assert.equal(alive(p), true);
  launcher.kill('SIGTERM');
  const res = await done;
  assert.equal(res.code, 143, res.stderr);
  assert.match(res.stderr, /received SIGTERM/);
  await waitFor(() => pids.every((p) => !alive(p)), 3000, 'every rank and grandchild to be gone');
});

// init()'s own handling (no handler of the test's): a rank on its event loop
// sees the launcher's connection close and exits, running its exit handlers
// (which remove its /dev/shm names), well before the native watch's 2 s
// grace would kill it. The exit handler leaves a mark: a rank killed instead
// (SIGKILL runs no handler) leaves none.
test('ranks that wired up through init() exit on their own within the grace period when the launcher is SIGKILLed, leaving nothing in /dev/shm (processes and thread ranks)', async (t) => {
  const GRACE_MS = 2000; // src/boot/launcher-tie.ts: after this the native watch kills a rank that did not exit
  const noted = (sub, re) => { try { return readdirSync(join(dir, sub)).filter((n) => re.test(n)).sort(); } catch { return []; } };
  for (const [sub, args] of [['orphan', ['--rails', 'shm,self']], ['orphan-threads', ['--threads']]]) {
    const s = script(`${sub}.mjs`, `${pidPrelude(sub)}
const { init } = await import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)});
const comm = await init();
// Ranks 0 and 1 talk (rings); rank 2 talks to nobody, so inboxes keep their /dev/shm names (a name goes once every peer mapped it).
if (comm.rank < 2) await Promise.all([comm.send(new Uint8Array(64), 1 - comm.rank, 1), comm.recv(new Uint8Array(64), 1 - comm.rank, 1)]);
process.on('exit', (code) => notePid('x' + comm.rank, 1000 + code));
notePid('r' + comm.rank, process.pid);
setInterval(() => {}, 1000); // on its event loop, no request outstanding`);
    let launcher;
    const done = launch(['-n', '3', ...args, s], { onSpawn: (c) => { launcher = c; } });
    await waitFor(() => noted(sub, /^r\d+\.pid$/).length === 3, 15_000, `${sub}: ranks to wire up`);
    const pids = pidsIn(sub);
    const environ = readFileSync(`/proc/${pids[0]}/environ`, 'latin1').split('\0');
    const prefix = shmJobPrefix(Number(environ.find((v) => v.startsWith('RAILCOMM_JOB_ID='))?.slice(16)), environ.find((v) => v.startsWith('RAILCOMM_JOB_KEY='))?.slice(17) ?? '');
    const names = () => readdirSync('/dev/shm').filter((n) => n.startsWith(prefix));
    if (sub === 'orphan') assert.ok(names().length > 0, 'the process ranks have /dev/shm names');
    const t0 = Date.now();
    launcher.kill('SIGKILL');
    await done;
    await waitFor(() => pids.every((p) => !alive(p)), GRACE_MS, `${sub}: every rank to exit on its own within ${GRACE_MS} ms`);
    const ms = Date.now() - t0;
    // Each rank's exit handler ran (code 1: init() exits when it loses the launcher).
    const marks = noted(sub, /^x\d+\.pid$/);
    assert.deepEqual(marks, ['x0.pid', 'x1.pid', 'x2.pid'], `${sub}: every rank exited through its exit handlers`);
    for (const m of marks) assert.equal(readFileSync(join(dir, sub, m), 'utf8'), '1001', `${sub} ${m}: exit code`);
    assert.deepEqual(names(), [], `${sub}: no /dev/shm name left`);
    assert.ok(ms < GRACE_MS, `${sub}: ${ms} ms`);
    t.diagnostic(`${sub}: every rank gone ${ms} ms after the launcher was killed`);
  }
});

test('ranks busy in a loop that never returns to the event loop end too when the launcher is SIGKILLed (processes and thread ranks)', async () => {
  for (const mode of [[], ['--threads']]) {
    // Each mode notes its pids apart: a pid of the first mode's dead ranks may be reused.
    const sub = mode.length === 0 ? 'busy-orphan' : 'busy-orphan-threads';
    const s = script(`${sub}.mjs`, `${pidPrelude(sub)}
const { init } = await import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)});
const comm = await init();
notePid('r' + comm.rank, process.pid);
for (;;) { /* never looks at the launcher's connection again */ }`);
    let launcher;
    // Over tcp: a busy rank is killed, so it cannot remove its /dev/shm inbox (see the README).
    const done = launch(['-n', '2', '--rails', 'tcp,self', ...mode, s], { onSpawn: (c) => { launcher = c; } });
    await waitFor(() => pidsIn(sub).length === 2, 15_000, 'ranks to start');
    const pids = pidsIn(sub);
    launcher.kill('SIGKILL');
    await done;
    await waitFor(() => pids.every((p) => !alive(p)), 5000, `busy ranks (${mode.join(' ') || 'processes'}) to end with their launcher`);
  }
});

test('ranks still working before init() end with a launcher that dies (SIGKILL, or SIGHUP: exit 129), and one started after its launcher died does not wait for it', async () => {
  for (const [sig, mode] of [['SIGKILL', []], ['SIGHUP', []], ['SIGKILL', ['--threads']]]) {
    const sub = `preinit-${sig}-${mode.length}`;
    const s = script(`${sub}.mjs`, `${pidPrelude(sub)}
const { init } = await import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)});
notePid('r' + process.env.RAILCOMM_RANK, process.pid);
await new Promise((r) => setTimeout(r, 60_000)); // loads its data first
await init();`);
    let launcher;
    const done = launch(['-n', '2', ...mode, s], { onSpawn: (c) => { launcher = c; } });
    await waitFor(() => pidsIn(sub).length === 2, 15_000, `${sub}: ranks to start`);
    const pids = pidsIn(sub);
    launcher.kill(sig);
    const res = await done;
    if (sig === 'SIGHUP') assert.equal(res.code, 129, res.stderr);
    await waitFor(() => pids.every((p) => !alive(p)), 5000, `${sub}: ranks to end with their launcher`);
  }
  // The launcher's pid names a process that is not this rank's parent: init() refuses at once.
  const s = script('launcher-gone.mjs', `
const { init } = await import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)});
try { await init(); } catch (e) { console.log('CODE', e.code, e.message); }`);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [s], { encoding: 'utf8', timeout: 20_000, env: { ...process.env, RAILCOMM_RANK: '0', RAILCOMM_SIZE: '2', RAILCOMM_KV: '127.0.0.1:9', RAILCOMM_JOB_KEY: 'ab'.repeat(16), RAILCOMM_JOB_ID: '7', RAILCOMM_LAUNCHER_PID: '999999999' } });
  assert.match(r.stdout, /CODE ERR_BOOT rank 0: its launcher \(railcomm run, pid 999999999\) ended before this process reached it/, r.stdout + r.stderr);
  assert.ok(Date.now() - t0 < 10_000, 'no retrying for RAILCOMM_CONNECT_TIMEOUT');
  // A rank started through a wrapper (sh -c, npx, time) whose launcher lives is not taken for orphaned.
  const w = script('wrapped.mjs', `
const { init } = await import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)});
const comm = await init();
console.log('WRAPPED rank', comm.rank, 'of', comm.size);
await comm.finalize();`);
  const res = await launch(['-n', '2', '--', '/bin/sh', '-c', `${shellQuote(process.execPath)} ${shellQuote(w)}; echo after`]);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.stdout.split('\n').filter((l) => /^\[\d\] (WRAPPED rank \d of 2|after)$/.test(l)).length, 4, res.stdout + res.stderr);
});

test('ranks idle in a receive over shared memory clean up their /dev/shm names when the launcher is SIGKILLed', async () => {
  const s = script('idle-orphan.mjs', `${pidPrelude('idle-orphan')}
const { init } = await import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)});
const comm = await init();
notePid('r' + comm.rank, process.pid);
// Never sent, and the ranks never talk: each inbox keeps its name (a peer unlinks it once it mapped it).
await comm.recv(new Uint8Array(8), 1 - comm.rank, 99);`);
  let launcher;
  const done = launch(['-n', '2', '--rails', 'shm,self', s], { onSpawn: (c) => { launcher = c; } });
  await waitFor(() => pidsIn('idle-orphan').length === 2, 15_000, 'ranks to start');
  const pids = pidsIn('idle-orphan');
  const environ = readFileSync(`/proc/${pids[0]}/environ`, 'latin1').split('\0');
    const prefix = shmJobPrefix(Number(environ.find((v) => v.startsWith('RAILCOMM_JOB_ID='))?.slice(16)), environ.find((v) => v.startsWith('RAILCOMM_JOB_KEY='))?.slice(17) ?? '');
  const names = () => readdirSync('/dev/shm').filter((n) => n.startsWith(prefix));
  assert.ok(names().length > 0, 'the ranks made their inboxes');
  launcher.kill('SIGKILL');
  await done;
  await waitFor(() => pids.every((p) => !alive(p)), 5000, 'idle ranks to end with their launcher');
  assert.deepEqual(names(), [], 'no shared-memory name left');
});

test('abort from a rank stops the job with its code; finalize makes a clean exit', async () => {
  const s = script('abort.mjs', kvRankScript);
  const aborted = await launch(['-n', '2', '--grace', '1', s, 'abort']);
  assert.equal(aborted.code, 5, aborted.stderr);
  assert.match(aborted.stderr, /rank 1 called abort: out of cheese/);

  const unfinalized = await launch(['-n', '2', '--grace', '1', s, 'nofinalize']);
  assert.equal(unfinalized.code, 1, unfinalized.stderr);
  assert.match(unfinalized.stderr, /rank 0 exited without calling finalize\(\)/);

  const clean = await launch(['-n', '2', s, 'clean']);
  assert.equal(clean.code, 0, clean.stderr);
  assert.equal(clean.stderr, '');
});

test('a rank that exits 0 without calling init() while the others wait in it fails the job at once, naming it', async () => {
  for (const extra of [[], ['--threads']]) {
    const job = await railcomm(['run', '-n', '3', ...extra, '--timeout', '60', jobScript('no-init.mjs')], { limitMs: 70_000 });
    const out = `${extra.join(' ')}\n${job.stdout}\n${job.stderr}`;
    assert.equal(job.code, 1, out);
    assert.match(job.stderr, /rank 1 exited \(code 0\) without calling init\(\) while other ranks wait for it in init\(\)/, out);
    assert.doesNotMatch(job.stderr, /--timeout/, out);
  }
});

test('a program that cannot be started fails the job with 127', async () => {
  const res = await launch(['-n', '2', '--grace', '0', '/nonexistent/program-railcomm-test']);
  assert.equal(res.code, 127, res.stderr);
  assert.match(res.stderr, /cannot start rank \d/);
});

test('bad usage prints the usage and exits 2', async () => {
  const ok = script('ok.mjs', '');
  for (const args of [[], [ok], ['-n', '0', ok], ['-n', 'abc', ok], ['-n', '2'], ['-n', '2', '--bogus', ok],
    ['-n', '2', '--timeout', '-1', ok], ['-n', '2', '-x', 'NOEQUALS', ok], ['-n', '2', '-x', 'RAILCOMM_RANK=3', ok], ['-n']]) {
    const res = await launch(args);
    assert.equal(res.code, 2, `args ${JSON.stringify(args)}: ${res.stderr}`);
    assert.match(res.stderr, /usage: railcomm run -n N/);
    assert.equal(res.stdout, '');
  }
  const help = await launch(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /usage: railcomm run/);
});

test('startJob with capture returns the lines of each rank', async () => {
  const s = script('capture.mjs', `console.log('hi ' + process.env.RAILCOMM_RANK); console.error('e');\n`);
  const job = await startJob({ np: 2, command: [s], capture: true });
  assert.equal(job.pids.length, 2);
  const res = await job.wait();
  assert.equal(res.code, 0);
  assert.deepEqual(res.outputs, [{ stdout: ['hi 0'], stderr: ['e'] }, { stdout: ['hi 1'], stderr: ['e'] }]);
  assert.deepEqual(res.exits.map((e) => e.code), [0, 0]);
});

// Oversubscription is judged by the CPUs the job's ranks share on the host,
// not by one rank's own affinity: a launcher or wrapper that binds each rank
// to a CPU of its own must not turn spinning off (an 8-byte hop went from
// 0.2 to 31 us), while a whole job bound to one CPU must.
/** The CPUs this process may run on (Cpus_allowed_list), or [] off Linux. */
function allowedCpus() {
  let list = '';
  try { list = /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? ''; } catch { return []; }
  const out = [];
  for (const part of list.split(',')) {
    const [lo, hi = lo] = part.split('-').map(Number);
    for (let c = lo; c <= hi; c++) out.push(c);
  }
  return out;
}
const cpus = allowedCpus();
const hasTaskset = spawnSync('taskset', ['--version']).status === 0;

const bindable = need('taskset', cpus.length < 2 ? `this process may use ${cpus.length} CPU` : !hasTaskset ? 'taskset is not installed' : null);
test('ranks bound each to their own CPU still spin; a whole job bound to one CPU does not', bindable, async () => {
  const job = script('spin-mode.mjs', `
import { init } from '${new URL('../../dist/index.js', import.meta.url).href}';
const comm = await init();
console.log('OVERSUBSCRIBED', comm.world.ctx.oversubscribed);
await comm.finalize();
`);
  const bound = script('bind.sh', `#!/bin/sh\nif [ "$RAILCOMM_LOCAL_RANK" = 0 ]; then cpu=${cpus[0]}; else cpu=${cpus[1]}; fi\nexec taskset -c $cpu ${shellQuote(process.execPath)} ${shellQuote(job)}\n`);
  chmodSync(bound, 0o755);
  const each = await launch(['-n', '2', '--rails', 'shm,self', bound]);
  assert.equal(each.code, 0, each.stderr);
  assert.deepEqual(each.stdout.split('\n').filter(Boolean).sort(), ['[0] OVERSUBSCRIBED false', '[1] OVERSUBSCRIBED false']);
  const whole = await launch(['-n', '2', '--rails', 'shm,self', job], { wrap: ['taskset', '-c', String(cpus[0])] });
  assert.equal(whole.code, 0, whole.stderr);
  assert.deepEqual(whole.stdout.split('\n').filter(Boolean).sort(), ['[0] OVERSUBSCRIBED true', '[1] OVERSUBSCRIBED true']);
});

test('JavaScript ranks and thread hosts run with the inlining flags (thread hosts that fill the host without concurrent recompilation); RAILCOMM_NODE_FLAGS replaces them', async () => {
  const job = script('argv.mjs', "console.log('FLAGS', process.execArgv.join(' ') || '-');\n");
  const defaults = DEFAULT_NODE_FLAGS.join(' ');
  assert.equal(defaults, '--max-inlined-bytecode-size-cumulative=3000 --max-inlined-bytecode-size=1000');
  // The host's CPUs as -x RAILCOMM_HOST_CPUS says: 2 ranks leave CPUs to spare on 64, none on 2.
  // Processes keep the background compiler either way.
  for (const [mode, cpus, busy] of [[[], 64, false], [[], 2, false], [['--threads'], 64, false], [['--threads'], 2, true]]) {
    const res = await launch(['-n', '2', ...mode, '-x', `RAILCOMM_HOST_CPUS=${cpus}`, job]);
    assert.equal(res.code, 0, res.stderr);
    const want = busy ? `${defaults} --no-concurrent-recompilation` : defaults;
    assert.deepEqual(res.stdout.split('\n').filter(Boolean).sort(), [`[0] FLAGS ${want}`, `[1] FLAGS ${want}`], `${mode.join(' ') || 'processes'} on ${cpus} CPUs`);
  }
  const threads = await launch(['-n', '2', '--threads', '-x', 'RAILCOMM_NODE_FLAGS=--max-inlined-bytecode-size-cumulative=2000', job]);
  assert.equal(threads.code, 0, threads.stderr);
  assert.deepEqual(threads.stdout.split('\n').filter(Boolean).sort(), ['[0] FLAGS --max-inlined-bytecode-size-cumulative=2000', '[1] FLAGS --max-inlined-bytecode-size-cumulative=2000']);
});
