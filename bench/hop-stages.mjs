// Where an 8-byte hop between two ranks goes beyond the ring, measured inside
// one job (the machine's vCPU placement moves figures by up to 2x between
// jobs, so stages are compared in alternating phases of 20,000 round trips):
//   ring     the lane's own rings, bare: a frame with the eager header's
//            length written, the other side spinning on its inbound ring
//   +await   (ring) the same with one `await null` after each write and read
//   public   comm.send / comm.recv, awaited
//   protocol the protocol layer's own calls, no promise (p2p.sendNow,
//            p2p.recvNow, then p2p.recvAtCall until the message is in)
//   +await   the same with one `await null` after each call
// Prints the median half round trip (us) of each stage over 24 phases each.
//   node dist/cli/main.js run -n 2 --rails shm,self bench/hop-stages.mjs
//   node dist/cli/main.js run -n 2 --threads bench/hop-stages.mjs
import { init } from '../dist/index.js';
import { median } from './lib/compare.mjs';

const comm = await init();
const b = new Uint8Array(8);
const me = comm.rank;
const peer = 1 - me;
const ctx = comm.world.ctx;
const p2p = ctx.p2p;
const pc = comm.p2pCtx;
// One round trip binds the lane.
if (me === 0) { await comm.send(b, peer); await comm.recv(b, peer); } else { await comm.recv(b, peer); await comm.send(b, peer); }

function sendP() { if (!p2p.sendNow(b, peer, pc, me, 0)) throw new Error('the rail did not take the message at once'); }
const polled = ctx.polledLane(peer);
function recvP() { let got = p2p.recvNow(b, pc, peer, -1); while (got === -1) got = p2p.recvAtCall(b, pc, peer, -1, polled, ctx.progress); }
// The bare ring stages use the rings under the protocol (frames it never sees, so its sequence is untouched).
const lane = ctx.endpointFor(peer).lane;
const out = lane.out;
const inbound = lane.inbound?.ring;
const hdr = new Uint8Array(64);
const nothing = () => {};
function writeR() { while (!out.write(9, hdr, 20, b)) { /* full */ } }
function readR() { while (inbound.drain(nothing) === 0) { /* spin */ } }
const stages = {
  ring: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { writeR(); readR(); } else { readR(); writeR(); } } },
  'ring+await': async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { writeR(); await null; readR(); await null; } else { readR(); await null; writeR(); await null; } } },
  public: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { await comm.send(b, peer); await comm.recv(b, peer); } else { await comm.recv(b, peer); await comm.send(b, peer); } } },
  protocol: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { sendP(); recvP(); } else { recvP(); sendP(); } } },
  '+await': async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { sendP(); await null; recvP(); await null; } else { recvP(); await null; sendP(); await null; } } },
};
const names = Object.keys(stages);
const res = Object.fromEntries(names.map((n) => [n, []]));
const PHASE = 20000;
for (let k = 0; k < 30 * names.length; k++) {
  const name = names[k % names.length];
  const t0 = performance.now();
  await stages[name](PHASE);
  // The first six phases of each stage are warm-up.
  if (k >= 6 * names.length) res[name].push(((performance.now() - t0) * 1000) / PHASE / 2);
}
if (me === 0) {
  console.log(JSON.stringify({ benchmark: 'hop-stages', rails: lane?.rail.component, halfRoundTripUs: Object.fromEntries(names.map((n) => [n, +median(res[n]).toFixed(3)])) }));
}
await comm.finalize();
