// The floor issue 4 compares against: an 8-byte ping-pong between two worker
// threads through a MessagePort (Node's own way for threads to talk), median
// half round trip in microseconds.
//   node bench/raw-messageport.mjs [bytes] [iterations]
import { Worker, isMainThread, parentPort, workerData, MessageChannel } from 'node:worker_threads';

if (isMainThread) {
  const size = Number(process.argv[2] ?? 8);
  const iters = Number(process.argv[3] ?? 20000);
  const { port1, port2 } = new MessageChannel();
  const a = new Worker(new URL(import.meta.url), { workerData: { port: port1, first: true, size, iters }, transferList: [port1] });
  const b = new Worker(new URL(import.meta.url), { workerData: { port: port2, first: false, size, iters }, transferList: [port2] });
  const [res] = await Promise.all([new Promise((r) => a.once('message', r)), new Promise((r) => b.once('exit', r))]);
  console.log(JSON.stringify({ benchmark: 'messageport-pingpong', size, ...res }));
  await a.terminate();
} else {
  const { port, first, size, iters } = workerData;
  const buf = new Uint8Array(size);
  const next = () => new Promise((resolve) => port.once('message', resolve));
  const t = new Float64Array(iters);
  for (let i = 0; i < 2 * iters; i++) {
    const t0 = performance.now();
    if (first) { port.postMessage(buf); await next(); } else { await next(); port.postMessage(buf); }
    if (i >= iters) t[i - iters] = (performance.now() - t0) * 500;
  }
  port.close();
  if (first) {
    t.sort();
    parentPort.postMessage({ median: +t[iters >> 1].toFixed(2), p90: +t[Math.floor(iters * 0.9)].toFixed(2) });
  }
}
