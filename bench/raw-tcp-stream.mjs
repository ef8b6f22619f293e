// Baseline: raw Node.js TCP streaming bandwidth between two processes (osu_bw style).
// Rank 0 writes windows of 64 messages, rank 1 (reading with `onread` into a reused 4 MiB
// buffer) acks each window with 4 bytes. Usage: node bench/raw-tcp-stream.mjs [--sizes 8,1048576] [--json]
import net from 'node:net';
import { startPeer } from './raw-peer.mjs';
import { fileURLToPath } from 'node:url';

const DEFAULT_SIZES = [8, 1024, 65536, 1048576, 4194304];
const ACK_BYTES = 4;

function parseArgs(argv) {
  const opts = { sizes: DEFAULT_SIZES, json: false, iters: undefined, warmup: undefined, window: 64, child: undefined };
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
    else if (a === '--window') opts.window = Number(next());
    else if (a === '--child') opts.child = Number(next());
    else if (a === '-h' || a === '--help') {
      console.log('usage: node bench/raw-tcp-stream.mjs [--sizes 8,1048576] [--window 64] [--iters N] [--warmup N] [--json]');
      process.exit(0);
    } else throw new Error(`unknown argument: ${a}`);
  }
  if (opts.sizes.includes(0)) {
    console.error('raw-tcp-stream: skipping size 0 (a TCP stream cannot carry empty messages)');
    opts.sizes = opts.sizes.filter((s) => s > 0);
  }
  if (opts.sizes.length === 0) throw new Error('no sizes');
  return opts;
}

function parseSize(s) {
  const m = /^(\d+)([kKmM]?)$/.exec(s.trim());
  if (!m) throw new Error(`bad size: ${s}`);
  return Number(m[1]) * (m[2] === '' ? 1 : /k/i.test(m[2]) ? 1024 : 1048576);
}

// Number of windows; same schedule as `pingpong bw` in bench/mpi/pingpong.c.
function schedule(size, opts) {
  let warmup, iters;
  if (size <= 8192) [warmup, iters] = [10, 100];
  else if (size < 1048576) [warmup, iters] = [2, 20];
  else [warmup, iters] = [2, 10];
  return { warmup: opts.warmup ?? warmup, iters: opts.iters ?? iters };
}

// ---------------------------------------------------------------- rank 1: receiver
// net.connect is used on this side because only client sockets accept `onread`.
function runChild(port) {
  const recvBuf = Buffer.allocUnsafe(4 * 1048576);
  const ack = Buffer.alloc(ACK_BYTES, 0x61);
  let windowBytes = Infinity; // bytes per window in the current phase
  let got = 0;
  const sock = net.connect({
    port,
    host: '127.0.0.1',
    noDelay: true,
    onread: {
      buffer: recvBuf,
      callback: (nread) => {
        got += nread;
        // Sender waits for the ack before the next window, so we never see a partial next window here.
        if (got === windowBytes) {
          got = 0;
          sock.write(ack);
        } else if (got > windowBytes) {
          console.error(`framing error: got ${got} bytes, window is ${windowBytes}`);
          process.exit(1);
        }
      },
    },
  });
  sock.setNoDelay(true);
  sock.on('error', (e) => { console.error('child socket error:', e); process.exit(1); });
  sock.on('connect', () => process.send({ cmd: 'connected' }));
  process.on('message', (msg) => {
    if (msg.cmd === 'size') {
      windowBytes = msg.size * msg.window;
      got = 0;
      process.send({ cmd: 'ready' });
    } else if (msg.cmd === 'exit') {
      sock.destroy();
      process.exit(0);
    }
  });
}

// ---------------------------------------------------------------- rank 0: sender
// Runs warmup + iters windows; resolves with the time (ns) of the timed windows.
function stream(sock, msg, window, warmup, iters) {
  return new Promise((resolve, reject) => {
    let i = 0;
    let acked = 0;
    let tStart = 0n;
    const sendWindow = () => {
      // osu_bw posts a whole window without waiting; Node queues what the kernel won't take yet.
      for (let k = 0; k < window; k++) sock.write(msg);
    };
    const onData = (chunk) => {
      acked += chunk.length;
      if (acked < ACK_BYTES) return;
      if (acked > ACK_BYTES) {
        sock.off('data', onData);
        return reject(new Error(`unexpected ${acked} ack bytes`));
      }
      acked = 0;
      i++;
      if (i === warmup) tStart = process.hrtime.bigint();
      if (i === warmup + iters) {
        sock.off('data', onData);
        return resolve(Number(process.hrtime.bigint() - tStart));
      }
      sendWindow();
    };
    sock.on('data', onData);
    tStart = process.hrtime.bigint();
    sendWindow();
  });
}

async function runParent(opts) {
  const { sock, child, nextMsg } = await startPeer(fileURLToPath(import.meta.url), opts);

  const sendBuf = Buffer.alloc(Math.max(...opts.sizes), 0xa5);
  const results = [];
  for (const size of opts.sizes) {
    const { warmup, iters } = schedule(size, opts);
    child.send({ cmd: 'size', size, window: opts.window });
    await nextMsg(); // 'ready'
    const ns = await stream(sock, sendBuf.subarray(0, size), opts.window, warmup, iters);
    const bytes = size * opts.window * iters;
    results.push({ size, mbps: Math.round((bytes / (ns / 1e9) / 1e6) * 100) / 100, windows: iters });
  }

  child.send({ cmd: 'exit' });
  sock.destroy();

  if (opts.json) {
    console.log(JSON.stringify({ benchmark: 'bw', rails: 'raw-node-tcp', ranks: 2, results }));
  } else {
    console.log(`# raw Node TCP stream bandwidth, 2 processes, 127.0.0.1, window ${opts.window}, receiver onread 4 MiB buffer`);
    console.log(`# ${'size'.padStart(10)} ${'MB/s'.padStart(12)} ${'windows'.padStart(8)}`);
    for (const r of results) {
      console.log(`  ${String(r.size).padStart(10)} ${r.mbps.toFixed(2).padStart(12)} ${String(r.windows).padStart(8)}`);
    }
  }
}

const opts = parseArgs(process.argv.slice(2));
// --spin: keep the event loop polling instead of sleeping in epoll (a setImmediate
// chain), as railcomm's progress engine does while requests are outstanding.
if (opts.spin) { const spin = () => setImmediate(spin); spin(); }
if (opts.child !== undefined) runChild(opts.child);
else { await runParent(opts); if (opts.spin) process.exit(0); }
