// Ranks waiting in recv use (almost) no CPU, on the normal path: 2 process
// ranks over shm and 2 thread ranks over tbsm on this 2-core machine, not
// oversubscribed, so progress polls for RAILCOMM_SPIN_US and then sleeps
// (test/jobs/idle-wait.mjs). README promises 0.2-0.6% of a core; the bound
// here is a few percent, far below the 100% of a rank that never sleeps
// (RAILCOMM_SPIN_US=100000000 fails these tests). The oversubscribed case,
// where ranks never spin, is in shm-suite.mjs (8 processes, 16 threads).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import { railcomm, jobScript, linesWith } from './jobs.mjs';
import { need, needAddon, needAll } from '../helpers/requires.mjs';

const WAIT_S = 2;
/** Of one core, over the wait: the process's CPU time (all its threads) / the time waited. */
const BOUND_PERCENT = 3;
const cpus = os.availableParallelism();

const twoCpus = need('cpus', cpus < 2 ? `this machine has ${cpus}: 2 ranks on 1 would be oversubscribed` : null);
for (const [what, args, env, rail, needs] of [
  ['2 processes over shm', ['-n', '2'], { RAILCOMM_RAILS: 'shm,self' }, 'shm', needAll(needAddon(), twoCpus)],
  ['2 thread ranks over tbsm', ['-n', '2', '--threads'], {}, 'tbsm', twoCpus],
]) {
  test(`${what}, not oversubscribed: a rank waiting ${WAIT_S} s in recv uses under ${BOUND_PERCENT}% of a core`, needs, async (t) => {
    const job = await railcomm(['run', ...args, '--timeout', '60', jobScript('idle-wait.mjs'), String(WAIT_S)], { limitMs: 90_000, env });
    assert.equal(job.code, 0, `${job.stdout}\n${job.stderr}`);
    const idle = linesWith(job.stdout, 'IDLE');
    assert.equal(idle.length, 1, job.stdout);
    const [via, cpuMs, waitedMs] = idle[0].rest.split(' ');
    assert.equal(via, rail, 'the wait was on the rail under test');
    assert.ok(Number(waitedMs) >= WAIT_S * 750, `waited only ${waitedMs} ms`);
    const percent = (Number(cpuMs) / Number(waitedMs)) * 100;
    t.diagnostic(`${what}: ${cpuMs} ms of CPU over ${waitedMs} ms (${percent.toFixed(2)}% of a core)`);
    assert.ok(percent < BOUND_PERCENT, `${cpuMs} ms of CPU while waiting ${waitedMs} ms: ${percent.toFixed(1)}% of a core (bound ${BOUND_PERCENT}%)`);
  });
}
