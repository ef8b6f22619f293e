// The CPU cost of one 8-byte hop's code on one rank, with no other core in
// the loop: rank 1 steps aside after one round trip, and rank 0 plays it
// (writes rank 1's next eager frame into its own inbound ring, and consumes
// what it sent itself). Each iteration is one receive and one send through
// the stage's calls, plus the stand-in's ring write and drain, timed alone
// as the `ring` stage. Stages alternate in phases; prints median ns per
// iteration. Single-threaded, so `node --cpu-prof` on rank 0 profiles it.
//   ring      the stand-in's frame in and a frame out, through bare rings
//   peerWrite the stand-in's frame in alone; receive = it + p2p.atCall.recvNow/recvAtCall
//   send      p2p.sendNow + the stand-in's drain
//   awaits    two `await null`, nothing else
//   protocol  receive + send; +await: with an `await null` after each
//   public    await comm.recv + await comm.send
//   sync      comm.recvSync + comm.sendSync
// Also prints, per stage, the garbage collections during its timed phases
// and the heap's growth per hop (0 and 0: the stage allocates nothing).
// The stages' ratios hold across the machine's placements; their absolute
// values move by up to 2x from one job to the next.
//   node dist/cli/main.js run -n 2 --rails shm,self bench/hop-cpu.mjs
//   (HOP_CPU_STAGE=public: that stage alone; HOP_CPU_PHASES: phases per stage, 20;
//   HOP_CPU_CLOCK=cpu: this process's CPU time instead of the wall clock, for a shared machine)
import { PerformanceObserver } from 'node:perf_hooks';
import { init } from '../dist/index.js';
import { median } from './lib/compare.mjs';
import { Ring } from '../dist/rail/shared/ring.js';
import { AM_EAGER, EAGER_HDR, EAGER_OVERHEAD, encodeMatchHeader } from '../dist/proto/wire.js';

const comm = await init();
const b = new Uint8Array(8);
const me = comm.rank;
const peer = 1 - me;
if (comm.size !== 2 || process.env.RAILCOMM_THREADS !== undefined) throw new Error('runs on 2 process ranks (rank 1 waits for rank 0\'s pid to go)');
// One round trip binds the lane; rank 0's pid rides in it.
const pidBuf = new Float64Array(1);
if (me === 0) { pidBuf[0] = process.pid; await comm.send(pidBuf, peer); await comm.recv(b, peer); } else { await comm.recv(pidBuf, peer); await comm.send(b, peer); }
if (me === 1) {
  // Step aside: nothing outstanding, nothing polled, until rank 0 has finished
  // (its rings now say things this rank's view of them does not: no finalize here).
  const pid0 = pidBuf[0];
  const alive = () => { try { process.kill(pid0, 0); return true; } catch { return false; } };
  while (alive()) await new Promise((r) => setTimeout(r, 50));
  process.exit(0);
}
const ctx = comm.world.ctx;
const p2p = ctx.p2p;
const pc = comm.p2pCtx;
const ep = ctx.endpointFor(peer);
const lane = ep.lane;
const inbound = lane.inbound?.ring;
if (lane.out == null || inbound == null) throw new Error(`needs a ring rail (got ${lane.rail.component})`);
const fakeIn = new Ring(inbound.sab); // producer side of our inbound ring, in rank 1's place
const fakeOut = new Ring(lane.out.sab); // consumer side of our outbound ring
const hdr = new Uint8Array(64);
const hv = new DataView(hdr.buffer);
const nothing = () => {};
// The ring stage's own send: a ring of the same size in this thread's memory.
const own = new Ring(lane.out.capacity);
function peerSends() {
  encodeMatchHeader(hv, pc, peer, 0, ep.rx.expected, 8 + EAGER_OVERHEAD);
  if (!fakeIn.write(AM_EAGER, hdr, EAGER_HDR, b)) throw new Error('inbound ring full');
}
function peerTakes() { fakeOut.drain(nothing); }
function sendP() { if (!p2p.sendNow(b, peer, pc, me, 0)) throw new Error(`the rail did not take the message at once: credits ${ep.credits} pending ${ep.hasPending} failure ${ep.failure} eager ${ep.th.eager}`); }
const polled = ctx.polledLane(peer);
function recvP() { let got = p2p.atCall.recvNow(b, pc, peer, -1); while (got === -1) got = p2p.atCall.recvAtCall(b, pc, peer, -1, polled, ctx.progress); }
const stages = {
  // (The ring stage's frames bypass the protocol, so its sequence numbers stay as they were.)
  ring: async (n) => { for (let i = 0; i < n; i++) { peerSends(); inbound.drain(nothing); own.write(AM_EAGER, hdr, EAGER_HDR, b); own.drain(nothing); } },
  // The parts: the stand-in's write alone (a frame into our ring, drained at once),
  // its write + our receive, and our send + the stand-in's drain.
  peerWrite: async (n) => { for (let i = 0; i < n; i++) { peerSends(); inbound.drain(nothing); } },
  receive: async (n) => { for (let i = 0; i < n; i++) { peerSends(); recvP(); } },
  // (The stand-in's frames return the eager credit a send spends; alone, send returns it itself.)
  send: async (n) => { for (let i = 0; i < n; i++) { sendP(); peerTakes(); ep.credits += 8 + EAGER_OVERHEAD; } },
  awaits: async (n) => { for (let i = 0; i < n; i++) { await null; await null; } },
  protocol: async (n) => { for (let i = 0; i < n; i++) { peerSends(); recvP(); sendP(); peerTakes(); } },
  '+await': async (n) => { for (let i = 0; i < n; i++) { peerSends(); recvP(); await null; sendP(); await null; peerTakes(); } },
  public: async (n) => { for (let i = 0; i < n; i++) { peerSends(); await comm.recv(b, peer); await comm.send(b, peer); peerTakes(); } },
  // The synchronous calls: the same hop with no promise at all.
  sync: async (n) => { for (let i = 0; i < n; i++) { peerSends(); comm.recvSync(b, peer); comm.sendSync(b, peer); peerTakes(); } },
};
// Garbage collections and heap growth per stage (the stage allocates nothing per hop when both stay at 0).
// (Entries arrive a while after the collection ran: they are matched to the phases by their start time at the end.)
const gcCount = Object.fromEntries(Object.keys(stages).map((n) => [n, 0]));
const heapGrowth = Object.fromEntries(Object.keys(stages).map((n) => [n, 0]));
const gcStarts = [];
const windows = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) gcStarts.push(e.startTime); }).observe({ entryTypes: ['gc'] });
const only = process.env.HOP_CPU_STAGE;
const names = only ? [only] : Object.keys(stages);
const res = Object.fromEntries(names.map((n) => [n, []]));
const PHASE = 50000;
const PHASES = Number(process.env.HOP_CPU_PHASES ?? 20);
const cpuClock = process.env.HOP_CPU_CLOCK === 'cpu';
/** Now in ns: the wall clock, or this process's CPU time (user + system). */
const now = () => { if (!cpuClock) return performance.now() * 1e6; const u = process.cpuUsage(); return (u.user + u.system) * 1000; };
for (let k = 0; k < (PHASES + 4) * names.length; k++) {
  const name = names[k % names.length];
  const measured = k >= 4 * names.length;
  const h0 = process.memoryUsage().heapUsed;
  const w0 = performance.now();
  const t0 = now();
  await stages[name](PHASE);
  const dt = now() - t0;
  if (measured) { res[name].push(dt / PHASE); heapGrowth[name] += process.memoryUsage().heapUsed - h0; windows.push([name, w0, performance.now()]); }
}
await new Promise((r) => setTimeout(r, 100));
for (const g of gcStarts) for (const [name, a, z] of windows) if (g >= a && g <= z) gcCount[name]++;
console.log(JSON.stringify({ benchmark: 'hop-cpu', rails: lane.rail.component, nsPerIteration: Object.fromEntries(names.map((n) => [n, +median(res[n]).toFixed(1)])),
  gcs: Object.fromEntries(names.map((n) => [n, gcCount[n]])), heapGrowthBytesPerHop: Object.fromEntries(names.map((n) => [n, +(heapGrowth[n] / (PHASE * PHASES)).toFixed(2)])) }));
await comm.finalize();
