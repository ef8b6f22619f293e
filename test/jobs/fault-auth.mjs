// Connections that do not know the job key, random bytes, and malformed frames
// from an authenticated peer. Refused or closed, counted, the job goes on.
//   railcomm run -n 3 test/jobs/fault-auth.mjs
// Rank 2 plays the attacker with raw sockets.

import net from 'node:net';
import { createHmac, randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { init } from '../../dist/index.js';

const comm = await init();
const { rank } = comm;
const world = comm.world; // internal: wire-up store and rails, for the attack only
const addrOf = async (r) => [JSON.parse(await world.kv.get(`rails/${r}`, 5000)).tcp].flat()[0];
const jobId = Number(process.env.RAILCOMM_JOB_ID);
const id = (r) => (BigInt(jobId) << 32n) | BigInt(r);
const key = Buffer.from(process.env.RAILCOMM_JOB_KEY, 'hex');
const mac = (...parts) => { const h = createHmac('sha256', key); for (const p of parts) h.update(p); return h.digest(); };

function hello(from, to, job = jobId) {
  const b = Buffer.alloc(40);
  b.writeUInt16LE(0x4852, 0); b[2] = 1; b[3] = 1;
  b.writeUInt32LE(job, 4); b.writeBigUInt64LE(from, 8); b.writeBigUInt64LE(to, 16);
  randomBytes(16).copy(b, 24);
  return b;
}

/** Connect, write `first`, then let `step(data, sock)` answer; resolves when the peer closes. */
function attack(address, first, step = () => {}) {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port }, () => s.write(first));
    let got = Buffer.alloc(0);
    s.on('data', (d) => { got = Buffer.concat([got, d]); step(got, s); });
    s.on('error', () => {});
    s.on('close', () => resolve(got));
    setTimeout(() => { s.destroy(); reject(new Error('the rank did not close the connection')); }, 15000).unref();
  });
}

/** Full handshake with the real key as rank `from`, then `after` raw bytes (a malformed frame). */
function authedThenGarbage(address, from, to, after) {
  const h = hello(id(from), id(to));
  const nonceC = h.subarray(24, 40);
  const ids = Buffer.alloc(16); ids.writeBigUInt64LE(id(from), 0); ids.writeBigUInt64LE(id(to), 8);
  return attack(address, h, (got, s) => {
    if (got.length < 56 || s.sentProof) return;
    s.sentProof = true;
    const nonceA = got.subarray(8, 24);
    const proof = Buffer.alloc(40); proof.writeUInt16LE(0x4852, 0); proof[2] = 1; proof[3] = 3;
    mac('railcomm-tcp-C', nonceA, nonceC, ids).copy(proof, 8);
    s.write(Buffer.concat([proof, after]));
  });
}

const out = [];
if (rank === 1) {
  // Waits on rank 2; the malformed stream claiming to be rank 2 must fail it.
  const pending = comm.recv(new Uint8Array(8), 2, 9).then(() => 'resolved (wrong)', (e) => e.code);
  await comm.recv(new Uint8Array(1), 0, 20);
  out.push(`recv from the peer whose stream was malformed: ${await pending}`);
  const st = comm.stats();
  out.push(`rank 1 badFrames ${st.rails['tcp:lo'].badFrames}`);
  await comm.send(new Uint8Array(1), 0, 21);
} else if (rank === 2) {
  const a0 = await addrOf(0);
  await attack(a0, randomBytes(200));
  out.push('random bytes: closed');
  await attack(a0, hello(id(2), id(0)), (got, s) => {
    if (got.length >= 56 && !s.sentProof) { s.sentProof = true; const p = Buffer.alloc(40); p.writeUInt16LE(0x4852, 0); p[2] = 1; p[3] = 3; randomBytes(32).copy(p, 8); s.write(p); }
  });
  out.push('wrong key: closed');
  const answer = await attack(a0, hello(id(2), id(0), (jobId + 1) >>> 0));
  out.push(`wrong job: ${answer[3] === 4 ? 'rejected' : 'not rejected'}`);
  const garbage = Buffer.alloc(12, 0xee);
  await authedThenGarbage(await addrOf(1), 2, 1, garbage);
  out.push('malformed frame after auth: closed');
  // The real rank 2 still talks to rank 0.
  await comm.send(new Int32Array([42]), 0, 10);
} else {
  const v = new Int32Array(1);
  await comm.recv(v, 2, 10);
  assert.equal(v[0], 42);
  out.push(`rank 0 refused ${comm.stats().rails['tcp:lo'].refused}`);
  await comm.send(new Uint8Array(1), 1, 20);
  await comm.recv(new Uint8Array(1), 1, 21);
  out.push('ranks 0 and 1 still talk: ok');
}
for (const l of out) console.log(`RESULT ${l}`);
await comm.finalize();
