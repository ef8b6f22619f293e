// Does this Node's V8 read a shared Int32Array element again on each pass of
// a loop that stores nothing to it, once the loop is optimized? The ring's
// plain shared-word reads (src/rail/shared/ring.ts, PLAIN_SYNC) rely on it: a
// compiler may hoist the load, as the memory model allows, and the spinning
// consumer would then never see the producer's store. In a child process the
// main thread spins on a word that a worker sets after 100 ms, with the spin
// function tiered up as V8 does by itself (warm-up on a word that stays 0)
// or forced onto Maglev or Turbofan (natives syntax, which a worker cannot
// take). The loop is bounded (2^30 - 1 passes, a few seconds), so a hoisted
// load shows as a spin that ran to its bound without seeing the store.
// Prints one JSON line per case and a summary.
//   node bench/plain-read-probe.mjs
import { spawnSync } from 'node:child_process';

const MAX = 2 ** 30 - 1; // a small integer on every V8 (a larger bound deoptimizes the loop)
const SHAPES = {
  // The ring's consumer: a bare index into the array, and through a function (loadAcquire).
  loop: 'function spin(a, max) { let n = 0; while (a[0] === 0 && n < max) n++; return n; }',
  call: 'const load = (a, i) => a[i]; function spin(a, max) { let n = 0; while (load(a, 0) === 0 && n < max) n++; return n; }',
};
const TIERS = { natural: '', maglev: '%OptimizeMaglevOnNextCall(spin); spin(warm, 10000);', turbofan: '%OptimizeFunctionOnNextCall(spin); spin(warm, 10000);' };

function child(shape, tier) {
  return `
    const { Worker } = require('node:worker_threads');
    ${SHAPES[shape]}
    const warm = new Int32Array(new SharedArrayBuffer(64));
    %PrepareFunctionForOptimization(spin);
    for (let i = 0; i < 50; i++) spin(warm, 100000);
    ${TIERS[tier]}
    const a = new Int32Array(new SharedArrayBuffer(64));
    new Worker('const { workerData } = require("node:worker_threads"); setTimeout(() => { workerData[0] = 1; }, 100);', { eval: true, workerData: a });
    const t0 = Date.now();
    const n = spin(a, ${MAX});
    const ms = Math.max(1, Date.now() - t0);
    // Passes per microsecond tell optimized code (hundreds) from the interpreter's (tens).
    console.log(JSON.stringify({ hoisted: n === ${MAX}, sawStoreAfterMs: ms, passesPerUs: Math.round(n / ms / 1000) }));
    process.exit(0);`;
}

const rows = [];
for (const shape of Object.keys(SHAPES)) {
  for (const tier of Object.keys(TIERS)) {
    const r = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', child(shape, tier)], { encoding: 'utf8', timeout: 20_000 });
    const last = r.stdout.trim().split('\n').pop() ?? '';
    let row;
    if (/not enabled/.test(r.stdout + r.stderr)) row = { shape, tier, hoisted: null, note: `this V8 has no ${tier}` };
    else if (r.status !== 0 || !last.startsWith('{')) row = { shape, tier, hoisted: null, note: (r.stderr || r.stdout || String(r.error)).trim().split('\n').slice(0, 2).join(' ') };
    else row = { shape, tier, ...JSON.parse(last) };
    rows.push(row);
    console.log(JSON.stringify({ node: process.version, v8: process.versions.v8, ...row }));
  }
}
const hoisted = rows.filter((r) => r.hoisted === true);
const unknown = rows.filter((r) => r.hoisted === null && !/has no/.test(r.note));
console.log(`node ${process.version}: ${hoisted.length === 0 && unknown.length === 0 ? 'every optimized spin saw the other thread\'s store (no hoisting)' : `hoisted in ${hoisted.map((r) => `${r.shape}/${r.tier}`).join(', ') || 'none'}${unknown.length ? `; not measured: ${unknown.map((r) => `${r.shape}/${r.tier}`).join(', ')}` : ''}`}`);
