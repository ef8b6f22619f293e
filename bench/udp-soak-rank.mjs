// The rank program of bench/udp-soak.mjs: rank 0 streams MESSAGES messages of
// mixed sizes to rank 1, each stamped with its index and filled with a pattern
// of it; rank 1 checks that each arrives once, in order, with the right bytes.

import { init } from 'railcomm';

const comm = await init();
const N = Number(process.env.MESSAGES ?? 1000000);
const SIZES = [4, 8, 64, 512, 1400, 4096, 16384, 4, 8, 64, 700, 60000];
const WINDOW = 256;
const fillFor = (b, i) => { b.writeUInt32LE(i, 0); for (let k = 4; k < b.length; k++) b[k] = (i + k * 13) & 0xff; };
const t0 = performance.now();
if (comm.rank === 0) {
  const bufs = Array.from({ length: WINDOW }, (_, k) => Buffer.alloc(60000));
  for (let base = 0; base < N; base += WINDOW) {
    const reqs = [];
    for (let i = base; i < Math.min(N, base + WINDOW); i++) {
      const b = bufs[i - base].subarray(0, SIZES[i % SIZES.length]);
      fillFor(b, i);
      reqs.push(comm.isend(b, 1, 7));
    }
    for (const r of reqs) await r.wait();
  }
} else {
  let lost = 0, dup = 0, reordered = 0, corrupt = 0, expect = 0;
  const bufs = Array.from({ length: WINDOW }, () => Buffer.alloc(60000));
  for (let base = 0; base < N; base += WINDOW) {
    const n = Math.min(N, base + WINDOW) - base;
    const reqs = [];
    for (let k = 0; k < n; k++) reqs.push(comm.irecv(bufs[k], 0, 7));
    for (let k = 0; k < n; k++) {
      const st = await reqs[k].wait();
      const b = bufs[k];
      const i = b.readUInt32LE(0);
      if (i === expect) expect++;
      else if (i < expect) dup++;
      else { reordered++; lost += i - expect; expect = i + 1; }
      const size = SIZES[i % SIZES.length];
      if (st.bytes !== size) corrupt++;
      else for (let q = 4; q < size; q += q < 64 ? 1 : 61) if (b[q] !== ((i + q * 13) & 0xff)) { corrupt++; break; }
    }
  }
  const secs = (performance.now() - t0) / 1000;
  const udp = Object.entries(comm.stats().rails).find(([k]) => k.startsWith('udp'))?.[1] ?? {};
  console.log(`SOAK messages=${N} lost=${lost} duplicated=${dup} reordered=${reordered} corrupt=${corrupt} seconds=${secs.toFixed(1)} msgs_per_s=${Math.round(N / secs)}`);
  console.log(`SOAK receiver udp: ${JSON.stringify(udp)}`);
}
await comm.barrier();
if (comm.rank === 0) {
  const udp = Object.entries(comm.stats().rails).find(([k]) => k.startsWith('udp'))?.[1] ?? {};
  console.log(`SOAK sender udp: segsSent=${udp.segsSent} retransmits=${udp.retransmits} timeouts=${udp.timeouts} fastRetransmits=${udp.fastRetransmits} dupAcks=${udp.dupAcks} faultDrops=${udp.faultDrops} faultDups=${udp.faultDups} faultReorders=${udp.faultReorders} faultCorrupts=${udp.faultCorrupts}`);
}
await comm.finalize();
