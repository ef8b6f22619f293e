// comm.alloc over shm: large sends from it are read by the receiver from the
// sender's registered segment (no handshake), the receiver keeps the mapping
// in its LRU cache, and when the sender frees the buffer (garbage collected)
// the name goes and the receiver drops its mapping.
//   RAILCOMM_RAILS=shm,self railcomm run -n 2 node --expose-gc test/jobs/shm-alloc.mjs

import { init } from '../../dist/index.js';
import { runCases, assert, pattern, samePattern } from './harness.mjs';
import { shmJobPrefix } from '../../dist/native/addon.js';
import { existsSync } from 'node:fs';

const comm = await init();
const shm = () => comm.world.ctx.rails.find((r) => r.component === 'shm');
const N = 1 << 20;
const prefix = shmJobPrefix(comm.world.ctx.launch.jobId, comm.world.ctx.launch.jobKey);
let buf = null;

const failed = await runCases(comm, [
  ['large sends from comm.alloc are read from the sender\'s segment, mapped once', async () => {
    if (comm.rank === 0) {
      buf = comm.alloc(N);
      assert.ok(buf.buffer instanceof SharedArrayBuffer);
      assert.ok(existsSync(`/dev/shm/${prefix}0-m1`), 'a registered segment');
      for (let i = 0; i < 3; i++) { buf.set(pattern(N, i)); await comm.send(buf, 1, i); }
      assert.equal(comm.stats().protocol.rgetMsgs, 0);
    } else {
      const got = new Uint8Array(N);
      for (let i = 0; i < 3; i++) { await comm.recv(got, 0, i); assert.ok(samePattern(got, N, i), `message ${i}`); }
      assert.equal(comm.stats().protocol.rgetMsgs, 3, 'all three read directly (no handshake first)');
      const cache = shm().remoteSegments;
      assert.equal(cache.misses, 1, 'mapped once');
      assert.equal(cache.hits, 2, 'then found in the cache');
      assert.equal(cache.size, 1);
    }
  }],
  ['a freed (collected) buffer: its name goes and the receiver drops its mapping', async () => {
    if (comm.rank === 0) {
      buf = null;
      for (let i = 0; i < 20 && existsSync(`/dev/shm/${prefix}0-m1`); i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 20)); }
      assert.ok(!existsSync(`/dev/shm/${prefix}0-m1`), 'the name is removed once the buffer is collected');
      await comm.send(new Uint8Array(1), 1, 9);
    } else {
      await comm.recv(new Uint8Array(1), 0, 9);
      // The FREE control frame travels on the same ring, before our message.
      assert.equal(shm().remoteSegments.size, 0, 'mapping invalidated by the owner');
    }
  }],
]);
await comm.finalize();
process.exit(failed > 0 ? 1 : 0);
