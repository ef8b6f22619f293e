// Baselines for the udp rail: what Node's own dgram sockets do here, with no
// library. `pingpong`: 8 B (or --size) ping-pong half round trip between two
// processes, sleeping in epoll as Node does. `intake`: one receiver process
// counts what it takes in while a sender process sends datagrams of --size as
// fast as it can (unpaced: the kernel drops what the receiver cannot take).
//   node bench/raw-udp.mjs pingpong [--size 8] [--iters 5000] [--json]
//   node bench/raw-udp.mjs intake [--size 60000] [--seconds 2] [--json]

import dgram from 'node:dgram';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const mode = args[0];
const size = Number(opt('--size', mode === 'intake' ? '60000' : '8'));
const json = args.includes('--json');
const me = fileURLToPath(import.meta.url);
const BUF = 4 << 20;
const sock = () => dgram.createSocket({ type: 'udp4', recvBufferSize: BUF, sendBufferSize: BUF });
const bound = (s) => new Promise((r) => s.bind(0, '127.0.0.1', () => r(s.address().port)));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };

if (args.includes('--child')) {
  // The other process: echo (pingpong) or count (intake), reporting over IPC.
  const s = sock();
  const port = await bound(s);
  if (mode === 'pingpong') {
    s.on('message', (m, r) => s.send(m, r.port, r.address));
    process.send({ port });
    process.on('message', () => { s.close(); process.exit(0); });
  } else {
    let n = 0, bytes = 0, t0 = 0, t1 = 0;
    s.on('message', (m) => { t1 = performance.now(); if (n++ === 0) t0 = t1; bytes += m.length; });
    process.send({ port });
    process.on('message', () => {
      const secs = (t1 - t0) / 1000;
      process.send({ datagrams: n, bytes, secs });
      s.close();
      process.exit(0);
    });
  }
} else {
  const child = fork(me, [mode, '--child', '--size', String(size)]);
  const { port } = await new Promise((r) => child.once('message', r));
  const s = sock();
  await bound(s);
  const msg = Buffer.alloc(size, 7);
  let out;
  if (mode === 'pingpong') {
    const iters = Number(opt('--iters', '5000'));
    const times = [];
    let resolve;
    s.on('message', () => resolve());
    for (let i = 0; i < iters + 200; i++) {
      const t = performance.now();
      await new Promise((r) => { resolve = r; s.send(msg, port, '127.0.0.1'); });
      if (i >= 200) times.push(((performance.now() - t) * 1000) / 2);
    }
    out = { bench: 'raw-udp-pingpong', size, iters, usec_median: median(times), usec_avg: times.reduce((a, b) => a + b, 0) / iters };
  } else {
    const seconds = Number(opt('--seconds', '2'));
    const end = performance.now() + seconds * 1000;
    let sent = 0;
    // Send in bursts, yielding so that libuv flushes its queue.
    await new Promise((done) => {
      const burst = () => {
        for (let i = 0; i < 64; i++) { s.send(msg, port, '127.0.0.1'); sent++; }
        if (performance.now() < end) setImmediate(burst); else done();
      };
      burst();
    });
    await new Promise((r) => setTimeout(r, 200));
    child.send('report');
    const got = await new Promise((r) => child.once('message', r));
    out = { bench: 'raw-udp-intake', size, sent, received: got.datagrams, lossPct: 100 * (1 - got.datagrams / sent),
      datagramsPerSec: got.datagrams / got.secs, mbps: got.bytes / got.secs / 1e6 };
  }
  child.send('stop');
  s.close();
  if (json) console.log(JSON.stringify(out));
  else console.log(Object.entries(out).map(([k, v]) => `${k}=${typeof v === 'number' ? +v.toFixed(2) : v}`).join(' '));
}
