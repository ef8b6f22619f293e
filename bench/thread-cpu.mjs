// Where a process's CPU goes while its thread ranks wait idle: every rank
// but 0 waits in recv while rank 0 sleeps 2 s; rank 1 reads each thread's
// CPU ticks from /proc/self/task/*/stat before and after its wait and prints
// them summed by thread name (10 ms ticks), beside process.cpuUsage() (the
// whole process's). A barrier first, unless NO_BARRIER=1 (then the window
// also counts the other threads still starting):
//   node dist/cli/main.js run -n 16 --threads bench/thread-cpu.mjs [reps]
import { readdirSync, readFileSync } from 'node:fs';
import { init } from '../dist/index.js';

const comm = await init();
const { rank, size } = comm;
const reps = Number(process.argv[2] ?? 3);

/** CPU ticks (user + system) of each thread of this process, by thread id: [name, ticks]. */
function threads() {
  const m = new Map();
  for (const t of readdirSync('/proc/self/task')) {
    try {
      const st = readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      m.set(t, [readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim(), Number(f[11]) + Number(f[12])]);
    } catch { /* a thread that just exited */ }
  }
  return m;
}

for (let rep = 0; rep < reps; rep++) {
  if (process.env.NO_BARRIER !== '1' || rep > 0) await comm.barrier();
  if (rank === 0) {
    await new Promise((r) => setTimeout(r, 2000));
    for (let d = 1; d < size; d++) await comm.send(new Uint8Array(8), d, 11);
    continue;
  }
  const before = rank === 1 ? threads() : null;
  const c0 = process.cpuUsage();
  await comm.recv(new Uint8Array(8), 0, 11);
  const c = process.cpuUsage(c0);
  if (rank !== 1) continue;
  const by = new Map();
  for (const [t, [name, ticks]] of threads()) {
    const d = ticks - (before.get(t)?.[1] ?? 0);
    if (d > 0) by.set(name, (by.get(name) ?? 0) + d * 10);
  }
  const list = [...by].sort((x, y) => y[1] - x[1]).map(([n, ms]) => `${n}=${ms}`).join(', ');
  console.log(`RESULT rep ${rep}: process ${((c.user + c.system) / 1000).toFixed(1)} ms over the wait; by thread (ms): ${list || 'none'}`);
}
await comm.finalize();
