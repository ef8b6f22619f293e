// The shared-memory ring alone, in one thread (no other core involved): the
// cost of Ring.write and of draining a frame, for 8-byte messages with a
// 20-byte header (the eager send's frame), over 400 rounds of 10,000 frames
// after 200 rounds of warm-up:
//   node bench/ring-write.mjs [ring module]
// (the optional module, a compiled ring.ts of another commit, is for an A/B
// by alternate runs; the result varies by 1.5x from one run to the next here)
const { Ring } = await import(process.argv[2] ?? '../dist/rail/shared/ring.js');

const ring = new Ring(1 << 20);
const hdr = new Uint8Array(64);
for (let i = 0; i < 20; i++) hdr[i] = i;
const payload = new Uint8Array(8).fill(7);
let frames = 0;
const visit = () => { frames++; };
const B = 10000;
const write = () => { for (let i = 0; i < B; i++) ring.write(5, hdr, 20, payload); };
const drain = () => { while (ring.drain(visit, 1 << 20) > 0) { /* all */ } };
for (let r = 0; r < 200; r++) { write(); drain(); }
let tw = 0, td = 0;
for (let r = 0; r < 400; r++) {
  const t0 = performance.now(); write();
  const t1 = performance.now(); drain();
  tw += t1 - t0; td += performance.now() - t1;
}
console.log(JSON.stringify({ benchmark: 'ring-write', frames: 400 * B, writeNs: +(tw * 1e6 / (400 * B)).toFixed(1), drainNs: +(td * 1e6 / (400 * B)).toFixed(1) }));
