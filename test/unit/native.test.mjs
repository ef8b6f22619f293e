// The native addon (native/): shared-memory segments, the futex doorbell
// across processes, CMA reads, CRC32C, and the collectives' reductions and
// copies. Skipped, saying why, when the addon did not build (under CI=true,
// failed: helpers/requires.mjs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomFillSync } from 'node:crypto';
import { loadNative, nativeOrigin, nativeDir, resolveBinary, removeJobSegments, shmJobPrefix, TYPE_CODES, OP_CODES } from '../../dist/native/addon.js';
import { need, needAddon } from '../helpers/requires.mjs';

const native = loadNative();
const addon = needAddon();
const JOB = 4242;
const KEY = 'c0ffee'.repeat(6);
const name = (s) => `${shmJobPrefix(JOB, KEY)}${s}`;
const ADDON = new URL('../../dist/native/addon.js', import.meta.url).href;

test('shmCreate / shmOpen / shmUnlink: shared, zero-filled, exclusive, gone when unlinked', addon, () => {
  const a = native.shmCreate(name('t1'), 8192);
  try {
    assert.ok(a instanceof SharedArrayBuffer);
    assert.equal(a.byteLength, 8192);
    assert.ok(new Uint8Array(a).every((x) => x === 0), 'zero-filled');
    const b = native.shmOpen(name('t1'));
    assert.equal(b.byteLength, 8192);
    Atomics.store(new Int32Array(a), 3, 77);
    assert.equal(Atomics.load(new Int32Array(b), 3), 77, 'one memory, two mappings');
    assert.throws(() => native.shmCreate(name('t1'), 4096), (e) => e.code === 'ERR_NO_RAIL' && /exists/i.test(e.message));
    native.shmUnlink(name('t1'));
    assert.ok(!existsSync(`/dev/shm/${name('t1')}`));
    native.shmUnlink(name('t1')); // no error when already gone
    Atomics.add(new Int32Array(b), 3, 1);
    assert.equal(Atomics.load(new Int32Array(a), 3), 78, 'mappings outlive the name');
    assert.throws(() => native.shmOpen(name('t1')), (e) => e.code === 'ERR_NO_RAIL');
    assert.throws(() => native.shmCreate('a/b', 4096), TypeError);
  } finally { native.shmUnlink(name('t1')); }
});

test('shmCreate: a full /dev/shm is ERR_NO_RAIL at creation, not a SIGBUS later (1 MiB tmpfs in a mount namespace)', addon, (t) => {
  const probe = spawnSync('unshare', ['-m', 'true']);
  if (need('mountns', probe.status !== 0 ? 'unshare -m was refused' : null).skipped(t)) return;
  const js = `import(${JSON.stringify(ADDON)}).then((m) => { try { m.loadNative().shmCreate('railcomm-1-x', 4 << 20); console.log('created'); } catch (e) { console.log(e.code); } })`;
  const r = spawnSync('unshare', ['-m', 'sh', '-c', `mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "${process.execPath}" -e "$0"`, js], { encoding: 'utf8' });
  if (need('mountns', r.status !== 0 && /mount/.test(r.stderr) ? `cannot mount a tmpfs: ${r.stderr.trim()}` : null).skipped(t)) return;
  assert.equal(r.stdout.trim(), 'ERR_NO_RAIL', r.stderr);
});

test('doorbell: another process rings a futex word and this one wakes, without keeping the loop alive', addon, async () => {
  const sab = native.shmCreate(name('bell'), 4096);
  try {
    const w = new Int32Array(sab);
    let woke = 0;
    const waiter = native.doorbellWaiter(sab, 0, () => { woke++; });
    native.doorbellArm(waiter, 0);
    const child = spawn(process.execPath, ['--input-type=module', '-e', `
      const m = await import(${JSON.stringify(ADDON)});
      const n = m.loadNative(); const s = n.shmOpen(${JSON.stringify(name('bell'))});
      setTimeout(() => { Atomics.add(new Int32Array(s), 0, 1); n.futexWake(s, 0); }, 100);`], { stdio: 'inherit' });
    const exited = new Promise((r) => child.on('exit', r)); // it may exit before we look
    const keep = setInterval(() => {}, 1000);
    const t0 = Date.now();
    while (woke === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 5));
    clearInterval(keep);
    assert.equal(woke, 1, 'woken by the other process');
    assert.equal(Atomics.load(w, 0), 1);
    await exited;
    // Armed with a value the word no longer has: calls back at once.
    native.doorbellArm(waiter, 0);
    const t1 = Date.now();
    while (woke === 1 && Date.now() - t1 < 2000) await new Promise((r) => setTimeout(r, 5));
    assert.equal(woke, 2);
    native.doorbellClose(waiter);
  } finally { native.shmUnlink(name('bell')); }
  // A process with an armed waiter and nothing else exits on its own.
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `
    const m = await import(${JSON.stringify(ADDON)}); const n = m.loadNative();
    const s = n.shmCreate('railcomm-4242-idle', 4096); n.shmUnlink('railcomm-4242-idle');
    n.doorbellArm(n.doorbellWaiter(s, 0, () => {}), 0); console.log('armed');`], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'armed');
});

test('CMA: read another process\'s buffer in one copy; a dead pid answers -ESRCH', addon, async () => {
  const child = spawn(process.execPath, ['-e', `
    const b = Buffer.alloc(1 << 20); for (let i = 0; i < b.length; i++) b[i] = (i * 7) & 255;
    const n = require(${JSON.stringify(resolveBinary(nativeDir())?.file ?? '')});
    process.stdout.write(n.addressOf(b) + '\\n'); setInterval(() => b[0], 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((r) => child.on('exit', r));
  try {
    const line = await new Promise((r) => child.stdout.once('data', (d) => r(String(d).trim())));
    const dst = new Uint8Array(1 << 20);
    const n = native.cmaRead(child.pid, BigInt(line), dst);
    assert.equal(n, dst.byteLength);
    for (let i = 0; i < dst.length; i += 4097) assert.equal(dst[i], (i * 7) & 255);
  } finally { child.kill('SIGKILL'); }
  await exited;
  assert.equal(native.cmaRead(child.pid, 4096n, new Uint8Array(8)), -3);
});

test('memRead / memWrite: copy to and from an address in this process; an unmapped range is -EFAULT, not a crash', addon, () => {
  const src = new Uint8Array(1 << 20).map((_, i) => (i * 7) & 255);
  const dst = new Uint8Array(1 << 20);
  assert.equal(native.memRead(native.addressOf(src), dst), src.length);
  assert.deepEqual(dst, src);
  const back = new Uint8Array(300).fill(9);
  assert.equal(native.memWrite(native.addressOf(dst.subarray(1000)), back), 300);
  assert.equal(dst[999], src[999]);
  assert.ok(dst.subarray(1000, 1300).every((x) => x === 9));
  assert.equal(dst[1300], src[1300]);
  assert.equal(native.memRead(16n, new Uint8Array(8)), -14, 'the zero page is not mapped');
  assert.equal(native.memWrite(16n, new Uint8Array(8)), -14);
  assert.equal(native.memRead(native.addressOf(src), new Uint8Array(0)), 0);
});

test('crc32c: the Castagnoli check value, chaining, and agreement with a bitwise reference', addon, () => {
  assert.equal(native.crc32c(Buffer.from('123456789')), 0xe3069283);
  const data = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 13) & 255));
  assert.equal(native.crc32c(data.subarray(300), native.crc32c(data.subarray(0, 300))), native.crc32c(data));
  let c = ~0 >>> 0;
  for (const x of data) { c ^= x; for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1; }
  assert.equal(native.crc32c(data), (~c) >>> 0);
});

test('crc32c: lengths around the interleaved blocks (3 x 256 B, 3 x 4 KiB) and crc32cRange agree with the bitwise reference', addon, () => {
  const ref = (b) => {
    let c = ~0 >>> 0;
    for (const x of b) { c ^= x; for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1; }
    return (~c) >>> 0;
  };
  const data = Buffer.from(Array.from({ length: 70000 }, (_, i) => (i * 2654435761) >>> 13 & 255));
  for (const len of [0, 1, 7, 8, 9, 767, 768, 769, 1535, 1536, 12287, 12288, 12289, 24576 + 768 + 5, 65504, 65536]) {
    for (const off of [0, 3, 8]) {
      const want = ref(data.subarray(off, off + len));
      assert.equal(native.crc32c(data.subarray(off, off + len)), want, `crc32c length ${len} offset ${off}`);
      assert.equal(native.crc32cRange(data, off, len), want, `crc32cRange length ${len} offset ${off}`);
    }
  }
  assert.throws(() => native.crc32cRange(data, 69990, 11), TypeError);
});

test('udpSendBatch: one sendmmsg delivers each buffer\'s first bytes to its own address and port, in order', addon, async () => {
  const dgram = await import('node:dgram');
  const bound = (s) => new Promise((r) => s.bind(0, '127.0.0.1', () => r(s.address().port)));
  const rx1 = dgram.createSocket('udp4'), rx2 = dgram.createSocket('udp4'), tx = dgram.createSocket('udp4');
  const [p1, p2] = [await bound(rx1), await bound(rx2)];
  await bound(tx);
  const got1 = [], got2 = [];
  rx1.on('message', (m) => got1.push(m.toString()));
  rx2.on('message', (m) => got2.push(m.toString()));
  try {
    const fd = tx[Object.getOwnPropertySymbols(tx).find((x) => x.description === 'state symbol')].handle.fd;
    const bufs = ['alpha--', 'beta', 'gamma!!', 'delta'].map((t) => Buffer.from(t));
    const lens = new Uint32Array([5, 4, 5, 5]);
    const ports = new Uint32Array([p1, p2, p1, p2]);
    const lo = 0x7f000001;
    const addrs = new Uint32Array([lo, lo, lo, lo]);
    assert.equal(native.udpSendBatch(fd, bufs, lens, ports, addrs, 4), 4);
    const until = async (f) => { for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 5)); };
    await until(() => got1.length === 2 && got2.length === 2);
    assert.deepEqual(got1, ['alpha', 'gamma']);
    assert.deepEqual(got2, ['beta', 'delta']);
    assert.throws(() => native.udpSendBatch(fd, bufs, new Uint32Array([50, 4, 5, 5]), ports, addrs, 4), TypeError, 'a length beyond its buffer');
    assert.throws(() => native.udpSendBatch(fd, bufs, lens, ports, addrs, 5), TypeError, 'a count beyond the arrays');
    assert.ok(native.udpSendBatch(-1, bufs, lens, ports, addrs, 1) < 0, 'a bad fd is -errno, not a crash');
  } finally {
    rx1.close(); rx2.close(); tx.close();
  }
});

test('segment names carry no job id: a tag only the job key gives, 16 hex digits', () => {
  const p = shmJobPrefix(JOB, KEY);
  assert.match(p, /^railcomm-[0-9a-f]{16}-$/);
  assert.ok(!p.includes(String(JOB)));
  assert.equal(shmJobPrefix(JOB, KEY), p, 'every rank computes the same');
  assert.notEqual(shmJobPrefix(JOB, 'ab'.repeat(16)), p, 'another key, another tag');
  assert.notEqual(shmJobPrefix(JOB + 1, KEY), p, 'another job, another tag');
});

test('removeJobSegments removes exactly one job\'s leftovers', addon, () => {
  native.shmCreate(name('left1'), 4096);
  native.shmCreate(name('left2'), 4096);
  const other = `${shmJobPrefix(JOB + 1, KEY)}keep`;
  native.shmCreate(other, 4096);
  try {
    assert.equal(removeJobSegments(JOB, KEY), 2);
    assert.ok(existsSync(`/dev/shm/${other}`));
  } finally { native.shmUnlink(other); }
});

test('reduce: the same bits as JavaScript on random operands (NaN op NaN aside), pairs it lacks answer false; copy', addon, () => {
  const F = {
    sum: (u, v) => u + v, prod: (u, v) => u * v,
    min: (u, v) => (v < u || v !== v ? v : u), max: (u, v) => (v > u || v !== v ? v : u),
    band: (u, v) => u & v, bor: (u, v) => u | v, bxor: (u, v) => u ^ v,
  };
  const have = [];
  for (const [t, name] of TYPE_CODES.entries()) for (const [o, op] of OP_CODES.entries()) {
    const T = globalThis[name];
    const float = T === Float32Array || T === Float64Array;
    const n = 3001, a = new T(n), b = new T(n);
    randomFillSync(new Uint8Array(a.buffer));
    randomFillSync(new Uint8Array(b.buffer));
    const want = a.slice();
    if (!(float && ['band', 'bor', 'bxor'].includes(op))) for (let i = 0; i < n; i++) want[i] = F[op](a[i], b[i]);
    const out = new T(n + 5);
    if (!native.reduce(t, o, out, 0, a, 0, b, 0, n)) continue;
    have.push(`${name} ${op}`);
    // Compared as bytes: a NaN's payload counts too.
    const el = T.BYTES_PER_ELEMENT, ob = new Uint8Array(out.buffer), wb = new Uint8Array(want.buffer);
    for (let i = 0; i < n; i++) {
      if (float && Number.isNaN(a[i]) && Number.isNaN(b[i])) continue;
      for (let k = i * el; k < (i + 1) * el; k++) {
        if (ob[k] !== wb[k]) assert.fail(`${name} ${op} element ${i}: ${a[i]} ${op} ${b[i]} = ${out[i]}, JavaScript says ${want[i]}`);
      }
    }
    assert.equal(out[n], big(T) ? 0n : 0, 'nothing written past n');
    // In place, as the collectives accumulate.
    const acc = a.slice();
    assert.equal(native.reduce(t, o, acc, 0, acc, 0, b, 0, n), true);
    assert.deepEqual(new Uint8Array(acc.buffer), new Uint8Array(out.buffer, 0, acc.byteLength));
    // Offsets, in elements, on every operand.
    const shifted = new T(n + 9);
    assert.equal(native.reduce(t, o, shifted, 9, a, 1, b, 1, n - 1), true);
    assert.deepEqual(new Uint8Array(shifted.buffer, 9 * T.BYTES_PER_ELEMENT, (n - 1) * T.BYTES_PER_ELEMENT), new Uint8Array(out.buffer, T.BYTES_PER_ELEMENT, (n - 1) * T.BYTES_PER_ELEMENT));
  }
  for (const pair of ['Float64Array sum', 'Float32Array prod', 'Int32Array sum', 'BigInt64Array bxor', 'Uint8Array max']) assert.ok(have.includes(pair), pair);
  // 32-bit products round in JavaScript's doubles; float min and max pass NaN payloads their own way.
  for (const pair of ['Int32Array prod', 'Uint32Array prod', 'Float64Array min', 'Float32Array max']) assert.ok(!have.includes(pair), pair);
  const f2 = new Float64Array(2);
  assert.throws(() => native.reduce(7, 0, f2, 0, f2, 0, new Float64Array(1), 0, 2), TypeError, 'b too short');
  assert.throws(() => native.reduce(7, 0, f2, 1, f2, 0, f2, 0, 2), TypeError, 'out offset runs past');
  assert.throws(() => native.reduce(7, 0, f2, 0.5, f2, 0, f2, 0, 1), TypeError, 'fractional offset');

  const src = new Float64Array(5000).map((_, i) => i * 1.5), dst = new Float64Array(new SharedArrayBuffer(8 * 5001));
  native.copy(dst, 8, src, 0, src.byteLength);
  assert.equal(dst[0], 0);
  assert.deepEqual(dst.slice(1), src);
  native.copy(dst, 0, src, 8 * 4999, 8);
  assert.equal(dst[0], 4999 * 1.5);
  assert.throws(() => native.copy(new Uint8Array(3), 0, new Uint8Array(4), 0, 4), TypeError);
  assert.throws(() => native.copy(new Uint8Array(8), 0, new Uint8Array(4), 1, 4), TypeError);
});

const big = (T) => T === BigInt64Array || T === BigUint64Array;

test('futexWait: returns at once when the word differs, after the timeout when nobody rings', addon, () => {
  const sab = new SharedArrayBuffer(64);
  Atomics.store(new Int32Array(sab), 4, 7);
  let t0 = performance.now();
  native.futexWait(sab, 16, 6, 500_000);
  assert.ok(performance.now() - t0 < 250, 'a stale expected value does not wait');
  t0 = performance.now();
  native.futexWait(sab, 16, 7, 20_000);
  assert.ok(performance.now() - t0 >= 15, 'waits until the timeout');
  assert.throws(() => native.futexWait(sab, 62, 0, 10), TypeError);
});

/** Runs `body` (an ES module's source, with n = the loaded addon) in a fresh node with env; its stdout. */
function inChild(body, env = {}, args = []) {
  const r = spawnSync(process.execPath, [...args, '--input-type=module', '-e', `
    const m = await import(${JSON.stringify(ADDON)}); const n = m.loadNative();
    if (n === null) { console.log('unavailable: ' + m.nativeWhy()); process.exit(0); }
    ${body}`], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...env } });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

/** Whether a V8 shim for this Node ABI is there to force (a source build for another Node, or no prebuild, is not). */
const shimHere = inChild('console.log("ok")', { RAILCOMM_SAB_SHIM: '1' }) === 'ok' ? false
  : `no V8 shim for node ABI ${process.versions.modules} here (npm run prebuilds builds one per supported Node)`;

test('segments are SharedArrayBuffers both ways: Node-API where this Node has it, the V8 shim otherwise (and when forced)', addon, (t) => {
  const o = nativeOrigin();
  assert.ok(o.sab === 'node-api' || o.sab === 'v8 shim');
  if (o.sab === 'v8 shim') assert.ok(o.shim && /railcomm_sab\.node$|node\.abi\d+\.node$/.test(o.shim.file), JSON.stringify(o));
  const body = `
    const s = n.shmCreate(${JSON.stringify(name('both'))}, 8192); const t = n.shmOpen(${JSON.stringify(name('both'))});
    n.shmUnlink(${JSON.stringify(name('both'))});
    Atomics.store(new Int32Array(s), 9, 5); n.futexWake(t, 36);
    console.log(m.nativeOrigin().sab, s instanceof SharedArrayBuffer, t.byteLength, Atomics.load(new Int32Array(t), 9));`;
  assert.equal(inChild(body), `${o.sab} true 8192 5`);
  if (need('shim', shimHere || null).skipped(t)) return;
  assert.equal(inChild(body, { RAILCOMM_SAB_SHIM: '1' }), 'v8 shim true 8192 5');
});

test('a segment is unmapped once V8 frees its last SharedArrayBuffer (shim and Node-API alike)', addon, () => {
  for (const env of shimHere ? [{}] : [{ RAILCOMM_SAB_SHIM: '1' }, {}]) {
    const out = inChild(`
      const fs = await import('node:fs');
      const mapped = () => fs.readFileSync('/proc/self/maps', 'utf8').split('\\n').filter((l) => l.includes('railcomm-4242-gc')).length;
      // Held until counted: 20 MiB of external memory may start a collection midway (it did on Node 24).
      let held = [];
      for (let i = 0; i < 20; i++) { held.push(n.shmCreate('railcomm-4242-gc' + i, 1 << 20)); n.shmUnlink('railcomm-4242-gc' + i); }
      const before = mapped();
      held = null;
      for (let k = 0; k < 5 && mapped() > 0; k++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); }
      console.log(before, mapped());`, env, ['--expose-gc']);
    assert.equal(out, '20 0', `${JSON.stringify(env)}: mappings before and after collection`);
  }
});

test('worker threads load the addon; their segments outlive them and are freed after (the library stays loaded)', addon, () => {
  for (const env of shimHere ? [{}] : [{ RAILCOMM_SAB_SHIM: '1' }, {}]) {
    const out = inChild(`
      const { Worker } = await import('node:worker_threads');
      const src = 'const { parentPort } = await import("node:worker_threads"); const m = await import(' + JSON.stringify(${JSON.stringify(ADDON)}) + '); const n = m.loadNative(); const s = n.shmCreate("railcomm-4242-w", 4096); n.shmUnlink("railcomm-4242-w"); new Int32Array(s)[0] = 7; parentPort.postMessage(s);';
      let got = null;
      for (let i = 0; i < 3; i++) {
        const w = new Worker(src, { eval: true });
        got = await new Promise((r) => w.once('message', r));
        await w.terminate();
      }
      globalThis.gc(); await new Promise((r) => setTimeout(r, 20));
      const v = Atomics.load(new Int32Array(got), 0);
      got = null; globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); globalThis.gc();
      console.log(v);`, env, ['--expose-gc']);
    assert.equal(out, '7', JSON.stringify(env));
  }
});

test('doorbellClose twice is harmless; a closed waiter never calls back', addon, async () => {
  const sab = new SharedArrayBuffer(64);
  let calls = 0;
  const w = native.doorbellWaiter(sab, 8, () => { calls++; });
  native.doorbellArm(w, 0);
  native.doorbellClose(w);
  native.doorbellClose(w);
  native.doorbellArm(w, 0);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(calls, 0);
});

test('reduce: views that overlap give what an element-by-element loop gives (the vector paths are for views apart)', addon, () => {
  const T = TYPE_CODES.indexOf('Float64Array'), SUM = OP_CODES.indexOf('sum');
  for (const [oo, ao, bo] of [[1, 0, 40], [0, 1, 40], [0, 0, 0], [40, 0, 0], [5, 5, 3]]) {
    const mine = new Float64Array(100).map((_, i) => i * 1.25 + 1);
    const js = mine.slice();
    const n = 50;
    for (let i = 0; i < n; i++) js[oo + i] = js[ao + i] + js[bo + i];
    assert.equal(native.reduce(T, SUM, mine, oo, mine, ao, mine, bo, n), true);
    assert.deepEqual(mine, js, `out at ${oo}, a at ${ao}, b at ${bo}`);
  }
});
