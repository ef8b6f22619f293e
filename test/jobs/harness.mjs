// Tiny harness for multi-rank job scripts: every rank runs each case in turn,
// prints `CASE <name> ok` or `CASE <name> FAIL <why>`, and a barrier separates
// cases. A case that hangs fails after a timeout and ends the job.

import assert from 'node:assert/strict';
export { assert };

export async function runCases(comm, cases, { timeoutMs = 30000, only = process.env.ONLY_CASE } = {}) {
  let failed = 0;
  for (const [name, fn] of cases) {
    if (only && name !== only) continue;
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([fn(), timeout]);
      console.log(`CASE ${name} ok`);
    } catch (e) {
      failed++;
      console.log(`CASE ${name} FAIL ${(e && e.stack) || e}`.replace(/\n/g, ' | '));
      if (String(e && e.message).startsWith('timed out')) process.exit(1);
    } finally {
      clearTimeout(timer);
    }
    await comm.barrier();
  }
  return failed;
}

/** Fill with a pattern that depends on (seed, index), so misplaced bytes are caught. */
export function pattern(n, seed) {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 131 + seed * 7 + (i >> 8)) & 0xff;
  return b;
}

export function samePattern(b, n, seed) {
  if (b.length < n) return false;
  for (let i = 0; i < n; i++) if (b[i] !== ((i * 131 + seed * 7 + (i >> 8)) & 0xff)) return false;
  return true;
}

export async function rejectsWith(promiseOrFn, code) {
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (e) {
    assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
    assert.equal(e.name, 'RailcommError');
    return e;
  }
  assert.fail(`expected a rejection with ${code}`);
}

export function throwsWith(fn, code) {
  try {
    fn();
  } catch (e) {
    assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
    return e;
  }
  assert.fail(`expected a throw with ${code}`);
}
