// The key-value service's wire format (src/boot/kv-wire.ts) on its own:
// every parser with the shapes it must take and the ones it must refuse, the
// handshake proof against HMAC-SHA256 computed here, and the line splitter's
// limits, chunk boundaries and stop.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import {
  KV_MAC_LABEL, MAX_LINE_BYTES, MAX_AUTH_LINE_BYTES, authMac, encode, parseNonce, parseAuth, parseRefused, parseAuthOk,
  parseRequest, parseEvent, parseReply, LineSplitter,
} from '../../dist/boot/kv-wire.js';

const NOT_OBJECTS = ['', 'nul', '{', '[1,2]', '"text"', '42', 'null', 'true'];

test('limits and the MAC label', () => {
  assert.equal(MAX_LINE_BYTES, 1 << 20);
  assert.equal(MAX_AUTH_LINE_BYTES, 1024);
  assert.equal(KV_MAC_LABEL, 'railcomm-kv');
});

test('authMac is HMAC-SHA256 keyed by the job key over the label, the nonce and the rank', () => {
  const key = 'ab'.repeat(32);
  const nonce = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
  const want = createHmac('sha256', Buffer.from(key, 'hex')).update('railcomm-kv').update(nonce).update('3').digest();
  assert.deepEqual(authMac(key, nonce, 3), want);
  assert.notDeepEqual(authMac(key, nonce, 4), want, 'the rank is bound in');
});

test('encode: one JSON object a line', () => {
  assert.equal(encode({ id: 1, op: 'fence' }), '{"id":1,"op":"fence"}\n');
});

test('parseNonce and parseAuth: hex of even, non-zero length; auth needs op, a rank id and a mac', () => {
  assert.deepEqual(parseNonce('{"nonce":"00ff"}'), Buffer.from([0, 255]));
  assert.deepEqual(parseNonce('{"nonce":"ABcd"}'), Buffer.from([0xab, 0xcd]), 'either case');
  for (const bad of ['{"nonce":""}', '{"nonce":"abc"}', '{"nonce":"zz"}', '{"nonce":"00 ff"}', '{"nonce":"x00f"}', '{"nonce":"00fx"}', '{"nonce":12}', '{}', ...NOT_OBJECTS]) {
    assert.equal(parseNonce(bad), undefined, bad);
  }
  assert.deepEqual(parseAuth('{"op":"auth","rank":0,"mac":"0a0b"}'), { rank: 0, mac: Buffer.from([10, 11]) });
  assert.deepEqual(parseAuth('{"op":"auth","rank":7,"mac":"ff"}'), { rank: 7, mac: Buffer.from([255]) });
  for (const bad of ['{"op":"put","rank":0,"mac":"0a"}', '{"rank":0,"mac":"0a"}', '{"op":"auth","rank":-1,"mac":"0a"}', '{"op":"auth","rank":1.5,"mac":"0a"}',
    '{"op":"auth","rank":"1","mac":"0a"}', '{"op":"auth","rank":9007199254740992,"mac":"0a"}', '{"op":"auth","rank":1,"mac":"0g"}', '{"op":"auth","rank":1}', ...NOT_OBJECTS]) {
    assert.equal(parseAuth(bad), undefined, bad);
  }
});

test('parseRefused and parseAuthOk', () => {
  assert.equal(parseRefused('{"refused":"wrong key"}'), 'wrong key');
  for (const bad of ['{"refused":3}', '{"ok":true}', ...NOT_OBJECTS]) assert.equal(parseRefused(bad), undefined, bad);
  assert.equal(parseAuthOk('{"ok":true}'), true);
  for (const bad of ['{"ok":1}', '{"ok":"true"}', '{"ok":false}', '{}', ...NOT_OBJECTS]) assert.equal(parseAuthOk(bad), false, bad);
});

test('parseRequest: every op with its fields; a bad one names why, with its id where readable', () => {
  const ok = (line, req) => assert.deepEqual(parseRequest(line), { req }, line);
  const bad = (line, want) => assert.deepEqual(parseRequest(line), want, line);
  ok('{"id":0,"op":"put","key":"k","value":"v"}', { id: 0, op: 'put', key: 'k', value: 'v' });
  ok('{"id":1,"op":"put","key":"","value":""}', { id: 1, op: 'put', key: '', value: '' });
  ok('{"id":2,"op":"get","key":"k"}', { id: 2, op: 'get', key: 'k' });
  ok('{"id":3,"op":"get","key":"k","timeoutMs":0}', { id: 3, op: 'get', key: 'k', timeoutMs: 0 });
  ok('{"id":4,"op":"get","key":"k","timeoutMs":2.5}', { id: 4, op: 'get', key: 'k', timeoutMs: 2.5 });
  ok('{"id":5,"op":"fence","extra":1}', { id: 5, op: 'fence' });
  ok('{"id":6,"op":"finalize"}', { id: 6, op: 'finalize' });
  ok('{"id":7,"op":"abort"}', { id: 7, op: 'abort', message: '' });
  ok('{"id":8,"op":"abort","message":"m","code":1}', { id: 8, op: 'abort', message: 'm', code: 1 });
  ok('{"id":9,"op":"abort","message":"m","code":255}', { id: 9, op: 'abort', message: 'm', code: 255 });
  ok('{"id":10,"op":"abort","message":7}', { id: 10, op: 'abort', message: '' });
  for (const line of NOT_OBJECTS) bad(line, { error: 'not a JSON object' });
  for (const line of ['{"op":"fence"}', '{"id":-1,"op":"fence"}', '{"id":1.5,"op":"fence"}', '{"id":"1","op":"fence"}']) bad(line, { error: 'missing or bad "id"' });
  bad('{"id":1,"op":"put","key":"k"}', { id: 1, error: 'put needs string "key" and "value"' });
  bad('{"id":1,"op":"put","value":"v"}', { id: 1, error: 'put needs string "key" and "value"' });
  bad('{"id":1,"op":"put","key":1,"value":"v"}', { id: 1, error: 'put needs string "key" and "value"' });
  bad('{"id":2,"op":"get"}', { id: 2, error: 'get needs a string "key"' });
  for (const t of ['-1', '"5"', 'null']) bad(`{"id":3,"op":"get","key":"k","timeoutMs":${t}}`, { id: 3, error: 'get "timeoutMs" must be a non-negative number' });
  for (const c of ['0', '256', '1.5', '"1"', 'null']) bad(`{"id":4,"op":"abort","code":${c}}`, { id: 4, error: 'abort "code" must be an integer in [1, 255]' });
  bad('{"id":5,"op":"drop"}', { id: 5, error: 'unknown op "drop"' });
  bad('{"id":5}', { id: 5, error: 'unknown op undefined' });
});

test('parseEvent and parseReply', () => {
  assert.deepEqual(parseEvent('{"event":"lost","rank":2,"why":"killed"}'), { event: 'lost', rank: 2, why: 'killed' });
  assert.deepEqual(parseEvent('{"event":"lost","rank":2}'), { event: 'lost', rank: 2, why: 'its connection ended' });
  assert.deepEqual(parseEvent('{"event":"lost","rank":2,"why":5}'), { event: 'lost', rank: 2, why: 'its connection ended' });
  for (const bad of ['{"event":"found","rank":2}', '{"event":"lost","rank":-2}', '{"event":"lost"}', ...NOT_OBJECTS]) assert.equal(parseEvent(bad), undefined, bad);
  // comm.abort under rank 0's service: the code must be an exit code a process can have.
  assert.deepEqual(parseEvent('{"event":"abort","rank":1,"code":7,"message":"comm.abort(7)"}'), { event: 'abort', rank: 1, code: 7, message: 'comm.abort(7)' });
  assert.deepEqual(parseEvent('{"event":"abort","rank":0,"code":255}'), { event: 'abort', rank: 0, code: 255, message: 'abort' });
  for (const bad of ['{"event":"abort","rank":1,"code":0}', '{"event":"abort","rank":1,"code":256}', '{"event":"abort","rank":1,"code":1.5}', '{"event":"abort","rank":1}', '{"event":"abort","rank":-1,"code":3}']) {
    assert.equal(parseEvent(bad), undefined, bad);
  }

  assert.deepEqual(parseReply('{"id":1,"ok":true}'), { id: 1, ok: true });
  assert.deepEqual(parseReply('{"id":1,"ok":true,"value":"v"}'), { id: 1, ok: true, value: 'v' });
  assert.deepEqual(parseReply('{"id":1,"ok":false,"error":"e"}'), { id: 1, ok: false, error: 'e' });
  assert.deepEqual(parseReply('{"id":1,"ok":false}'), { id: 1, ok: false, error: 'unspecified error' });
  assert.deepEqual(parseReply('{"id":1,"ok":false,"error":3}'), { id: 1, ok: false, error: 'unspecified error' });
  for (const bad of ['{"id":1,"ok":true,"value":5}', '{"id":1,"ok":"yes"}', '{"id":1}', '{"ok":true}', '{"id":-1,"ok":true}', ...NOT_OBJECTS]) {
    assert.equal(parseReply(bad), undefined, bad);
  }
});

/** A splitter recording what it hands out. */
function splitter(max) {
  const got = { lines: [], tooLong: 0 };
  const s = new LineSplitter(max, (l) => got.lines.push(l), () => got.tooLong++);
  return { s, got };
}

test('LineSplitter: lines across and within chunks, split anywhere, multi-byte characters intact (property)', () => {
  fc.assert(fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 20, size: 'max' }).map((x) => x.replace(/\n/g, '')), { maxLength: 8, size: 'max' }), fc.array(fc.nat(), { maxLength: 10, size: 'max' }), (lines, cuts) => {
    const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');
    const at = [...new Set(cuts.map((c) => (bytes.length === 0 ? 0 : c % bytes.length)))].sort((a, b) => a - b);
    const { s, got } = splitter(1000);
    let from = 0;
    for (const c of [...at, bytes.length]) { assert.equal(s.push(bytes.subarray(from, c)), true); from = c; }
    assert.deepEqual(got.lines, lines);
    assert.equal(got.tooLong, 0);
  }), { numRuns: 300 });
});

test('LineSplitter: a line of exactly maxBytes passes, one more byte overflows once, and nothing runs after', () => {
  {
    const { s, got } = splitter(4);
    assert.equal(s.push(Buffer.from('abcd\n\nab')), true);
    assert.deepEqual(got.lines, ['abcd', '']);
    assert.equal(s.push(Buffer.from('cd\n')), true, 'held 2 + 2 more: exactly the limit');
    assert.deepEqual(got.lines, ['abcd', '', 'abcd']);
    assert.equal(s.push(Buffer.from('ab')), true);
    assert.equal(s.push(Buffer.from('cd')), true, 'held, unfinished, exactly the limit');
    assert.equal(s.push(Buffer.from('e')), false, 'a fifth byte held: too long');
    assert.equal(got.tooLong, 1);
    assert.equal(s.push(Buffer.from('x\ny\n')), false, 'stopped for good');
    assert.deepEqual(got.lines, ['abcd', '', 'abcd']);
    assert.equal(got.tooLong, 1);
  }
  {
    const { s, got } = splitter(4);
    assert.equal(s.push(Buffer.from('ok\nabcde\nlater\n')), false, 'a finished line past the limit');
    assert.deepEqual(got.lines, ['ok'], 'the lines after it in the chunk do not run');
    assert.equal(got.tooLong, 1);
  }
  {
    const { s, got } = splitter(4);
    assert.equal(s.push(Buffer.from('ab')), true);
    assert.equal(s.push(Buffer.from('cde\n')), false, 'held + the rest of the line past the limit');
    assert.equal(got.tooLong, 1);
  }
});

test('LineSplitter: stop() from inside a line handler ends the chunk there and drops what is held', () => {
  const got = [];
  const s = new LineSplitter(100, (l) => { got.push(l); if (l === 'stop') s.stop(); }, () => assert.fail('not too long'));
  assert.equal(s.push(Buffer.from('a\nstop\nb\npartial')), false);
  assert.deepEqual(got, ['a', 'stop']);
  assert.equal(s.push(Buffer.from('\nc\n')), false);
  assert.deepEqual(got, ['a', 'stop'], 'nothing after stop, not even the held part');
  // The limit is a property a caller may raise after authentication.
  const t = splitter(2);
  t.s.maxBytes = 10;
  assert.equal(t.s.push(Buffer.from('0123456789\n')), true);
  assert.deepEqual(t.got.lines, ['0123456789']);
});
