// Unit and property tests of the parameter registry (src/core/params.ts), size
// parsing (src/core/bytes.ts) and 64-bit endpoint ids (src/core/ids.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { PARAMS, ENV_SETTINGS, resolveParams, envName, describeParams } from '../../dist/core/params.js';
import { parseSize, asBytes, isDetached } from '../../dist/core/bytes.js';
import { endpointId, jobOf, rankOf, formatId } from '../../dist/core/ids.js';
import { RailcommError } from '../../dist/core/errors.js';

/** assert.throws for a RailcommError ERR_INVALID_ARG whose message matches `re`. */
function throwsInvalid(fn, re) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof RailcommError, `a RailcommError, got ${e}`);
    assert.equal(e.code, 'ERR_INVALID_ARG');
    if (re) assert.match(e.message, re);
    return true;
  });
}

// ---- resolveParams ---------------------------------------------------------

/**
 * Every parameter's default, written out here (README's Parameters table where
 * it lists one; 0 and '' mean "decided at run time": the layout, the device's
 * MTU, each ring rail's crossover). A default that changes must change here and
 * in README, on purpose.
 */
const DEFAULTS = {
  rails: '', tcpDevices: '', tcpPort: 0,
  eagerLimit: 16384, rndvThreshold: 65536, rndvChunk: 1 << 20, eagerCredits: 4 << 20, sendBuffer: 8 << 20,
  maxEagerRails: 1, maxRndvRails: 2, laneTimeout: 3000,
  tcpMaxFrame: 4 << 20, tcpRecvBuffer: 256 << 10, tcpSendHighWater: 16 << 20, tcpPeerTimeout: 60,
  connectTimeout: 30000, handshakeTimeout: 5000,
  udpMtu: 0, udpTinyMtu: 768, udpWindow: 4096, udpRtoMs: 100, udpAckDelay: 1, udpPeerTimeout: 300, udpFaults: '', udpChecksum: true, udpAuth: true, udpSocketBuffer: 4 << 20,
  spinUs: 20000, hangTimeout: 60000,
  tbsmRing: 1 << 20, shmRing: 1 << 20, shmRndvThreshold: 0, shmSingleCopy: true,
  collAllreduceRing: 256 << 10, collAllgatherRing: 64 << 10, collGatherBinomial: 4 << 10, collAlltoallPairwise: 32 << 10,
  collSharedMax: 1 << 20, collSpinUs: 20000, collSharedSplit: 32 << 10, collSharedSlot: 256 << 10, collSharedFlat: 8, bind: 'none', rdmaRgetMin: 64 << 10,
  check: false,
  cudaIpc: true, cudaEager: 16 << 10, cudaIpcCache: 64, cudaReduceMin: 256 << 10,
  log: 'warn', protoInfo: false, stats: false, statsFormat: 'table',
  ofiProviders: '', ofiContexts: 0, ofiSep: true, ofiWaitFd: true,
};

test('resolveParams: every parameter gets the default written out here with no options and an empty environment', () => {
  const p = resolveParams({}, {});
  assert.deepEqual(Object.keys(p).sort(), Object.keys(DEFAULTS).sort(), 'the parameters, no more and no fewer');
  for (const [key, want] of Object.entries(DEFAULTS)) assert.equal(p[key], want, key);
});

test("README's Parameters table gives the same defaults and names only parameters that exist", () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const rows = [...readme.matchAll(/^\| `(RAILCOMM_[A-Z0-9_]+)` \| ([^|]+) \|/gm)].map((m) => [m[1], m[2].trim()]);
  assert.ok(rows.length >= 30, `README's table has ${rows.length} rows`);
  // Read from the environment by railcomm run, the rings, the loaders or npm install, not through
  // resolveParams (their rows: test/integration/docs.test.mjs).
  const elsewhere = new Set(ENV_SETTINGS.map((e) => e.name));
  const byEnv = new Map(Object.keys(DEFAULTS).map((k) => [envName(k), k]));
  const text = (t) => {
    const size = /^(\d+) (KiB|MiB)$/.exec(t);
    if (size) return Number(size[1]) * (size[2] === 'KiB' ? 1024 : 1 << 20);
    if (/^\d+( \(off\))?$/.test(t)) return Number.parseInt(t, 10);
    if (/^\(.*\)$/.test(t) || t === 'lo on one host') return '';
    if (t === 'device MTU - 28') return 0;
    return t;
  };
  for (const [env, shown] of rows) {
    if (elsewhere.has(env)) continue;
    const key = byEnv.get(env);
    assert.ok(key !== undefined, `README lists ${env}, which is no parameter`);
    const want = DEFAULTS[key];
    const got = text(shown);
    assert.equal(typeof want === 'boolean' ? got === 1 : got, want, `${env}: README says '${shown}'`);
  }
});

test('resolveParams: options beat the environment, which beats the default', () => {
  const env = { RAILCOMM_EAGER_LIMIT: '64k', RAILCOMM_TCP_PORT: '5000', RAILCOMM_LOG: 'debug' };
  const p = resolveParams({ eagerLimit: 1000 }, env);
  assert.equal(p.eagerLimit, 1000, 'option wins');
  assert.equal(p.tcpPort, 5000, 'environment used when no option');
  assert.equal(p.log, 'debug');
  assert.equal(p.rndvThreshold, 65536, 'default when neither');
  // An empty environment variable counts as unset.
  assert.equal(resolveParams({}, { RAILCOMM_EAGER_LIMIT: '' }).eagerLimit, 16384);
});

test('resolveParams: precedence for any combination of option / environment / default (property)', () => {
  const maybe = (arb) => fc.option(arb, { nil: undefined });
  fc.assert(fc.property(
    maybe(fc.integer({ min: 0, max: 1 << 30 })),
    maybe(fc.oneof(fc.constant(''), fc.integer({ min: 0, max: 1 << 30 }).map(String))),
    (opt, envText) => {
      const env = envText === undefined ? {} : { RAILCOMM_EAGER_LIMIT: envText };
      const options = opt === undefined ? {} : { eagerLimit: opt };
      const want = opt !== undefined ? opt : envText !== undefined && envText !== '' ? Number(envText) : DEFAULTS.eagerLimit;
      assert.equal(resolveParams(options, env).eagerLimit, want);
    },
  ), { numRuns: 200 });
});

test('resolveParams: options may be named like the environment variable, with or without RAILCOMM_', () => {
  assert.equal(resolveParams({ RAILCOMM_EAGER_LIMIT: '4m' }, {}).eagerLimit, 4 * 1024 * 1024);
  assert.equal(resolveParams({ EAGER_LIMIT: '2k' }, {}).eagerLimit, 2048);
  assert.equal(resolveParams({ PROTO_INFO: 'yes' }, {}).protoInfo, true);
  // An option given as undefined is skipped (falls through to env/default).
  assert.equal(resolveParams({ eagerLimit: undefined }, { RAILCOMM_EAGER_LIMIT: '1k' }).eagerLimit, 1024);
});

test('resolveParams: sizes accept k/m/g suffixes, fractions and a b/ib suffix', () => {
  const size = (t) => resolveParams({ eagerLimit: t }, {}).eagerLimit;
  assert.equal(size('64k'), 65536);
  assert.equal(size('64K'), 65536);
  assert.equal(size('4m'), 4194304);
  assert.equal(size('1.5k'), 1536);
  assert.equal(size('1g'), 1024 ** 3);
  assert.equal(size('2 kb'), 2048);
  assert.equal(size('1KiB'), 1024);
  assert.equal(size('12345'), 12345);
  assert.equal(size(' 7 '), 7);
  assert.equal(size(4096), 4096, 'a number option is taken as is');
  assert.equal(resolveParams({}, { RAILCOMM_TCP_RECV_BUFFER: '1m' }).tcpRecvBuffer, 1 << 20);
});

test('resolveParams: booleans', () => {
  const b = (v) => resolveParams({ stats: v }, {}).stats;
  for (const t of ['1', 'true', 'TRUE', 'yes', 'On', true]) assert.equal(b(t), true, String(t));
  for (const f of ['0', 'false', 'no', 'OFF', '', false]) assert.equal(b(f), false, String(f));
  assert.equal(resolveParams({}, { RAILCOMM_STATS: 'yes' }).stats, true);
  assert.equal(resolveParams({}, { RAILCOMM_PROTO_INFO: '0' }).protoInfo, false);
});

test('resolveParams: strings and choices (case-insensitive, normalised to lower case)', () => {
  assert.equal(resolveParams({ log: 'DEBUG' }, {}).log, 'debug');
  assert.equal(resolveParams({}, { RAILCOMM_LOG: 'Trace' }).log, 'trace');
  assert.equal(resolveParams({ rails: 'self,tcp' }, {}).rails, 'self,tcp');
  assert.equal(resolveParams({}, { RAILCOMM_TCP_DEVICES: 'Eth*' }).tcpDevices, 'Eth*', 'free strings keep their case');
});

test('resolveParams: bad values throw ERR_INVALID_ARG naming the variable', () => {
  throwsInvalid(() => resolveParams({}, { RAILCOMM_EAGER_LIMIT: 'lots' }), /RAILCOMM_EAGER_LIMIT=lots.*byte count/);
  throwsInvalid(() => resolveParams({ eagerLimit: 'lots' }, {}), /eagerLimit=lots/);
  throwsInvalid(() => resolveParams({}, { RAILCOMM_EAGER_LIMIT: '-1' }), /RAILCOMM_EAGER_LIMIT/);
  throwsInvalid(() => resolveParams({}, { RAILCOMM_EAGER_LIMIT: '4x' }), /RAILCOMM_EAGER_LIMIT/);
  throwsInvalid(() => resolveParams({ eagerLimit: -1 }, {}), /eagerLimit=-1: must be at least 0/);
  throwsInvalid(() => resolveParams({ eagerLimit: 1.5 }, {}), /eagerLimit=1\.5/);
  throwsInvalid(() => resolveParams({}, { RAILCOMM_TCP_RECV_BUFFER: '1k' }), /RAILCOMM_TCP_RECV_BUFFER=1k: must be at least 4096/);
  throwsInvalid(() => resolveParams({}, { RAILCOMM_TCP_PORT: 'abc' }), /RAILCOMM_TCP_PORT=abc: expected an integer/);
  throwsInvalid(() => resolveParams({}, { RAILCOMM_CONNECT_TIMEOUT: '0' }), /RAILCOMM_CONNECT_TIMEOUT=0: must be at least 1/);
  throwsInvalid(() => resolveParams({}, { RAILCOMM_HANG_TIMEOUT: '1.5' }), /RAILCOMM_HANG_TIMEOUT/);
  throwsInvalid(() => resolveParams({}, { RAILCOMM_STATS: 'maybe' }), /RAILCOMM_STATS=maybe: expected a boolean/);
  throwsInvalid(() => resolveParams({ protoInfo: 2 }, {}), /protoInfo=2/);
  throwsInvalid(() => resolveParams({}, { RAILCOMM_LOG: 'loud' }), /RAILCOMM_LOG=loud: expected one of error, warn, info, debug, trace/);
  // The message carries the parameter's doc line, so it says what the value is for.
  throwsInvalid(() => resolveParams({}, { RAILCOMM_TCP_MAX_FRAME: 'x' }), /largest tcp frame payload/);
});

test('resolveParams: an unknown option key throws, naming it', () => {
  throwsInvalid(() => resolveParams({ eagerLimt: 5 }, {}), /unknown railcomm parameter 'eagerLimt'/);
  throwsInvalid(() => resolveParams({ RAILCOMM_NOPE: 1 }, {}), /'RAILCOMM_NOPE'/);
  throwsInvalid(() => resolveParams({ eager_limit: 5 }, {}), /eager_limit/);
  // Names inherited from Object.prototype are not parameters either.
  for (const k of ['toString', 'constructor', 'hasOwnProperty', '__proto__']) {
    throwsInvalid(() => resolveParams(JSON.parse(`{"${k}": 5}`), {}), new RegExp(`unknown railcomm parameter '${k}'`));
  }
  // Unknown environment variables are ignored (they may belong to a newer version).
  assert.equal(resolveParams({}, { RAILCOMM_FUTURE_THING: 'x' }).eagerLimit, 16384);
});

test('envName and describeParams', () => {
  assert.equal(envName('eagerLimit'), 'RAILCOMM_EAGER_LIMIT');
  assert.equal(envName('tcpMaxFrame'), 'RAILCOMM_TCP_MAX_FRAME');
  const rows = describeParams(resolveParams({ eagerLimit: '1k' }, {}));
  assert.equal(rows.length, Object.keys(PARAMS).length);
  const row = rows.find((r) => r.name === 'RAILCOMM_EAGER_LIMIT');
  assert.deepEqual({ kind: row.kind, def: row.def, value: row.value }, { kind: 'size', def: '16384', value: '1024' });
  assert.ok(rows.every((r) => r.doc.length > 0 && r.name.startsWith('RAILCOMM_')));
  assert.equal(describeParams()[0].value, undefined);
});

// ---- parseSize ---------------------------------------------------------------

test('parseSize: units, fractions, spacing; garbage is NaN', () => {
  assert.equal(parseSize('0'), 0);
  assert.equal(parseSize('64k'), 65536);
  assert.equal(parseSize('4m'), 4 * 1024 ** 2);
  assert.equal(parseSize('1.5k'), 1536);
  assert.equal(parseSize('2G'), 2 * 1024 ** 3);
  assert.equal(parseSize('1t'), 1024 ** 4);
  assert.equal(parseSize('3 MiB'), 3 * 1024 ** 2);
  assert.equal(parseSize('10b'), 10);
  for (const bad of ['', ' ', 'k', '-1', '1e3', '0x10', '1.', '.5k', '4 mm', '1kk', 'lots', '1,024']) {
    assert.ok(Number.isNaN(parseSize(bad)), `'${bad}' is not a size`);
  }
});

test('parseSize: n and n<unit> round trip (property)', () => {
  const units = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
  fc.assert(fc.property(
    fc.integer({ min: 0, max: 1 << 20 }),
    fc.constantFrom(...Object.keys(units)),
    fc.constantFrom('', 'b', 'ib', 'B', 'iB'),
    fc.boolean(),
    (n, unit, suffix, upper) => {
      const u = upper ? unit.toUpperCase() : unit;
      // 'ib' without a unit letter is accepted by the pattern; only test meaningful forms.
      const sfx = unit === '' ? (suffix.toLowerCase() === 'b' ? suffix : '') : suffix;
      assert.equal(parseSize(`${n}${u}${sfx}`), n * units[unit]);
    },
  ), { numRuns: 300 });
});

test('parseSize: a fraction of a unit rounds to whole bytes (property)', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 100000 }), fc.integer({ min: 0, max: 9 }), (whole, tenth) => {
    assert.equal(parseSize(`${whole}.${tenth}k`), Math.round((whole + tenth / 10) * 1024));
  }), { numRuns: 200 });
});

// ---- asBytes ------------------------------------------------------------------

test('asBytes: same memory for any view; detached buffers and non-views refused', () => {
  const u8 = new Uint8Array(8);
  assert.equal(asBytes(u8), u8);
  const f64 = new Float64Array([1, 2]);
  const b = asBytes(f64);
  assert.equal(b.buffer, f64.buffer);
  assert.equal(b.byteLength, 16);
  const dv = new DataView(new ArrayBuffer(10), 2, 5);
  const d = asBytes(dv);
  assert.equal(d.byteOffset, 2);
  assert.equal(d.byteLength, 5);
  throwsInvalid(() => asBytes('hello', 'payload'), /payload must be an ArrayBufferView.*string/);
  throwsInvalid(() => asBytes(null), /got null/);
  throwsInvalid(() => asBytes([1, 2, 3]), /got Array/);
  const ab = new ArrayBuffer(16);
  const view = new Uint8Array(ab);
  structuredClone(ab, { transfer: [ab] });
  assert.equal(isDetached(ab), true);
  throwsInvalid(() => asBytes(view, 'buf'), /buf is backed by a detached ArrayBuffer/);
  assert.equal(isDetached(new ArrayBuffer(0)), false);
  assert.equal(asBytes(new Uint8Array(0)).byteLength, 0, 'an empty live view is fine');
});

// ---- endpoint ids ------------------------------------------------------------

const U32 = fc.integer({ min: 0, max: 0xffffffff });

test('endpointId / jobOf / rankOf round trip, including job ids >= 2^31 (property)', () => {
  fc.assert(fc.property(U32, U32, (job, rank) => {
    const id = endpointId(job, rank);
    assert.equal(typeof id, 'bigint');
    assert.ok(id >= 0n && id < 1n << 64n);
    assert.equal(jobOf(id), job);
    assert.equal(rankOf(id), rank);
    assert.equal(id, (BigInt(job) << 32n) + BigInt(rank));
    assert.equal(formatId(id), `${job}:${rank}`);
  }), { numRuns: 500 });
  for (const job of [0x80000000, 0xffffffff, 0x7fffffff]) {
    const id = endpointId(job, 3);
    assert.equal(jobOf(id), job);
    assert.equal(rankOf(id), 3);
  }
});

test('endpointId: distinct (job, rank) pairs give distinct ids, ordered by job then rank (property)', () => {
  fc.assert(fc.property(U32, U32, U32, U32, (j1, r1, j2, r2) => {
    const a = endpointId(j1, r1);
    const b = endpointId(j2, r2);
    assert.equal(a === b, j1 === j2 && r1 === r2);
    const cmp = j1 !== j2 ? j1 < j2 : r1 < r2;
    if (a !== b) assert.equal(a < b, cmp);
  }), { numRuns: 300 });
});

test('endpointId: a negative int32 job id (as |0 arithmetic yields) reads back unsigned', () => {
  const id = endpointId(-1, 5);
  assert.equal(jobOf(id), 0xffffffff);
  assert.equal(rankOf(id), 5);
  assert.equal(endpointId(0x80000000 | 0, 0), endpointId(0x80000000, 0));
});

test('host CPUs: RAILCOMM_HOST_CPUS, then SLURM_CPUS_ON_NODE, then the affinity; bad values fall through', async () => {
  const { hostCpus } = await import('../../dist/core/host-cpus.js');
  const os = await import('node:os');
  assert.deepEqual(hostCpus({ RAILCOMM_HOST_CPUS: '6', SLURM_CPUS_ON_NODE: '4' }), { cpus: 6, from: 'RAILCOMM_HOST_CPUS' });
  assert.deepEqual(hostCpus({ RAILCOMM_HOST_CPUS: 'many', SLURM_CPUS_ON_NODE: '4' }), { cpus: 4, from: 'SLURM_CPUS_ON_NODE' });
  assert.deepEqual(hostCpus({ SLURM_CPUS_ON_NODE: '0' }).cpus, os.availableParallelism());
  assert.deepEqual(hostCpus({}).cpus, os.availableParallelism());
});
