// The ofi rail's pure logic: its address format (a context of a scalable
// endpoint rides in a seventh field) and how many contexts a rank's rail asks
// of a shared scalable endpoint (src/rail/ofi/wire.ts, rail.ts sepContexts),
// the libfabric settings the rail defaults (env-defaults.ts), and where its
// endpoint is left open at close once a peer was dropped (close-hazard.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeAddress, decodeAddress } from '../../dist/rail/ofi/wire.js';
import { sepContexts } from '../../dist/rail/ofi/rail.js';
import { closeMayCrash } from '../../dist/rail/ofi/close-hazard.js';

const base = { provider: 'sockets', domain: 'lo', host: 'h1', pid: 4242, name: Buffer.from([2, 0, 1, 2, 127, 0, 0, 1]) };

test('ofi address: a plain endpoint has six fields, a context of a scalable endpoint seven; both decode to what was encoded', () => {
  const plain = encodeAddress({ ...base, ctx: -1 });
  assert.equal(plain.split('|').length, 6);
  assert.deepEqual(decodeAddress(plain), { ...base, ctx: -1 });
  for (const ctx of [0, 3, 15, 255]) {
    const a = encodeAddress({ ...base, ctx });
    assert.equal(a.split('|').length, 7);
    assert.deepEqual(decodeAddress(a), { ...base, ctx });
  }
});

test('ofi address: a malformed context field is refused (null), never read as 0', () => {
  const plain = encodeAddress({ ...base, ctx: -1 });
  for (const bad of ['', '-1', '256', '1.5', 'x', '0x1', '1000']) assert.equal(decodeAddress(`${plain}|${bad}`), null, JSON.stringify(bad));
  assert.equal(decodeAddress(`${plain}|1|2`), null);
});

test('sepContexts: one context per thread rank where the provider offers several; none for one rank, RAILCOMM_OFI_SEP=0 or a provider of one context', () => {
  const sockets = { maxTxContexts: 16, maxRxContexts: 16 };
  const on = { ofiSep: true, ofiContexts: 0 };
  assert.equal(sepContexts(on, sockets, 4), 4);
  assert.equal(sepContexts(on, sockets, 1), 0, 'a process of one rank: a plain endpoint');
  assert.equal(sepContexts(on, sockets, 64), 16, 'capped at the provider\'s maximum');
  assert.equal(sepContexts({ ofiSep: false, ofiContexts: 0 }, sockets, 4), 0);
  assert.equal(sepContexts(on, { maxTxContexts: 1, maxRxContexts: 1 }, 4), 0, 'tcp;ofi_rxm, shm, udp;ofi_rxd here');
  assert.equal(sepContexts(on, { maxTxContexts: 16, maxRxContexts: 2 }, 4), 2, 'the smaller of transmit and receive');
  assert.equal(sepContexts({ ofiSep: true, ofiContexts: 2 }, sockets, 4), 2, 'RAILCOMM_OFI_CONTEXTS: two scalable endpoints for four ranks');
  assert.equal(sepContexts({ ofiSep: true, ofiContexts: 3 }, sockets, 1), 3, 'asked for: a process of one rank too');
  assert.equal(sepContexts({ ofiSep: true, ofiContexts: 1 }, sockets, 4), 0);
});

test('libfabric env defaults: rxm\'s buffer holds a whole eager frame (payload of the eager limit, head, largest header); a value the user set is kept', async () => {
  const { rxmBufferFor, setOfiEnvDefaults } = await import('../../dist/rail/ofi/env-defaults.js');
  const { FRAME_HEAD, HEADER_MAX, COPY_MAX } = await import('../../dist/rail/ofi/wire.js');
  assert.equal(rxmBufferFor({}), 16384 + FRAME_HEAD + HEADER_MAX);
  assert.equal(rxmBufferFor({ RAILCOMM_EAGER_LIMIT: '32k' }), 32768 + FRAME_HEAD + HEADER_MAX);
  assert.equal(rxmBufferFor({ RAILCOMM_EAGER_LIMIT: '1024' }), 16384, 'never below libfabric\'s own default');
  assert.equal(rxmBufferFor({ RAILCOMM_EAGER_LIMIT: '1m' }), COPY_MAX + FRAME_HEAD + HEADER_MAX, 'the rail copies at most COPY_MAX eagerly');
  assert.equal(rxmBufferFor({ RAILCOMM_EAGER_LIMIT: 'lots' }), 16384 + FRAME_HEAD + HEADER_MAX, 'a bad setting: the default (reported where it is used)');
  const env = { FI_OFI_RXM_BUFFER_SIZE: '8192' };
  setOfiEnvDefaults(env);
  assert.equal(env.FI_OFI_RXM_BUFFER_SIZE, '8192');
  assert.equal(env.FI_SOCKETS_PE_WAITTIME, '0');
  assert.equal(env.FI_SOCKETS_MAX_BUF_SZ, String(1024 * 1024), 'sockets: fixed 1 MiB socket buffers (a header left half-read never shuts the receive window)');
  assert.equal(env.FI_OFI_RXD_MAX_UNACKED, '32', 'udp;ofi_rxd: 32 unacknowledged packets per peer (env-defaults.ts)');
  const mine = { FI_OFI_RXD_MAX_UNACKED: '128' };
  setOfiEnvDefaults(mine);
  assert.equal(mine.FI_OFI_RXD_MAX_UNACKED, '128', 'a value the user set is kept');
  const fresh = {};
  setOfiEnvDefaults(fresh);
  assert.equal(fresh.FI_OFI_RXM_BUFFER_SIZE, String(16384 + FRAME_HEAD + HEADER_MAX));
});

test('ofi close hazard: tcp;ofi_rxm before libfabric 1.18 only (its tcp provider completes a half-received read twice at close)', () => {
  assert.equal(closeMayCrash('tcp;ofi_rxm', '1.17'), true);
  assert.equal(closeMayCrash('tcp;ofi_rxm', '1.5'), true);
  assert.equal(closeMayCrash('tcp;ofi_rxm', '1.18'), false, 'fixed in 1.18.0 (commit a74ea0fcd)');
  assert.equal(closeMayCrash('tcp;ofi_rxm', '2.0'), false);
  assert.equal(closeMayCrash('tcp;ofi_rxm', ''), true, 'a version it cannot read: the safe side');
  for (const p of ['sockets', 'shm', 'udp;ofi_rxd', 'verbs;ofi_rxm']) assert.equal(closeMayCrash(p, '1.17'), false, p);
});
