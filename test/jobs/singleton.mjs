// A program started with plain `node`: a world of one rank; sends to itself
// work, other ranks do not exist, and it exits on its own after finalize.
import { init, ANY_SOURCE } from 'railcomm';
import assert from 'node:assert/strict';

const comm = await init();
assert.equal(comm.rank, 0);
assert.equal(comm.size, 1);
assert.equal(await init(), comm, 'init() again returns the same world');
const big = new Uint8Array(3 << 20).map((_, i) => i & 0xff);
const r = comm.isend(big, 0, 4);
await comm.sendObject({ hello: 'self' }, 0, 5);
const o = await comm.recvObject(ANY_SOURCE, 5);
assert.deepEqual(o.value, { hello: 'self' });
const back = new Uint8Array(3 << 20);
await comm.recv(back, 0, 4);
await r.wait();
assert.deepEqual(back, big);
try { comm.isend(big, 1, 0); assert.fail('rank 1 does not exist'); } catch (e) { assert.equal(e.code, 'ERR_RANK'); }
await comm.barrier();
await comm.finalize();
console.log('SINGLETON ok');
