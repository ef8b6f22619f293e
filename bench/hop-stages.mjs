// Where an 8-byte hop between two ranks goes beyond the ring, measured inside
// one job (the machine's speed moves figures by up to 2x between jobs, so
// stages are compared in alternating phases of 20,000 round trips):
//   ring           the lane's own rings, bare: a frame with the eager header's
//                  length written, the other side spinning on its inbound ring
//   ring+await     the same with one `await null` after each write and read
//   public         comm.send / comm.recv, awaited
//   protocol       the protocol layer's own calls, no promise (p2p.sendNow,
//                  p2p.atCall.recvNow, then recvAtCall until the message is in)
//   +await         the same with one `await null` after each call
//   awaitAfterRecv the protocol with an await after each receive only (the
//                  one on the hop's critical path)
//   awaitAfterSend the protocol with an await after each send only
//   lean+await     a floor for the protocol: the receive written inline
//                  (peek the frame, check context, source and order, copy,
//                  take; no queue, failure or tag checks, no counters) and
//                  the send straight onto the lane, an await after each receive
//   apiRecv        awaited comm.recv, protocol send
//   apiSend        protocol receive + await, awaited comm.send
//   sync           comm.sendSync / comm.recvSync (no promise at all)
// HOP_STAGES=public,sync runs those stages alone.
// Prints the median half round trip (us) of each stage over 24 phases each.
//   node dist/cli/main.js run -n 2 --rails shm,self bench/hop-stages.mjs
//   node dist/cli/main.js run -n 2 --threads bench/hop-stages.mjs
// (RAILCOMM_NODE_FLAGS= runs it without the launcher's inlining flags.)
import { init } from '../dist/index.js';
import { median } from './lib/compare.mjs';
import { nextSeq } from '../dist/core/seq.js';
import { AM_EAGER, EAGER_HDR, EAGER_OVERHEAD, encodeMatchHeader } from '../dist/proto/wire.js';

const comm = await init();
const b = new Uint8Array(8);
const me = comm.rank;
const peer = 1 - me;
const ctx = comm.world.ctx;
const p2p = ctx.p2p;
const pc = comm.p2pCtx;
// One round trip binds the lane.
if (me === 0) { await comm.send(b, peer); await comm.recv(b, peer); } else { await comm.recv(b, peer); await comm.send(b, peer); }

const ep = ctx.endpointFor(peer);
const lane = ep.lane;
const out = lane.out;
const inbound = lane.inbound?.ring;
const polled = ctx.polledLane(peer);
if (out == null || inbound == null || polled === null) throw new Error(`needs a ring rail (got ${lane.rail.component})`);

function sendP() { if (!p2p.sendNow(b, peer, pc, me, 0)) throw new Error('the rail did not take the message at once'); }
function recvP() { let got = p2p.atCall.recvNow(b, pc, peer, -1); while (got === -1) got = p2p.atCall.recvAtCall(b, pc, peer, -1, polled, ctx.progress); }
// The bare ring stages use the rings under the protocol (frames it never sees, so its sequence is untouched).
const hdr = new Uint8Array(64);
const nothing = () => {};
const RING_AM = 9; // not a protocol id: these frames are drained, never delivered
function writeR() { while (!out.write(RING_AM, hdr, EAGER_HDR, b)) { /* full */ } }
function readR() { while (inbound.drain(nothing) === 0) { /* spin */ } }
// The lean stage's receive and send (protocol frames, so order and credits stay right).
const rxf = { buf: Buffer.alloc(0), view: new DataView(new ArrayBuffer(0)), hdrOff: 0, hdrLen: 0, payOff: 0, payLen: 0, placed: null, words: null };
const scratch = new Uint8Array(64), scratchView = new DataView(scratch.buffer);
function recvL() {
  while (polled.peek(rxf) < 0) { /* spin */ }
  const v = rxf.view, o = rxf.hdrOff;
  if (v.getUint32(o, true) !== pc || v.getUint32(o + 4, true) !== peer || v.getUint32(o + 12, true) !== ep.rx.expected) throw new Error('lean: not the next frame');
  ep.rx.expected = nextSeq(ep.rx.expected);
  ep.credits += v.getUint32(o + 16, true);
  ep.owed += rxf.payLen + EAGER_OVERHEAD;
  const d = rxf.buf, po = rxf.payOff;
  for (let k = 0; k < rxf.payLen; k++) b[k] = d[po + k];
  polled.takePeeked(rxf);
}
function sendL() {
  encodeMatchHeader(scratchView, pc, me, 0, ep.txSeq, ep.takeOwed());
  lane.sendCopy(AM_EAGER, scratch, EAGER_HDR, b);
  ep.txSeq = nextSeq(ep.txSeq);
  ep.credits -= b.length + EAGER_OVERHEAD;
}
const stages = {
  ring: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { writeR(); readR(); } else { readR(); writeR(); } } },
  'ring+await': async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { writeR(); await null; readR(); await null; } else { readR(); await null; writeR(); await null; } } },
  public: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { await comm.send(b, peer); await comm.recv(b, peer); } else { await comm.recv(b, peer); await comm.send(b, peer); } } },
  protocol: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { sendP(); recvP(); } else { recvP(); sendP(); } } },
  '+await': async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { sendP(); await null; recvP(); await null; } else { recvP(); await null; sendP(); await null; } } },
  awaitAfterRecv: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { sendP(); recvP(); await null; } else { recvP(); await null; sendP(); } } },
  awaitAfterSend: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { sendP(); await null; recvP(); } else { recvP(); sendP(); await null; } } },
  'lean+await': async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { sendL(); recvL(); await null; } else { recvL(); await null; sendL(); } } },
  apiRecv: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { sendP(); await comm.recv(b, peer); } else { await comm.recv(b, peer); sendP(); } } },
  apiSend: async (n) => { for (let i = 0; i < n; i++) { if (me === 0) { await comm.send(b, peer); recvP(); await null; } else { recvP(); await null; await comm.send(b, peer); } } },
  sync: async (n) => { syncHops(n); },
};
/** comm.sendSync / comm.recvSync (a function of its own, so V8 optimises it as a whole). */
function syncHops(n) { for (let i = 0; i < n; i++) { if (me === 0) { comm.sendSync(b, peer); comm.recvSync(b, peer); } else { comm.recvSync(b, peer); comm.sendSync(b, peer); } } }
const names = process.env.HOP_STAGES ? process.env.HOP_STAGES.split(',') : Object.keys(stages);
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
  console.log(JSON.stringify({ benchmark: 'hop-stages', rails: lane.rail.component, halfRoundTripUs: Object.fromEntries(names.map((n) => [n, +median(res[n]).toFixed(3)])) }));
}
await comm.finalize();
