// Sleep and wake under stress: a ping-pong where rank 1 pauses a random 0-60
// us (busy, and now and then an event-loop turn) before each reply, run with a
// tiny spin budget so that rank 0 goes to sleep on almost every message.
// Prints, per rank, round trips over 0.9 ms, the slowest, and the rail's
// lateWakes (sleeps its second look ended; src/rail/shared/poll.ts Sleeper).
// A lost wake-up would show as a hang; one caught by the second look as a
// round trip of about 1 ms.
//   node dist/cli/main.js run -n 2 --rails shm,self -x RAILCOMM_SPIN_US=2 bench/sleep-wake.mjs [round trips]
//   node dist/cli/main.js run -n 2 --threads -x RAILCOMM_SPIN_US=2 bench/sleep-wake.mjs [round trips]
import { init } from '../dist/index.js';
const comm = await init();
const b = new Uint8Array(8); const peer = 1 - comm.rank; const N = Number(process.argv[2] ?? 20000);
let seed = 12345 + comm.rank; const rnd = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff; };
const spinFor = (us) => { const t = performance.now() + us / 1000; while (performance.now() < t); };
let slow = 0, worst = 0;
for (let i = 0; i < N; i++) {
  const t0 = performance.now();
  if (comm.rank === 0) { await comm.send(b, peer); await comm.recv(b, peer); } else { await comm.recv(b, peer); spinFor(rnd() * 60); if (rnd() < 0.3) await new Promise((r) => setImmediate(r)); await comm.send(b, peer); }
  const dt = performance.now() - t0; if (dt > 0.9) slow++; if (dt > worst) worst = dt;
}
const s = comm.stats();
const rail = Object.keys(s.rails).find((k) => k === 'shm' || k === 'tbsm');
console.log(JSON.stringify({ rank: comm.rank, rail, slowOver0_9ms: slow, worstMs: +worst.toFixed(2), lateWakes: s.rails[rail].lateWakes }));
await comm.finalize();
