// Secrets stay off command lines (issue "Hardening"): ranks started through
// an ssh-like agent get the job key on standard input, so `ps` never shows
// it, for the whole job. The agent is a stand-in `ssh` that runs the remote
// command line with sh on this host (a real sshd is tested in ssh.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, chmodSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { railcomm, jobScript, linesWith } from './jobs.mjs';

test('railcomm run --hosts through ssh: the job key is on no process\'s command line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'railcomm-ssh-'));
  const ssh = join(dir, 'ssh');
  // ssh [options] host 'command line': run the line here, staying alive (with
  // its arguments) for the whole job as ssh does.
  writeFileSync(ssh, '#!/bin/sh\nfor line; do :; done\nsh -c "$line"\n');
  chmodSync(ssh, 0o755);
  const seen = [];
  const watch = setInterval(() => { seen.push(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })); }, 50);
  try {
    const job = await railcomm(['run', '--rsh', ssh, '--hosts', 'stand-in-host:2', '-n', '2', '--rails', 'tcp', '--timeout', '30', jobScript('print-key.mjs')], { limitMs: 40_000 });
    clearInterval(watch);
    assert.equal(job.code, 0, job.stdout + job.stderr);
    const keys = linesWith(job.stdout, 'KEY').map((l) => l.rest);
    assert.equal(keys.length, 2);
    assert.match(keys[0], /^[0-9a-f]{32,}$/, 'the ranks got a key');
    assert.equal(keys[0], keys[1]);
    assert.deepEqual(linesWith(job.stdout, 'GOT').map((l) => l.rest), ['1']);
    assert.ok(seen.length >= 5, 'ps ran during the job');
    assert.ok(seen.some((ps) => ps.includes('stand-in-host')), 'the snapshots saw the remote commands');
    for (const ps of seen) assert.ok(!ps.includes(keys[0]), 'the key appeared on a command line');
  } finally {
    clearInterval(watch);
    rmSync(dir, { recursive: true, force: true });
  }
});
