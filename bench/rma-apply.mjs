// One-sided arithmetic applied to memory, in one thread (no other rank): an
// accumulate of 1 MiB of doubles into private memory (as a target applies an
// emulated accumulate), of one double and one int32 into shared memory (as
// a mapped accumulate does, from bytes and from the caller's typed array),
// and finding an operand's element type, each the
// median of 7 rounds after warm-up:
//   node bench/rma-apply.mjs [apply module]
// (the optional module, a compiled src/proto/rma/apply.ts of another commit,
// is for an A/B by alternate runs; an older one may lack typeOfArray's speed
// but has the same functions)
const a = await import(process.argv[2] ?? '../dist/proto/rma/apply.js');
import { median } from './lib/compare.mjs';

const n = 131072; // 1 MiB of doubles
const privateRegion = new Uint8Array(n * 8);
const operand = new Uint8Array(new Float64Array(n).fill(1.5).buffer);
const shared = new Uint8Array(new SharedArrayBuffer(4096));
const oneDouble = new Uint8Array(new Float64Array([1.5]).buffer);
const oneInt = new Uint8Array(new Int32Array([3]).buffer);
const ints = new Uint8Array(4096);
const oneF64 = new Float64Array([1.5]);
const oneI32 = new Int32Array([3]);

function time(reps, f) {
  const out = [];
  for (let r = 0; r < 10; r++) {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) f();
    if (r >= 3) out.push(((performance.now() - t0) * 1e6) / reps);
  }
  return +median(out).toFixed(1);
}
// Other element types first, as a job would see them (a loop shared by every type goes megamorphic).
for (let k = 0; k < 5; k++) { a.applyAccumulate(ints, 0, oneInt, a.T_I32, a.OP_SUM); a.applyAccumulate(privateRegion, 0, operand, a.T_F64, a.OP_MAX); }
const views = [new Float64Array(1), new Int32Array(1), Buffer.alloc(1)];
let sink = 0;
console.log(JSON.stringify({
  benchmark: 'rma-apply',
  accumulate1MiBDoublesPrivateUs: +(time(20, () => a.applyAccumulate(privateRegion, 0, operand, a.T_F64, a.OP_SUM)) / 1000).toFixed(1),
  accumulateOneDoubleSharedNs: time(1e5, () => a.applyAccumulate(shared, 64, oneDouble, a.T_F64, a.OP_SUM)),
  accumulateOneInt32SharedNs: time(1e5, () => a.applyAccumulate(shared, 128, oneInt, a.T_I32, a.OP_SUM)),
  // The mapped path with the caller's own typed array as the operand (absent before it existed).
  ...(a.accumulateElements === undefined ? {} : {
    accumulateOneDoubleElementsSharedNs: time(1e5, () => a.accumulateElements(shared, 64, oneF64, a.T_F64, a.OP_SUM)),
    accumulateOneInt32ElementsSharedNs: time(1e5, () => a.accumulateElements(shared, 128, oneI32, a.T_I32, a.OP_SUM)),
  }),
  typeOfArrayNs: time(1e6, () => { sink += a.typeOfArray(views[sink & 1]); }),
}));
