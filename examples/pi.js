// Estimate pi as the integral of 4 / (1 + x^2) over [0, 1] by the midpoint
// rule: each rank sums its share of the intervals, a reduce adds them up.
//   npx railcomm run -n 4 examples/pi.js [intervals]
import { init } from 'railcomm';

const comm = await init();
const n = Number(process.argv[2] ?? 10_000_000);
const h = 1 / n;
let local = 0;
for (let i = comm.rank; i < n; i += comm.size) {
  const x = h * (i + 0.5);
  local += 4 / (1 + x * x);
}
const total = new Float64Array(1);
await comm.reduce(new Float64Array([local * h]), comm.rank === 0 ? total : null, 'sum', 0);
if (comm.rank === 0) {
  console.log(`pi ~ ${total[0].toFixed(12)} with ${n} intervals on ${comm.size} ranks (error ${Math.abs(total[0] - Math.PI).toExponential(2)})`);
}
await comm.finalize();
