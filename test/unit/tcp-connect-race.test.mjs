// The tcp rail's dial: when both ranks want a connection at once, a rank
// proving the peer's connection to it must not dial the peer meanwhile (each
// side could then keep the connection the other dropped, and what was
// written on it be lost); a peer that answers its handshake late is waited
// for (a dial nothing answers: test/rails/tcp-rail.test.mjs). A real TcpRail on loopback; the
// peer is this test speaking the handshake by hand, so the moments are exact.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { TcpRail } from '../../dist/rail/tcp/rail.js';
import { splitAddress } from '../../dist/rail/tcp/connect.js';
import { CHALLENGE_BYTES, FRAME_HEADER, HELLO_BYTES, HS_CHALLENGE, PROOF_BYTES, decodeChallenge, decodeHello, decodeProof, encodeChallenge, encodeHello, encodeProof, idBytes } from '../../dist/rail/tcp/wire.js';
import { mac, newJobKey, nonce } from '../../dist/core/auth.js';
import { resolveParams } from '../../dist/core/params.js';

const quiet = new Proxy({}, { get: () => () => undefined });

/** Read exactly n bytes from a socket. */
async function readBytes(s, n) {
  let got = Buffer.alloc(0);
  while (got.length < n) {
    const chunk = s.read();
    if (chunk === null) { await once(s, 'readable'); continue; }
    got = Buffer.concat([got, chunk]);
  }
  if (got.length > n) s.unshift(got.subarray(n));
  return got.subarray(0, n);
}

test('tcp: a rank proving the peer\'s connection does not dial the peer meanwhile; its send goes on that connection', async () => {
  const jobId = 77, jobKey = newJobKey();
  const A = (BigInt(jobId) << 32n) | 0n, B = (BigInt(jobId) << 32n) | 1n; // A has the lower id
  const failures = [];
  const rail = await TcpRail.open({ component: 'tcp', name: 'lo', kind: 'loopback', address: '127.0.0.1' }, {
    self: A, jobId, jobKey, params: resolveParams({}, {}), log: quiet,
    upcalls: { am: [], ready() {}, failed(_ep, err) { failures.push(err.message); }, accepted() {}, activity() {} },
  });
  // Where A would dial B: a listener that only counts.
  let dialled = 0;
  const bListener = net.createServer((s) => { dialled++; s.destroy(); });
  await new Promise((r) => bListener.listen(0, '127.0.0.1', r));
  const bAddress = `127.0.0.1:${bListener.address().port}`;
  const [host, port] = splitAddress(rail.address());
  try {
    // B connects first and says HELLO; A answers with its CHALLENGE: A is proving B's connection now.
    const raw = net.connect({ host, port: Number(port) });
    await once(raw, 'connect');
    const bNonce = nonce();
    raw.write(encodeHello({ jobId, from: B, to: A, nonce: bNonce }));
    const ch = decodeChallenge(await readBytes(raw, CHALLENGE_BYTES));
    assert.equal(typeof ch, 'object');
    assert.equal(ch.reject, 0);
    const ids = idBytes(B, A);
    assert.ok(ch.mac.equals(mac(jobKey, 'railcomm-tcp-A', bNonce, ch.nonce, ids)));
    // Now A wants to send to B.
    const ep = rail.endpoint(B, bAddress);
    const hdr = new Uint8Array([1, 2, 3, 4]);
    ep.sendCopy(9, hdr, 4, null);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(dialled, 0, 'A dialled B while proving B\'s own connection');
    // B proves itself: the connection is A's, and the frame A staged arrives on it.
    raw.write(encodeProof(mac(jobKey, 'railcomm-tcp-C', ch.nonce, bNonce, ids)));
    const frame = await readBytes(raw, FRAME_HEADER + 4);
    assert.equal(frame[3], 9, 'the frame\'s active message id');
    assert.deepEqual([...frame.subarray(FRAME_HEADER)], [1, 2, 3, 4]);
    assert.equal(dialled, 0);
    assert.deepEqual(failures, []);
    raw.on('end', () => raw.end());
    raw.resume();
    await rail.close();
  } finally {
    bListener.close();
  }
});

test('tcp: a HELLO that never proves the key holds our own connection attempt back only a moment', async () => {
  const jobId = 78, jobKey = newJobKey();
  const A = (BigInt(jobId) << 32n) | 0n, B = (BigInt(jobId) << 32n) | 1n;
  const rail = await TcpRail.open({ component: 'tcp', name: 'lo', kind: 'loopback', address: '127.0.0.1' }, {
    self: A, jobId, jobKey, params: resolveParams({}, { RAILCOMM_CONNECT_TIMEOUT: '1500' }), log: quiet,
    upcalls: { am: [], ready() {}, failed() {}, accepted() {}, activity() {} },
  });
  let dialledAt = 0;
  const held = [];
  const bListener = net.createServer((s) => { dialledAt ||= performance.now(); held.push(s); });
  await new Promise((r) => bListener.listen(0, '127.0.0.1', r));
  const [host, port] = splitAddress(rail.address());
  const stranger = net.connect({ host, port: Number(port) });
  try {
    await once(stranger, 'connect');
    // Someone who claims to be B but will never prove it.
    stranger.write(encodeHello({ jobId, from: B, to: A, nonce: nonce() }));
    await readBytes(stranger, CHALLENGE_BYTES);
    const t0 = performance.now();
    rail.endpoint(B, `127.0.0.1:${bListener.address().port}`).sendCopy(9, new Uint8Array(4), 4, null);
    while (dialledAt === 0 && performance.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 20));
    assert.ok(dialledAt > 0, 'A never dialled B while a stranger\'s handshake was pending');
    assert.ok(dialledAt - t0 < 1500, `A dialled B only after ${Math.round(dialledAt - t0)} ms`);
  } finally {
    stranger.destroy();
    for (const s of held) s.destroy();
    bListener.close();
    await rail.close();
  }
});

test('tcp: a peer whose kernel took the connection but whose rank answers late (a long computation) is waited for', async () => {
  const jobId = 80, jobKey = newJobKey();
  const A = (BigInt(jobId) << 32n) | 0n, B = (BigInt(jobId) << 32n) | 1n;
  const failures = [];
  const rail = await TcpRail.open({ component: 'tcp', name: 'lo', kind: 'loopback', address: '127.0.0.1' }, {
    self: A, jobId, jobKey, params: resolveParams({}, { RAILCOMM_CONNECT_TIMEOUT: '5000', RAILCOMM_HANDSHAKE_TIMEOUT: '300' }), log: quiet,
    upcalls: { am: [], ready() {}, failed(_ep, err) { failures.push(err.message); }, accepted() {}, activity() {} },
  });
  // B: takes the connection, says nothing for 1.5 s (five handshake timeouts), then answers as a rank does.
  let conns = 0;
  const got = new Promise((resolve, reject) => {
    const b = net.createServer(async (s) => {
      conns++;
      try {
        const hello = decodeHello(await readBytes(s, HELLO_BYTES));
        await new Promise((r) => setTimeout(r, 1500));
        const bNonce = nonce();
        const ids = idBytes(A, B);
        s.write(encodeChallenge(HS_CHALLENGE, 0, bNonce, mac(jobKey, 'railcomm-tcp-A', hello.nonce, bNonce, ids)));
        const proof = decodeProof(await readBytes(s, PROOF_BYTES));
        assert.ok(Buffer.isBuffer(proof) && proof.equals(mac(jobKey, 'railcomm-tcp-C', bNonce, hello.nonce, ids)));
        resolve({ frame: await readBytes(s, FRAME_HEADER + 4), s, b });
      } catch (e) { reject(e); }
    });
    b.listen(0, '127.0.0.1', () => rail.endpoint(B, `127.0.0.1:${b.address().port}`).sendCopy(9, new Uint8Array([5, 6, 7, 8]), 4, null));
  });
  const { frame, s, b } = await got;
  try {
    assert.equal(frame[3], 9);
    assert.deepEqual([...frame.subarray(FRAME_HEADER)], [5, 6, 7, 8]);
    assert.equal(conns, 1, 'the dial was given up on and made again');
    assert.deepEqual(failures, []);
  } finally {
    s.destroy();
    b.close();
    await rail.close();
  }
});
