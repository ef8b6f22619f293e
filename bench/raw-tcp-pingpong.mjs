// Baseline: raw Node.js TCP ping-pong latency between two processes (osu_latency style).
// This is the floor railcomm's TCP rail is compared against: no framing headers, no library,
// just net sockets with TCP_NODELAY over 127.0.0.1. Usage: node bench/raw-tcp-pingpong.mjs [--sizes 8,1048576] [--json]
import net from 'node:net';
import { startPeer } from './raw-peer.mjs';
import { fileURLToPath } from 'node:url';

const DEFAULT_SIZES = [0, 8, 64, 512, 4096, 65536, 1048576, 4194304];

function parseArgs(argv) {
  const opts = { sizes: DEFAULT_SIZES, json: false, iters: undefined, warmup: undefined, child: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--sizes') opts.sizes = next().split(',').filter(Boolean).map((s) => parseSize(s));
    else if (a === '--json') opts.json = true;
    else if (a === '--spin') opts.spin = true;
    else if (a === '--iters') opts.iters = Number(next());
    else if (a === '--warmup') opts.warmup = Number(next());
    else if (a === '--child') opts.child = Number(next());
    else if (a === '-h' || a === '--help') {
      console.log('usage: node bench/raw-tcp-pingpong.mjs [--sizes 0,8,1048576] [--iters N] [--warmup N] [--json]');
      process.exit(0);
    } else throw new Error(`unknown argument: ${a}`);
  }
  return opts;
}

function parseSize(s) {
  const m = /^(\d+)([kKmM]?)$/.exec(s.trim());
  if (!m) throw new Error(`bad size: ${s}`);
  return Number(m[1]) * (m[2] === '' ? 1 : /k/i.test(m[2]) ? 1024 : 1048576);
}

// Same schedule as bench/mpi/pingpong.c so the two baselines are directly comparable.
function schedule(size, opts) {
  let warmup, iters;
  if (size <= 8192) [warmup, iters] = [200, 2000];
  else if (size < 1048576) [warmup, iters] = [20, 200];
  else [warmup, iters] = [5, 50];
  return { warmup: opts.warmup ?? warmup, iters: opts.iters ?? iters };
}

// TCP cannot carry an empty message, so "size 0" is a 1-byte token on the wire.
const wireBytes = (size) => Math.max(size, 1);

// ---------------------------------------------------------------- rank 1: echo
function runChild(port) {
  const maxSize = 4194304;
  let sendBuf = Buffer.alloc(maxSize, 0x5a);
  let expect = 0; // bytes per message in the current phase
  let got = 0;
  const sock = net.connect({ port, host: '127.0.0.1', noDelay: true });
  sock.setNoDelay(true);
  sock.on('data', (chunk) => {
    got += chunk.length;
    // Framing: reply only once exactly `expect` bytes have arrived. Rank 0 never sends
    // the next message before it has our reply, so `got` can never overshoot.
    if (got === expect) {
      got = 0;
      sock.write(expect <= sendBuf.length ? sendBuf.subarray(0, expect) : Buffer.alloc(expect, 0x5a));
    } else if (got > expect) {
      throw new Error(`framing error: got ${got} bytes, expected ${expect}`);
    }
  });
  sock.on('error', (e) => { console.error('child socket error:', e); process.exit(1); });
  process.on('message', (msg) => {
    if (msg.cmd === 'size') {
      expect = wireBytes(msg.size);
      got = 0;
      if (expect > sendBuf.length) sendBuf = Buffer.alloc(expect, 0x5a);
      process.send({ cmd: 'ready' });
    } else if (msg.cmd === 'exit') {
      sock.destroy();
      process.exit(0);
    }
  });
  sock.on('connect', () => process.send({ cmd: 'connected' }));
}

// Send `msg`, wait for exactly msg.length bytes back; repeat warmup + iters times.
// Returns per-iteration round-trip times and the total over the timed iterations (ns).
function pingpong(sock, msg, warmup, iters) {
  const bytes = msg.length;
  const times = new Float64Array(iters);
  return new Promise((resolve, reject) => {
    let i = 0;
    let got = 0;
    let t0 = 0n;
    let tStart = 0n;
    const onData = (chunk) => {
      got += chunk.length;
      if (got < bytes) return;
      if (got > bytes) {
        sock.off('data', onData);
        return reject(new Error(`framing error: got ${got}, expected ${bytes}`));
      }
      got = 0;
      const now = process.hrtime.bigint();
      if (i >= warmup) times[i - warmup] = Number(now - t0);
      i++;
      if (i === warmup) tStart = now;
      if (i === warmup + iters) {
        sock.off('data', onData);
        return resolve({ times, total: Number(now - tStart) });
      }
      t0 = process.hrtime.bigint();
      sock.write(msg);
    };
    sock.on('data', onData);
    t0 = tStart = process.hrtime.bigint();
    sock.write(msg);
  });
}

// ---------------------------------------------------------------- rank 0: timer
async function runParent(opts) {
  const { sock, child, nextMsg } = await startPeer(fileURLToPath(import.meta.url), opts);

  const maxSize = Math.max(...opts.sizes.map(wireBytes));
  const sendBuf = Buffer.alloc(maxSize, 0xa5);
  const results = [];

  for (const size of opts.sizes) {
    const bytes = wireBytes(size);
    const { warmup, iters } = schedule(size, opts);
    child.send({ cmd: 'size', size });
    await nextMsg(); // 'ready'

    const { times, total } = await pingpong(sock, sendBuf.subarray(0, bytes), warmup, iters);
    const sorted = Array.from(times).sort((a, b) => a - b);
    results.push({
      size,
      usec: round(total / iters / 2 / 1000), // osu_latency convention: total / iters / 2
      usec_median: round(sorted[Math.floor(sorted.length / 2)] / 2 / 1000),
      iters,
    });
  }

  child.send({ cmd: 'exit' });
  sock.destroy();

  if (opts.json) {
    console.log(JSON.stringify({ benchmark: 'latency', rails: 'raw-node-tcp', ranks: 2, results }));
  } else {
    console.log('# raw Node TCP ping-pong, 2 processes, 127.0.0.1, TCP_NODELAY (half round trip)');
    console.log(`# ${'size'.padStart(10)} ${'avg us'.padStart(12)} ${'median us'.padStart(12)} ${'iters'.padStart(8)}`);
    for (const r of results) {
      console.log(`  ${String(r.size).padStart(10)} ${r.usec.toFixed(2).padStart(12)} ${r.usec_median.toFixed(2).padStart(12)} ${String(r.iters).padStart(8)}`);
    }
  }
}

const round = (x) => Math.round(x * 100) / 100;

const opts = parseArgs(process.argv.slice(2));
// --spin: keep the event loop polling instead of sleeping in epoll (a setImmediate
// chain), as railcomm's progress engine does while requests are outstanding.
if (opts.spin) { const spin = () => setImmediate(spin); spin(); }
if (opts.child !== undefined) runChild(opts.child);
else { await runParent(opts); if (opts.spin) process.exit(0); }
