// Plain Node, no railcomm: does terminating a worker while datagrams arrive on
// its dgram socket abort the process? A railcomm job once aborted in
// UDPWrap::OnRecv (v8::FromJust) when the thread host terminated a thread rank
// whose udp rail was receiving. Each try starts a worker that binds a socket,
// floods it from the main thread (64 datagrams of 1 KiB per turn), terminates
// it 2-8 ms in, and goes on; the worker's handler spins 50 us per datagram so
// that termination lands inside JavaScript with more datagrams queued.
//   node bench/worker-udp-terminate.mjs [tries, 200]   (prints ok, or the process aborts)
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import dgram from 'node:dgram';
if (isMainThread) {
  const tries = Number(process.argv[2] ?? 200);
  const tx = dgram.createSocket('udp4');
  await new Promise((r) => tx.bind(0, '127.0.0.1', r));
  const payload = Buffer.alloc(1024);
  for (let i = 0; i < tries; i++) {
    const w = new Worker(new URL(import.meta.url));
    const port = await new Promise((r) => w.once('message', r));
    // flood the worker's socket from this thread for a few ms, then terminate it mid-flood
    let stop = false;
    const flood = () => { if (stop) return; for (let k = 0; k < 64; k++) tx.send(payload, port, '127.0.0.1'); setImmediate(flood); };
    flood();
    await new Promise((r) => setTimeout(r, 2 + (i % 7)));
    await w.terminate();
    stop = true;
  }
  tx.close();
  console.log(`ok: ${tries} workers terminated while receiving, node ${process.version}`);
} else {
  const s = dgram.createSocket('udp4');
  let n = 0;
  s.on('message', (m, rinfo) => { n += m.length + rinfo.port * 0; const t = performance.now(); while (performance.now() - t < 0.05) {} });
  s.bind(0, '127.0.0.1', () => parentPort.postMessage(s.address().port));
}
