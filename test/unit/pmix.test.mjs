// PMIx wire-up without a PMIx server: the loader's fallback (module missing or
// broken -> null and why), launcher detection of PMIx variables, and PmixStore
// over a fake module (job key sharing, get retries and timeouts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPmixFrom } from '../../dist/boot/pmix.js';
import { PmixStore, ownerOf, JOB_KEY_KEY } from '../../dist/boot/pmix-store.js';
import { detectLaunch } from '../../dist/boot/launch-env.js';

test('loader: a missing module gives null and says why (the build log first line when there is one)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'railcomm-pmix-'));
  try {
    const file = join(dir, 'build', 'Release', 'railcomm_pmix.node');
    const a = loadPmixFrom(file);
    assert.equal(a.mod, null);
    assert.match(a.why, /PMIx module not built .*libpmix-dev/);
    writeFileSync(join(dir, 'build-log.txt'), 'not built: pkg-config does not find pmix (install libpmix-dev and pkg-config)\n...');
    assert.match(loadPmixFrom(file).why, /pkg-config does not find pmix/);
    const junk = join(dir, 'junk.node');
    writeFileSync(junk, 'not a shared object');
    const b = loadPmixFrom(junk);
    assert.equal(b.mod, null);
    assert.match(b.why, /PMIx module failed to load/);
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
