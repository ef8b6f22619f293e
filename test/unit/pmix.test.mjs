// PMIx wire-up without a PMIx server: the loader's fallback (addon missing or
// broken, libpmix.so.2 absent -> null and why), the declared PMIx ABI against
// the real headers where they are installed, launcher detection of PMIx
// variables, and PmixStore over a fake module (job key sharing, get retries
// and timeouts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPmixFrom } from '../../dist/boot/pmix.js';
import { loadBinary } from '../../dist/native/addon.js';
import { PmixStore, ownerOf, JOB_KEY_KEY } from '../../dist/boot/pmix-store.js';
import { detectLaunch } from '../../dist/boot/launch-env.js';
import { need } from '../helpers/requires.mjs';

test('loader: no addon, a broken addon, or no libpmix gives null and says why (the build log first line when there is one)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'railcomm-pmix-'));
  try {
    const a = loadPmixFrom(dir);
    assert.equal(a.mod, null);
    assert.match(a.why, /PMIx module unavailable: native addon not built/);
    writeFileSync(join(dir, 'build-log.txt'), 'failed (exit 1): building from source needs node-gyp\n...');
    assert.match(loadPmixFrom(dir).why, /failed \(exit 1\): building from source needs node-gyp/);
    mkdirSync(join(dir, 'build', 'Release'), { recursive: true });
    writeFileSync(join(dir, 'build', 'Release', 'junk.node'), 'not a shared object');
    const b = loadPmixFrom(dir);
    assert.equal(b.mod, null);
    assert.match(b.why, /native addon failed to load/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('loader: the addon opens libpmix.so.2 at run time; a library that is not there is named in the reason', need('addon', loadBinary().ok ? null : 'native addon not built'), () => {
  // In a child: the first library the addon opens stays for the process.
  const js = `import(${JSON.stringify(new URL('../../dist/boot/pmix.js', import.meta.url).href)}).then((m) => { m.loadPmix(); console.log(m.pmixWhy()); })`;
  const run = (env) => spawnSync(process.execPath, ['-e', js], { encoding: 'utf8', env: { ...process.env, ...env } }).stdout.trim();
  assert.match(run({ RAILCOMM_PMIX_LIB: 'libpmix-absent.so.2' }), /PMIx module unavailable: libpmix-absent\.so\.2 not found \(.*\); .*RAILCOMM_PMIX_LIB/);
  assert.match(run({ RAILCOMM_PMIX_LIB: 'libc.so.6' }), /libc\.so\.6 lacks PMIx_Init/);
  const here = ['/usr/lib/x86_64-linux-gnu/libpmix.so.2', '/usr/lib/aarch64-linux-gnu/libpmix.so.2', '/usr/lib64/libpmix.so.2'].some((f) => existsSync(f));
  if (here) assert.match(run({ RAILCOMM_PMIX_LIB: '' }), /PMIx module loaded \(\S*PMIx [0-9.]+\S* from libpmix\.so\.2; in the native addon, (prebuild|source build)\)/);
});

/** Where Debian's libpmix-dev puts pmix_common.h (the ABI check needs it; building railcomm does not). */
const PMIX_INCLUDE = ['/usr/lib/x86_64-linux-gnu/pmix2/include', '/usr/lib/aarch64-linux-gnu/pmix2/include', '/usr/include/pmix', '/usr/include'].find((d) => existsSync(join(d, 'pmix_common.h')));

const abiCheck = need('pmix', PMIX_INCLUDE === undefined ? 'no pmix_common.h here (libpmix-dev); the check compiles against it' : spawnSync('g++', ['--version']).status !== 0 ? 'no g++' : null);
test('pmix-abi.h matches the installed PMIx headers: layouts, constants and key strings', abiCheck, () => {
  const abi = new URL('../../native/src/pmix-abi.h', import.meta.url).pathname;
  const check = `
#include <pmix.h>
#include <cstddef>
#include <string_view>
#include <type_traits>
#include "${abi}"
namespace px = railcomm::pmix;
#define SAME(a, b) static_assert(sizeof(a) == sizeof(b) && alignof(a) == alignof(b), #a)
#define AT(a, b, f) static_assert(offsetof(a, f) == offsetof(b, f), #a "." #f)
#define EQ(a, b) static_assert((a) == (b), #a)
#define KEY(a, b) static_assert(std::string_view(a) == std::string_view(b), #a)
SAME(px::Proc, pmix_proc_t); AT(px::Proc, pmix_proc_t, nspace); AT(px::Proc, pmix_proc_t, rank);
SAME(px::ByteObject, pmix_byte_object_t); AT(px::ByteObject, pmix_byte_object_t, bytes); AT(px::ByteObject, pmix_byte_object_t, size);
SAME(px::Envar, pmix_envar_t);
SAME(px::Value, pmix_value_t); AT(px::Value, pmix_value_t, type); AT(px::Value, pmix_value_t, data);
static_assert(sizeof(px::Value::data) == sizeof(pmix_value_t::data), "pmix_value_t.data");
SAME(px::Info, pmix_info_t); AT(px::Info, pmix_info_t, key); AT(px::Info, pmix_info_t, flags); AT(px::Info, pmix_info_t, value);
SAME(px::status_t, pmix_status_t); SAME(px::rank_t, pmix_rank_t); SAME(px::data_type_t, pmix_data_type_t);
SAME(px::scope_t, pmix_scope_t); SAME(px::info_directives_t, pmix_info_directives_t);
EQ(px::kMaxNsLen, PMIX_MAX_NSLEN); EQ(px::kMaxKeyLen, PMIX_MAX_KEYLEN);
EQ(px::kSuccess, PMIX_SUCCESS); EQ(px::kErrTypeMismatch, PMIX_ERR_TYPE_MISMATCH); EQ(px::kErrTimeout, PMIX_ERR_TIMEOUT);
EQ(px::kErrUnreach, PMIX_ERR_UNREACH); EQ(px::kErrBadParam, PMIX_ERR_BAD_PARAM); EQ(px::kErrInit, PMIX_ERR_INIT);
EQ(px::kErrNotFound, PMIX_ERR_NOT_FOUND); EQ(px::kErrLostConnection, PMIX_ERR_LOST_CONNECTION); EQ(px::kEventActionComplete, PMIX_EVENT_ACTION_COMPLETE);
EQ(px::kBool, PMIX_BOOL); EQ(px::kString, PMIX_STRING); EQ(px::kInt, PMIX_INT); EQ(px::kUint, PMIX_UINT);
EQ(px::kUint16, PMIX_UINT16); EQ(px::kUint32, PMIX_UINT32); EQ(px::kByteObject, PMIX_BYTE_OBJECT); EQ(px::kProcRank, PMIX_PROC_RANK);
EQ(px::kGlobal, PMIX_GLOBAL); EQ(px::kRankWildcard, PMIX_RANK_WILDCARD);
KEY(px::kJobSize, PMIX_JOB_SIZE); KEY(px::kLocalRank, PMIX_LOCAL_RANK); KEY(px::kLocalSize, PMIX_LOCAL_SIZE);
KEY(px::kCollectData, PMIX_COLLECT_DATA); KEY(px::kTimeout, PMIX_TIMEOUT);
// The function types: ours with each struct replaced by PMIx's is exactly the declared one.
template <class T> struct Map { using type = T; };
template <class T> struct Map<T*> { using type = typename Map<T>::type*; };
template <class T> struct Map<const T> { using type = const typename Map<T>::type; };
template <class R, class... A> struct Map<R (*)(A...)> { using type = typename Map<R>::type (*)(typename Map<A>::type...); };
template <> struct Map<px::Proc> { using type = pmix_proc_t; };
template <> struct Map<px::Value> { using type = pmix_value_t; };
template <> struct Map<px::Info> { using type = pmix_info_t; };
#define FN(ours, theirs) static_assert(std::is_same_v<Map<px::ours>::type, decltype(&theirs)>, #theirs)
FN(InitFn, PMIx_Init); FN(FinalizeFn, PMIx_Finalize); FN(PutFn, PMIx_Put); FN(CommitFn, PMIx_Commit); FN(FenceFn, PMIx_Fence);
FN(GetFn, PMIx_Get); FN(ErrorStringFn, PMIx_Error_string); FN(GetVersionFn, PMIx_Get_version);
FN(RegisterEventHandlerFn, PMIx_Register_event_handler); FN(ValueDestructFn, PMIx_Value_destruct);
static_assert(std::is_same_v<Map<px::NotificationFn>::type, pmix_notification_fn_t>, "pmix_notification_fn_t");
static_assert(std::is_same_v<Map<px::EventNotificationCb>::type, pmix_event_notification_cbfunc_fn_t>, "pmix_event_notification_cbfunc_fn_t");
static_assert(std::is_same_v<Map<px::HdlrRegCb>::type, pmix_hdlr_reg_cbfunc_t>, "pmix_hdlr_reg_cbfunc_t");
`;
  const dir = mkdtempSync(join(tmpdir(), 'railcomm-pmix-abi-'));
  try {
    writeFileSync(join(dir, 'check.cc'), check);
    const r = spawnSync('g++', ['-std=c++17', '-fsyntax-only', '-I', PMIX_INCLUDE, join(dir, 'check.cc')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const uri = { PMIX_SERVER_URI41: 'x;tcp4://127.0.0.1:1' };

test('detection: mpirun with PMIx needs no MASTER_ADDR; PMIx of another rank (an inner launcher) is ignored', () => {
  const o = detectLaunch({ OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '4', OMPI_COMM_WORLD_LOCAL_RANK: '1', OMPI_COMM_WORLD_LOCAL_SIZE: '4', PMIX_NAMESPACE: '77', PMIX_RANK: '1', ...uri });
  assert.equal(o.launcher, 'openmpi');
  assert.deepEqual(o.pmix, { namespace: '77', rank: 1 });
  assert.equal(o.master, undefined);
  const both = detectLaunch({ OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '4', PMIX_NAMESPACE: '77', PMIX_RANK: '1', ...uri, MASTER_ADDR: '127.0.0.1', MASTER_PORT: '4000' });
  assert.ok(both.pmix && both.master, 'MASTER_ADDR is kept as the fallback');
  assert.throws(() => detectLaunch({ OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '4', PMIX_NAMESPACE: '77', PMIX_RANK: '0', ...uri }), /MASTER_ADDR/);
  assert.throws(() => detectLaunch({ OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '4', PMIX_NAMESPACE: '77', PMIX_RANK: '1' }), /MASTER_ADDR/, 'no server URI: no PMIx');
  const s = detectLaunch({ SLURM_PROCID: '2', SLURM_STEP_NUM_TASKS: '4', SLURM_JOB_ID: '5', SLURM_STEP_ID: '0', SLURM_STEP_NODELIST: 'n1', PMIX_NAMESPACE: 'slurm.pmix.5.0', PMIX_RANK: '2', ...uri });
  assert.equal(s.launcher, 'slurm');
  assert.deepEqual(s.pmix, { namespace: 'slurm.pmix.5.0', rank: 2 });
  assert.equal(detectLaunch({ RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: 'h', MASTER_PORT: '1', PMIX_NAMESPACE: 'n', PMIX_RANK: '0', ...uri }).pmix, undefined, 'env:// never uses PMIx');
});

test('keys belong to the rank their name ends with; job-wide keys to rank 0', () => {
  assert.equal(ownerOf('rails/12'), 12);
  assert.equal(ownerOf(JOB_KEY_KEY), 0);
});

/** A PMIx server for `size` ranks in one process: each rank gets a module bound to it. */
function fakeServer(size) {
  const data = new Map();
  let arrived = 0;
  let release = null;
  let gate = new Promise((r) => { release = r; });
  const err = (code) => Object.assign(new Error(code), { code });
  return (rank) => ({
    init: () => ({ rank, namespace: 'fake', size, localRank: rank, localSize: size, version: 'fake' }),
    put: (k, v) => data.set(`${rank}|${k}`, v),
    commit: () => {},
    fence: async () => {
      const g = gate;
      if (++arrived === size) { arrived = 0; const r = release; gate = new Promise((res) => { release = res; }); r(); }
      await g;
    },
    get: async (r, k) => { const v = data.get(`${r}|${k}`); if (v === undefined) throw err('PMIX_ERR_NOT_FOUND'); return v; },
    finalize: async () => {},
    onLost: () => {},
    version: () => 'fake',
  });
}

const launchOf = (rank, size, env = {}) => detectLaunch({ OMPI_COMM_WORLD_RANK: String(rank), OMPI_COMM_WORLD_SIZE: String(size), PMIX_NAMESPACE: 'fake', PMIX_RANK: String(rank), ...uri, ...env });

test('PmixStore: rank 0 shares a random job key; a RAILCOMM_JOB_KEY the user set wins', async () => {
  const server = fakeServer(3);
  const stores = await Promise.all([0, 1, 2].map((r) => PmixStore.open(server(r), launchOf(r, 3), 2000)));
  assert.match(stores[0].jobKey, /^[0-9a-f]{64}$/);
  assert.ok(stores.every((s) => s.jobKey === stores[0].jobKey));
  const server2 = fakeServer(2);
  const user = 'cd'.repeat(16);
  const withKey = await Promise.all([0, 1].map((r) => PmixStore.open(server2(r), launchOf(r, 2, { RAILCOMM_JOB_KEY: user }), 2000)));
  assert.ok(withKey.every((s) => s.jobKey === user));
  await stores[1].put('rails/1', '{"tcp":"x"}');
  assert.equal(await stores[2].get('rails/1', 1000), '{"tcp":"x"}');
});

test('PmixStore: a key nobody puts times out with ERR_TIMEOUT; a server that disagrees is ERR_BOOT', async () => {
  const server = fakeServer(1);
  const s = await PmixStore.open(server(0), launchOf(0, 1), 2000);
  const t0 = Date.now();
  await assert.rejects(s.get('rails/0', 300), (e) => e.code === 'ERR_TIMEOUT' && /RAILCOMM_CONNECT_TIMEOUT/.test(e.message));
  assert.ok(Date.now() - t0 < 2000);
  const other = fakeServer(4);
  await assert.rejects(PmixStore.open(other(2), launchOf(1, 4), 1000), (e) => e.code === 'ERR_BOOT' && /RAILCOMM_NO_PMIX/.test(e.message));
  const broken = { ...server(0), init: () => { throw Object.assign(new Error('PMIx_Init: UNREACHABLE'), { code: 'PMIX_ERR_UNREACH' }); } };
  await assert.rejects(PmixStore.open(broken, launchOf(0, 1), 1000), (e) => e.code === 'ERR_BOOT' && /PMIx server/.test(e.message));
});
