// The udp rail's recovery tail under heavy loss: runs the conformance case
// "udp: simultaneous connects (and a lossy handshake)" (50 messages each way,
// then the same with drop=0.3 on each side) N times and prints each run's
// duration and the median (s).
//   node bench/udp-heavy-loss.mjs [runs = 20]
import { execFileSync } from 'node:child_process';
import { benchPath, median } from './lib/compare.mjs';

const runs = Number(process.argv[2] ?? 20);
const secs = [];
let failed = 0;
for (let i = 0; i < runs; i++) {
  let out;
  try {
    out = execFileSync(process.execPath, ['--test', '--test-name-pattern=udp: simultaneous connects', benchPath('../test/rails/udp-rail.test.mjs')], { encoding: 'utf8', timeout: 300_000 });
  } catch (e) { out = e.stdout ?? ''; failed++; }
  // A renamed case would match nothing and pass in no time: only a run of the one case counts.
  if (!/^# pass 1$/m.test(out)) { failed++; continue; }
  const m = /# duration_ms ([\d.]+)/.exec(out);
  if (m) secs.push(Number(m[1]) / 1000);
}
console.log(JSON.stringify({ benchmark: 'udp-heavy-loss', runs, failed, seconds: secs.map((s) => +s.toFixed(1)), median: +median(secs).toFixed(1), max: +Math.max(...secs).toFixed(1) }));
