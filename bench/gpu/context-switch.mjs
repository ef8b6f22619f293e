// Two processes on one GPU: a host ping-pong of 8 B where, after each receive, each
// rank uploads the 8 B to a device array (from pinned or plain memory), or downloads,
// or does nothing; then only rank 0 uploads. Measured on the lent H100 (bench RESULTS,
// "GPU: two processes on one GPU"): uploads that alternate between the two processes
// cost ~145 us each without MPS, 7-8 us with it; one process alone, nothing extra.
// Run: node dist/cli/main.js run -n 2 bench/gpu/context-switch.mjs
import { init, cuda } from '../../dist/index.js';
import { staging } from '../../dist/cuda/staging.js';
const comm = await init();
const peer = 1 - comm.rank;
const d = cuda.alloc(1, Float64Array), drv = d.live('probe');
const pinned = staging().acquire(8), plain = new Uint8Array(8);
const modes = { none: () => {}, 'upload pinned': () => drv.cudaUpload(d.ptr, pinned), 'upload plain': () => drv.cudaUpload(d.ptr, plain),
  'download pinned': () => drv.cudaDownload(pinned, d.ptr), 'upload pinned + sync': () => { drv.cudaUpload(d.ptr, pinned); drv.cudaSynchronize(); } };
for (const [label, f] of Object.entries(modes)) {
  for (let b = 0; b < 2; b++) {
    await comm.barrier();
    const t0 = performance.now(), n = 1000;
    for (let i = 0; i < n; i++) {
      if (comm.rank === 0) { await comm.send(plain, peer, 1); await comm.recv(pinned, peer, 1); f(); }
      else { await comm.recv(pinned, peer, 1); f(); await comm.send(plain, peer, 1); }
    }
    if (b === 1 && comm.rank === 0) console.log(label, ((performance.now() - t0) * 1000 / n / 2).toFixed(2), 'us per half round trip');
  }
}
// Only rank 0 uploads, rank 1 plain host.
for (let b = 0; b < 2; b++) {
  await comm.barrier();
  const t0 = performance.now(), n = 1000;
  for (let i = 0; i < n; i++) {
    if (comm.rank === 0) { await comm.send(plain, peer, 1); await comm.recv(pinned, peer, 1); drv.cudaUpload(d.ptr, pinned); }
    else { await comm.recv(pinned, peer, 1); await comm.send(plain, peer, 1); }
  }
  if (b === 1 && comm.rank === 0) console.log('upload pinned on rank 0 only', ((performance.now() - t0) * 1000 / n / 2).toFixed(2), 'us');
}
await comm.finalize();
