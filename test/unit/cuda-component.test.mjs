// The CUDA component where there is no GPU (CI): it reports itself
// unavailable with the reason, every GPU call fails at the call with ERR_CUDA
// saying why and what to do, and device arrays are refused where only host
// memory can go. Device arrays over a made-up allocation (no driver) check the
// array logic; the wire formats and the shipped PTX are checked as data.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { init, cuda, DeviceArray, DeviceBuffer, PARAMS } from '../../dist/index.js';
import { DeviceAllocation } from '../../dist/cuda/memory.js';
import { asBytes, isDevice } from '../../dist/core/bytes.js';
import { serialize } from '../../dist/comm/world.js';
import { REDUCE_PTX, REDUCE_ENTRIES } from '../../dist/cuda/reduce-ptx.js';
import * as W from '../../dist/proto/cuda-wire.js';
import { RTS_HDR, encodeRts, rtsSize, rtsSendId } from '../../dist/proto/wire.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** A device array over made-up memory: no driver is touched by what these tests call. */
function fakeArray(length, type = Float32Array, owned = true) {
  const a = new DeviceAllocation(0x7f0000001000n, length * type.BYTES_PER_ELEMENT, 0, 42n, owned, true);
  return new DeviceArray(a, 0, length, type, true);
}

// One world for the file (init() once per process).
let comm;
before(async () => { comm = await init(); });
after(async () => { await comm.finalize(); });

test('the CUDA component says whether GPU memory works here and why', () => {
  assert.equal(typeof cuda.available, 'boolean');
  assert.ok(cuda.why.length > 10, cuda.why);
  if (cuda.available) assert.match(cuda.why, /CUDA \d+\.\d+, \d+ devices?/);
  else assert.match(cuda.why, /libcuda\.so\.1|not built|RAILCOMM_CUDA|Linux|no CUDA device|did not initialise/);
});

test('without a GPU every GPU call fails at the call with ERR_CUDA, the reason and what to do', { skip: cuda.available ? 'this machine has a GPU' : false }, async () => {
  for (const f of [() => cuda.alloc(4, Float32Array), () => cuda.wrap(0x1000n, 1), () => cuda.setDevice(0), () => cuda.synchronize(), () => cuda.device]) {
    assert.throws(f, (e) => e.name === 'RailcommError' && e.code === 'ERR_CUDA' && e.message.includes(cuda.why) && /cuda\.available|install the NVIDIA driver/.test(e.message));
  }
  const d = fakeArray(8);
  assert.throws(() => comm.isend(d, 0), (e) => e.code === 'ERR_CUDA');
  assert.throws(() => comm.irecv(d, 0), (e) => e.code === 'ERR_CUDA');
  await assert.rejects(async () => comm.send(d, 0), (e) => e.code === 'ERR_CUDA');
  await assert.rejects(async () => comm.recv(d, 0), (e) => e.code === 'ERR_CUDA');
  await assert.rejects(async () => comm.allreduce(d, d, 'sum'), (e) => e.code === 'ERR_CUDA');
  assert.throws(() => d.upload(new Float32Array(8)), (e) => e.code === 'ERR_CUDA');
});

test('why, from a fresh process: no driver library, a named one missing, RAILCOMM_CUDA=0; railcomm info shows the component', () => {
  const why = (env) => spawnSync(process.execPath, ['-e', "import('./dist/index.js').then((m) => console.log(m.cuda.available, m.cuda.why))"], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8' }).stdout.trim();
  assert.match(why({ RAILCOMM_CUDA_LIBRARY: '/nonexistent/libcuda.so.1' }), /^false \/nonexistent\/libcuda\.so\.1 not found/);
  assert.equal(why({ RAILCOMM_CUDA: '0' }), 'false switched off by RAILCOMM_CUDA=0');
  const info = spawnSync(process.execPath, [CLI, 'info'], { cwd: root, encoding: 'utf8', env: { ...process.env, RAILCOMM_CUDA_LIBRARY: '/nonexistent/libcuda.so.1' } });
  assert.equal(info.status, 0, info.stderr);
  assert.match(info.stdout, /^cuda: unavailable \(\/nonexistent\/libcuda\.so\.1 not found/m);
  const json = JSON.parse(spawnSync(process.execPath, [CLI, 'info', '--json'], { cwd: root, encoding: 'utf8', env: { ...process.env, RAILCOMM_CUDA: '0' } }).stdout);
  assert.deepEqual(json.cuda, { available: false, lines: ['unavailable (switched off by RAILCOMM_CUDA=0)'] });
});

test('device arrays are classified as device memory and refused where only host memory goes, saying what to do', async () => {
  const d = fakeArray(16);
  assert.ok(isDevice(d) && d instanceof DeviceBuffer);
  assert.ok(!isDevice(new Float32Array(4)));
  assert.throws(() => asBytes(d, 'window buffer'), (e) => e.code === 'ERR_INVALID_ARG' && /host memory.*download/.test(e.message));
  assert.throws(() => serialize(d), (e) => e.code === 'ERR_INVALID_ARG');
  assert.throws(() => comm.sendObject(d, 0), (e) => e.code === 'ERR_INVALID_ARG' && /device array/.test(e.message));
  await assert.rejects(async () => comm.window(d), (e) => e.code === 'ERR_INVALID_ARG');
  await assert.rejects(async () => comm.bcastObject(d, 0), (e) => e.code === 'ERR_INVALID_ARG');
  // Argument checks come first, as for host buffers.
  assert.throws(() => comm.isend(d, 5), (e) => e.code === 'ERR_RANK');
  assert.throws(() => comm.irecv(d, 0, -5), (e) => e.code === 'ERR_TAG');
});

test('device array bookkeeping: sizes, subarrays as TypedArray#subarray, free rules', () => {
  const d = fakeArray(100, Float64Array);
  assert.equal(d.length, 100);
  assert.equal(d.byteLength, 800);
  assert.equal(d.BYTES_PER_ELEMENT, 8);
  assert.equal(d.device, 0);
  const s = d.subarray(10, 20);
  assert.equal(s.length, 10);
  assert.equal(s.byteOffset, 80);
  assert.equal(s.ptr, d.ptr + 80n);
  assert.equal(d.subarray(-5).length, 5);
  assert.equal(d.subarray(50, 10).length, 0);
  assert.equal(d.subarray(0, 1000).length, 100);
  assert.equal(s.subarray(2, 4).byteOffset, 96);
  assert.match(String(d), /DeviceArray<Float64Array>\(100\) on device 0/);
  assert.throws(() => s.free(), (e) => e.code === 'ERR_INVALID_ARG' && /subarray/.test(e.message));
  d.allocation.users = 1;
  assert.throws(() => d.free(), (e) => e.code === 'ERR_INVALID_ARG' && /pending request/.test(e.message));
  d.allocation.users = 0;
  // Not owned: free() forgets it without the driver (no cuMemFree).
  const w = fakeArray(4, Uint8Array, false);
  w.free();
  assert.equal(w.freed, true);
  w.free(); // twice: nothing
  assert.throws(() => w.subarray(1), (e) => e.code === 'ERR_INVALID_ARG' && /freed/.test(e.message));
});

test('wire: RTS_DEV and DEV_CTRL encode and decode', () => {
  const buf = new Uint8Array(W.RTS_DEV_HDR + 4);
  const v = new DataView(buf.buffer, 4);
  encodeRts(v, 3, 1, 77, 9, 0, 1234, 2 ** 33 + 5);
  const handle = Uint8Array.from({ length: 64 }, (_, i) => i * 3);
  W.encodeRtsDev(v, W.DEV_IPC, 4321, 4096n, 0xfeedbeef01n, 2 ** 32 + 7, handle);
  const dv = new DataView(buf.buffer);
  const m = W.decodeRtsDev(dv, 4);
  assert.deepEqual({ ...m, handle: [...m.handle] }, { mode: W.DEV_IPC, pid: 4321, address: 4096n, bufferId: 0xfeedbeef01n, allocBytes: 2 ** 32 + 7, handle: [...handle] });
  assert.equal(rtsSendId(dv, 4), 1234);
  assert.equal(rtsSize(dv, 4), 2 ** 33 + 5);
  assert.equal(W.RTS_DEV_HDR, RTS_HDR + 96);
  assert.ok(W.RTS_DEV_HDR <= 128, 'fits the control scratch (proto/control.ts) and every rail\'s amHeaderMax');
  W.encodeRtsDev(v, W.DEV_STAGED, 1, 0n, 0n, 0, null);
  assert.ok(W.decodeRtsDev(dv, 4).handle.every((b) => b === 0));

  const c = new DataView(new ArrayBuffer(32));
  W.encodeIpcReq(c, 3, 99, { domain: 1, bus: 0x3b, slot: 2 }, 0xabcdefn);
  assert.equal(W.ctrlKind(c, 0), W.DEV_IPC_REQ);
  assert.deepEqual(W.decodeIpcReq(c, 0), { attempt: 3, pid: 99, place: { domain: 1, bus: 0x3b, slot: 2 }, hostId: 0xabcdefn });
  W.encodeIpcAck(c, 2);
  assert.equal(W.ctrlKind(c, 0), W.DEV_IPC_ACK);
  assert.equal(W.ipcAckStatus(c, 0), 2);
  W.encodeDevCts(c, 5, 6);
  assert.equal(W.devCtsSendId(c, 0), 5);
  assert.equal(W.devCtsRecvId(c, 0), 6);
  W.encodeDevFree(c, W.DEV_FREE_ACK, 2n ** 60n);
  assert.equal(W.ctrlKind(c, 0), W.DEV_FREE_ACK);
  assert.equal(W.devFreeBufferId(c, 0), 2n ** 60n);
  assert.equal(W.DEV_CTRL_HDR.length, 6);
});

test('the shipped PTX: every reduction entry, the version older drivers JIT, and the same text as native/cuda/reduce.ptx', () => {
  const want = [];
  for (const t of ['f32', 'f64', 'i32', 'u32', 'i64', 'u64']) for (const op of ['sum', 'prod', 'min', 'max']) want.push(`railcomm_${op}_${t}`);
  assert.deepEqual([...REDUCE_ENTRIES].sort(), want.sort());
  assert.match(REDUCE_PTX, /^\.version 6\.4$/m);
  assert.match(REDUCE_PTX, /^\.target sm_75$/m);
  assert.match(REDUCE_PTX, /^\.address_size 64$/m);
  for (const e of want) assert.match(REDUCE_PTX, new RegExp(`\\.entry ${e}\\(\\s*\\.param \\.u64 \\w+,\\s*\\.param \\.u64 \\w+,\\s*\\.param \\.u64 \\w+\\s*\\)`));
  assert.equal(REDUCE_PTX, readFileSync(new URL('../../native/cuda/reduce.ptx', import.meta.url), 'utf8'), 'regenerate with native/cuda/gen-ptx.sh');
});

test('parameters of the device datapaths', () => {
  for (const k of ['cudaIpc', 'cudaEager', 'cudaIpcCache', 'cudaReduceMin']) assert.ok(PARAMS[k], k);
  assert.equal(PARAMS.cudaIpc.name, 'CUDA_IPC');
  assert.equal(PARAMS.cudaIpc.def, true);
});
