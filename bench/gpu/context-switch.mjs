// Where an 8-byte device message's time goes with two processes on one GPU
// (bench RESULTS, "GPU (issue 16)"), in three parts:
//   copies:     rank 0 alone times 2000 driver copies of 8 B in a loop (pinned
//               staging buffer, as the staged path copies; and plain memory);
//   directions: an 8 B ping-pong with host or device arrays at either end;
//   uploads:    a host ping-pong of 8 B where, after each receive, each rank
//               uploads the 8 B to a device array (pinned or plain), or
//               downloads, or does nothing; then only rank 0 uploads.
// Measured on the lent H100: uploads that alternate between the two processes
// cost ~145 us each without MPS, 7-8 us with it; one process alone, nothing extra
// (raw: bench/results/gpu-device-pingpong-2026-11-26.txt).
// Run: node dist/cli/main.js run -n 2 bench/gpu/context-switch.mjs   (PARTS=copies,directions,uploads)
// Under MPS: nvidia-cuda-mps-control -d first (CUDA_MPS_PIPE_DIRECTORY where it listens).
import { init, cuda } from '../../dist/index.js';
import { staging } from '../../dist/cuda/staging.js';

const parts = (process.env.PARTS ?? 'copies,directions,uploads').split(',');
const comm = await init();
const peer = 1 - comm.rank;
const d = cuda.alloc(1, Float64Array), drv = d.live('probe');
const pinned = staging().acquire(8), plain = new Uint8Array(8), host = new Float64Array(1);
const us = (t0, n) => ((performance.now() - t0) * 1000 / n).toFixed(2);

if (parts.includes('copies') && comm.rank === 0) {
  const copies = { 'cudaDownload pinned': () => drv.cudaDownload(pinned, d.ptr), 'cudaUpload pinned': () => drv.cudaUpload(d.ptr, pinned),
    'd.download plain': () => d.download(host), 'd.upload plain': () => d.upload(host) };
  for (const [label, f] of Object.entries(copies)) {
    for (let r = 0; r < 2; r++) { const t0 = performance.now(); for (let i = 0; i < 2000; i++) f(); if (r === 1) console.log(label, us(t0, 2000), 'us a copy, one process'); }
  }
}

/** An 8 B ping-pong of sbuf/rbuf, after(i) run once a message is in; rank 0 prints the second round's half round trip. */
async function pingpong(label, sbuf, rbuf, after0, after1, n) {
  for (let b = 0; b < 2; b++) {
    await comm.barrier();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      if (comm.rank === 0) { await comm.send(sbuf, peer, 1); await comm.recv(rbuf, peer, 1); after0(); }
      else { await comm.recv(rbuf, peer, 1); after1(); await comm.send(sbuf, peer, 1); }
    }
    if (b === 1 && comm.rank === 0) console.log(label, us(t0, 2 * n), 'us per half round trip');
  }
}
const nothing = () => {};

if (parts.includes('directions')) {
  await pingpong('host->host', host, host, nothing, nothing, 2000);
  await pingpong('dev send, host recv', d, host, nothing, nothing, 2000);
  await pingpong('host send, dev recv', host, d, nothing, nothing, 2000);
  await pingpong('dev->dev', d, d, nothing, nothing, 2000);
}

if (parts.includes('uploads')) {
  const modes = { none: nothing, 'upload pinned': () => drv.cudaUpload(d.ptr, pinned), 'upload plain': () => drv.cudaUpload(d.ptr, plain),
    'download pinned': () => drv.cudaDownload(pinned, d.ptr), 'upload pinned + sync': () => { drv.cudaUpload(d.ptr, pinned); drv.cudaSynchronize(); } };
  for (const [label, f] of Object.entries(modes)) await pingpong(label, plain, pinned, f, f, 1000);
  await pingpong('upload pinned on rank 0 only', plain, pinned, modes['upload pinned'], nothing, 1000);
}
await comm.finalize();
