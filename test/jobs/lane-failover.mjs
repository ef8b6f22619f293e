// A stream of checksummed messages between 2 ranks over two lanes, one of
// which is cut in the middle (argv: message count, message bytes, the
// message after which rank 0 runs $LANE_CUT, and after which $LANE_HEAL).
// Every message must arrive once, in order, with the right bytes; rank 0
// prints the longest pause and the lanes' counters.
import { init } from '../../dist/index.js';
import { execSync } from 'node:child_process';

const [count, bytes, cutAt, healAt] = process.argv.slice(2).map(Number);
const comm = await init();
const buf = new Uint8Array(bytes);
const words = new Uint32Array(buf.buffer, 0, bytes >>> 2);
const sum = (w) => { let s = 0; for (let i = 1; i < w.length; i += 97) s = (s + w[i] * i) >>> 0; return s; };
let bad = 0;
let longest = 0;
let t = performance.now();
const t0 = t;
for (let i = 0; i < count; i++) {
  if (comm.rank === 0) {
    if (i === cutAt && process.env.LANE_CUT) execSync(process.env.LANE_CUT);
    if (i === healAt && process.env.LANE_HEAL) execSync(process.env.LANE_HEAL);
    for (let k = 1; k < words.length; k += 97) words[k] = (i * 2654435761 + k) >>> 0;
    words[0] = sum(words);
    await comm.send(buf, 1, i);
  } else {
    await comm.recv(buf, 0, i);
    if (words[0] !== sum(words)) bad++;
  }
  const now = performance.now();
  longest = Math.max(longest, now - t);
  t = now;
}
if (process.env.LANE_HEAL) {
  // A healed lane rejoins at its next retry (1 s after it failed, then 2, 4, ... s later), which a
  // fast stream may finish before: wait for it (at most 20 s), the ranks in railcomm meanwhile.
  const done = new Int32Array(1);
  const giveUp = Date.now() + 20_000;
  for (;;) {
    if (comm.rank === 0) {
      const lanes = comm.stats().peers['1']?.lanes ?? {};
      done[0] = Object.values(lanes).some((l) => l.rejoins > 0) || Date.now() > giveUp ? 1 : 0;
      await comm.send(done, 1, count);
    } else {
      await comm.recv(done, 0, count);
    }
    if (done[0] === 1) break;
    await new Promise((r) => setTimeout(r, 100));
  }
}
await comm.barrier();
const s = comm.stats().peers[String(1 - comm.rank)];
console.log(`RESULT rank ${comm.rank}: ${count} messages in ${Math.round(performance.now() - t0)} ms, ${bad} bad, longest pause ${Math.round(longest)} ms`);
console.log(`LANES ${JSON.stringify(s?.lanes ?? {})} resends ${s?.resends ?? 0} dups ${s?.duplicatesDropped ?? 0}`);
const f0 = performance.now();
await comm.finalize();
console.log(`FINALIZED in ${Math.round(performance.now() - f0)} ms`);
