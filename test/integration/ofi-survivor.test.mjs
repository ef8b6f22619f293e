// A rank whose ofi peer (tcp;ofi_rxm) is SIGKILLed while it streams large
// messages to it: libfabric 1.17's ofi_rxm crashes the survivor (SIGSEGV in
// fi_recv, reposting a receive slot) when the frames in flight were ofi_rxm
// SAR messages (16-128 KiB frames: 15 survivors in 20 with 96 messages of
// 48 KiB in flight, 8 in 25 streaming 16 MiB with RAILCOMM_RDMA_RGET_MIN=0):
// it keeps a dead connection's unexpected segments and looks that freed
// connection up when a receive matches one. railcomm leaves libfabric's
// default (its fix costs each rank some 180 MB); README gives the setting
// that avoids it (every frame an rxm eager message), and this checks that
// with it the survivor gets ERR_PEER_FAILED, finalizes and exits 0. Ranks
// wired up by hand (env://, no launcher to stop the survivor), 10 runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { jobScript } from './jobs.mjs';
import { need, report } from '../helpers/requires.mjs';
import { loadOfi, ofiWhy } from '../../dist/rail/ofi/native.js';
import { ofiComponent } from '../../dist/rail/ofi/component.js';
import { resolveParams } from '../../dist/core/params.js';

const devices = loadOfi() === null ? [] : ofiComponent.queryDevices(resolveParams());
const why = loadOfi() === null ? ofiWhy() : devices.some((d) => d.name.startsWith('tcp;ofi_rxm/')) ? null : 'libfabric offers no tcp;ofi_rxm here';
const n = need('ofi', why);
report('ofi survivor test', n);

const clean = Object.fromEntries(Object.keys(process.env).filter((k) => /^(RAILCOMM_|OMPI_|PMIX_|SLURM_|PMI_|FI_)|^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT)$/.test(k)).map((k) => [k, undefined]));

function freePort() {
  return new Promise((resolve) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); }); });
}

/** One env:// job of 2 ranks; resolves with each rank's exit and output. */
async function pair(killMs) {
  const port = await freePort();
  return Promise.all([0, 1].map((r) => new Promise((resolve) => {
    const c = spawn(process.execPath, [jobScript('ofi-stream-killed.mjs')], {
      env: { ...process.env, ...clean, RANK: String(r), WORLD_SIZE: '2', LOCAL_RANK: String(r), LOCAL_WORLD_SIZE: '2',
        MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), RAILCOMM_JOB_KEY: 'cd'.repeat(16),
        RAILCOMM_RAILS: 'ofi,self', RAILCOMM_OFI_PROVIDERS: 'tcp', RAILCOMM_RDMA_RGET_MIN: '0', KILL_MS: String(killMs),
        // README, ofi: the setting that keeps a survivor of libfabric 1.17's ofi_rxm alive.
        FI_OFI_RXM_BUFFER_SIZE: '131348', FI_OFI_RXM_MSG_RX_SIZE: '1024' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.stderr.on('data', (d) => { out += d; });
    const t = setTimeout(() => { out += '\n(killed after 30 s)'; c.kill('SIGKILL'); }, 30_000);
    c.on('close', (code, signal) => { clearTimeout(t); resolve({ rank: r, code, signal, out }); });
  })));
}

test('tcp;ofi_rxm with README\'s setting for libfabric 1.17: a peer SIGKILLed while streaming 16 MiB messages in DATA frames fails the receiver with ERR_PEER_FAILED, no crash, 10 runs', n, async () => {
  for (let i = 0; i < 10; i++) {
    const [survivor, victim] = await pair(300 + 60 * i);
    assert.equal(victim.signal, 'SIGKILL', `run ${i}: the sender was killed:\n${victim.out}`);
    assert.equal(survivor.signal, null, `run ${i}: the receiver died of ${survivor.signal}:\n${survivor.out.slice(-1500)}`);
    assert.equal(survivor.code, 0, `run ${i}: the receiver exited with ${survivor.code}:\n${survivor.out.slice(-1500)}`);
    assert.match(survivor.out, /RESULT ERR_PEER_FAILED/, `run ${i}`);
  }
});
