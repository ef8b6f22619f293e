// railcomm run --hosts through a real ssh: the test starts its own sshd on a
// loopback port (throw-away host and client keys in a temp dir, no system
// configuration read or changed), runs a 3-rank job on two host names that
// the ssh command maps to 127.0.0.1 (--rsh 'ssh -o HostName=127.0.0.1 ...'),
// checks that every rank was started by an sshd session and the job
// completed, and stops sshd. Skips, saying why, where sshd cannot start here
// (fails instead under CI=true: helpers/requires.mjs, part 'sshd').

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, readFileSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { railcomm, jobScript, linesWith } from './jobs.mjs';
import { need, which } from '../helpers/requires.mjs';

const SSHD = '/usr/sbin/sshd';
const dir = mkdtempSync(join(os.tmpdir(), 'railcomm-ssh-'));
let sshd = null;

after(async () => {
  await stopSshd();
  rmSync(dir, { recursive: true, force: true });
});
// A runner that is stopped (CI's timeout, Ctrl-C) stops this file by a signal,
// and after() never runs: sshd, a child that outlives us, would stay.
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.once(sig, () => {
    sshd?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    process.exit(128 + os.constants.signals[sig]);
  });
}

/** A port free right now on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/** Whether something on the port greets like an ssh server. */
function greets(port) {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    const done = (v) => { c.destroy(); resolve(v); };
    c.setTimeout(1000, () => done(false));
    c.once('data', (d) => done(d.toString('latin1').startsWith('SSH-')));
    c.once('error', () => done(false));
  });
}

/**
 * Start sshd on a loopback port; resolves with the port, or a reason it cannot.
 * As root sshd needs its privilege separation directory /run/sshd; where the
 * system has none, sshd runs in a mount namespace of its own with a private
 * tmpfs on /run (the ranks it starts inherit it), so nothing changes outside.
 */
async function startSshd() {
  for (const [what, path] of [['sshd (Debian openssh-server)', SSHD], ['ssh', which('ssh')], ['ssh-keygen', which('ssh-keygen')]]) {
    if (!path || !existsSync(path)) return { why: `${what} is not installed` };
  }
  for (const k of ['host_key', 'client_key']) {
    const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, k)], { encoding: 'utf8' });
    if (r.status !== 0) return { why: `ssh-keygen failed: ${r.stderr}` };
  }
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')));
  chmodSync(join(dir, 'authorized_keys'), 0o600);
  const root = process.getuid() === 0;
  const ownNs = root && !existsSync('/run/sshd');
  if (ownNs && !which('unshare')) return { why: 'sshd as root needs /run/sshd, which is missing, and unshare (to give sshd a private /run) is not installed' };
  let log = '';
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const cfg = join(dir, 'sshd_config');
    writeFileSync(cfg, [
      `Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${join(dir, 'host_key')}`, `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`, 'StrictModes no', 'UsePAM no', 'PasswordAuthentication no',
      'KbdInteractiveAuthentication no', 'PubkeyAuthentication yes', 'PermitRootLogin prohibit-password',
      `AllowUsers ${os.userInfo().username}`, 'PrintMotd no', 'LogLevel ERROR', '',
    ].join('\n'));
    const argv = ownNs
      ? ['unshare', ['--mount', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs -o mode=755 railcomm-ssh-test /run && mkdir -m 755 /run/sshd && exec ${SSHD} -D -e -f "$0"`, cfg]]
      : [SSHD, ['-D', '-e', '-f', cfg]];
    const child = spawn(argv[0], argv[1], { stdio: ['ignore', 'ignore', 'pipe'] });
    log = '';
    child.stderr.on('data', (d) => { log += d; });
    const exited = new Promise((r) => child.once('exit', () => r(true)));
    sshd = { child, exited };
    for (let i = 0; i < 50; i++) {
      if (await Promise.race([exited, new Promise((r) => setTimeout(() => r(false), 100))])) break;
      if (await greets(port)) return { port };
    }
    await stopSshd();
  }
  return { why: `sshd did not start: ${log.trim() || 'no output'}` };
}

async function stopSshd() {
  if (sshd === null) return;
  const { child, exited } = sshd;
  sshd = null;
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(t);
  }
}

test('railcomm run --hosts starts its ranks through a real ssh to a local sshd; the job completes', { timeout: 120_000 }, async (t) => {
  const s = await startSshd();
  if (need('sshd', s.why).skipped(t)) return;
  const key = join(dir, 'client_key');
  // Two host names; the ssh command sends both to the local sshd. railcomm joins
  // the remote command into one line for the remote shell, quoting every word.
  const rsh = `ssh -F /dev/null -o HostName=127.0.0.1 -p ${s.port} -i ${key} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=${join(dir, 'known_hosts')} -o LogLevel=ERROR`;
  const job = await railcomm(['run', '--hosts', 'nodeA:2,nodeB:1', '--rsh', rsh, '--kv-host', '127.0.0.1', '--timeout', '60', jobScript('ssh-ranks.mjs')], { limitMs: 90_000 });
  assert.equal(job.code, 0, `${job.stdout}\n${job.stderr}`);
  const parents = linesWith(job.stdout, 'PARENT');
  assert.deepEqual(parents.map((l) => l.rank).sort(), [0, 1, 2], job.stdout);
  for (const { rank, rest } of parents) assert.equal(rest, 'sshd', `rank ${rank} was started by ${rest}, not by an sshd session`);
  assert.equal(linesWith(job.stdout, 'DONE').length, 3, job.stdout);
  const prefix = linesWith(job.stdout, 'SHMPREFIX')[0]?.rest;
  assert.ok(prefix, job.stdout);
  assert.deepEqual(readdirSync('/dev/shm').filter((n) => n.startsWith(prefix)), [], 'no shared-memory name left');
  t.diagnostic(`rails: ${linesWith(job.stdout, 'RAIL').map((l) => `${l.rank}:${l.rest}`).join(' ')}; ${job.ms} ms`);
  const pid = Number(readFileSync(join(dir, 'sshd.pid'), 'utf8'));
  await stopSshd();
  let gone = false;
  try { process.kill(pid, 0); } catch { gone = true; }
  assert.ok(gone, 'sshd stopped');
});
