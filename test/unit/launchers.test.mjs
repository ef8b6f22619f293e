// Who started this rank: detection order and variables of each launcher, and
// Slurm hostlist expansion.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { detectLaunch } from '../../dist/boot/launch-env.js';
import { expandHostlist } from '../../dist/boot/hostlist.js';

test('Slurm hostlists expand with padding, ranges, lists and several groups', () => {
  assert.deepEqual(expandHostlist('node[01-04,07]'), ['node01', 'node02', 'node03', 'node04', 'node07']);
  assert.deepEqual(expandHostlist('login1,gpu[9-10],cpu'), ['login1', 'gpu9', 'gpu10', 'cpu']);
  assert.deepEqual(expandHostlist('r[1-2]n[1-2]'), ['r1n1', 'r1n2', 'r2n1', 'r2n2']);
  assert.deepEqual(expandHostlist('host'), ['host']);
  assert.throws(() => expandHostlist('node[3-1]'));
  assert.throws(() => expandHostlist('node[01'));
});

test('no launcher: a world of one', () => {
  const l = detectLaunch({});
  assert.equal(l.launcher, 'singleton');
  assert.equal(l.size, 1);
});

test('env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)', () => {
  const l = detectLaunch({ RANK: '2', WORLD_SIZE: '4', LOCAL_RANK: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: '29500' });
  assert.equal(l.launcher, 'env');
  assert.deepEqual([l.rank, l.size, l.localRank], [2, 4, 2]);
  assert.deepEqual(l.master, { host: '127.0.0.1', port: 29500 });
  assert.equal(l.localSize, 4, 'a loopback master means one host');
  assert.equal(l.jobKeySecret, false);
  const k = detectLaunch({ RANK: '0', WORLD_SIZE: '4', MASTER_ADDR: '10.1.2.3', MASTER_PORT: '29500', RAILCOMM_JOB_KEY: 'ab'.repeat(16) });
  assert.equal(k.jobKeySecret, true);
  assert.equal(k.jobKey, 'ab'.repeat(16));
  assert.equal(k.localSize, 1);
  assert.equal(detectLaunch({ RANK: '1', WORLD_SIZE: '4', MASTER_ADDR: '127.0.0.1', MASTER_PORT: '29500' }).jobId, l.jobId, 'every rank derives the same job id');
  assert.throws(() => detectLaunch({ RANK: '0', WORLD_SIZE: '2' }), /MASTER_ADDR and MASTER_PORT are not set/);
  assert.throws(() => detectLaunch({ RANK: '5', WORLD_SIZE: '2', MASTER_ADDR: 'h', MASTER_PORT: '1' }), /RANK/);
});

test('Open MPI mpirun, MPICH hydra and Slurm, in that order after railcomm run', () => {
  const ompi = detectLaunch({ OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '4', OMPI_COMM_WORLD_LOCAL_RANK: '1', OMPI_COMM_WORLD_LOCAL_SIZE: '4', PMIX_NAMESPACE: 'ns', MASTER_ADDR: '127.0.0.1', MASTER_PORT: '4000', RANK: '3', WORLD_SIZE: '9' });
  assert.equal(ompi.launcher, 'openmpi');
  assert.deepEqual([ompi.rank, ompi.size, ompi.localSize], [1, 4, 4]);
  assert.throws(() => detectLaunch({ OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '2' }), /-x MASTER_ADDR/);
  const hydra = detectLaunch({ PMI_RANK: '0', PMI_SIZE: '2', MPI_LOCALRANKID: '0', MASTER_ADDR: 'localhost', MASTER_PORT: '4000' });
  assert.equal(hydra.launcher, 'hydra');
  const slurm = detectLaunch({ SLURM_PROCID: '3', SLURM_NTASKS: '4', SLURM_STEP_NUM_TASKS: '4', SLURM_LOCALID: '1', SLURM_JOB_ID: '77', SLURM_STEP_ID: '0', SLURM_STEP_NODELIST: 'node[07-08]' });
  assert.equal(slurm.launcher, 'slurm');
  assert.equal(slurm.master.host, 'node07');
  assert.ok(slurm.master.port >= 20000 && slurm.master.port < 40000);
  assert.deepEqual(detectLaunch({ SLURM_PROCID: '0', SLURM_NTASKS: '4', SLURM_STEP_NUM_TASKS: '4', SLURM_JOB_ID: '77', SLURM_STEP_ID: '0', SLURM_STEP_NODELIST: 'node[07-08]' }).master, slurm.master, 'every rank of the step meets at the same place');
  const rc = detectLaunch({ RAILCOMM_RANK: '0', RAILCOMM_SIZE: '2', RAILCOMM_KV: '127.0.0.1:5', RAILCOMM_JOB_KEY: 'cd'.repeat(16), OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2' });
  assert.equal(rc.launcher, 'railcomm', 'railcomm run wins');
  assert.equal(detectLaunch({ SLURM_PROCID: '0', SLURM_NTASKS: '4', SLURM_JOB_ID: '9' }).launcher, 'singleton', 'node app.js in an sbatch script is not a step');
  assert.equal(detectLaunch({ SLURM_PROCID: '0', SLURM_NTASKS: '4', SLURM_STEP_NUM_TASKS: '4', RANK: '1', WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: '1' }).launcher, 'env', 'an inner launcher in an allocation wins');
});

test('railcomm run --hosts and --hostfile: parsing and rank placement', async () => {
  const { parseHosts, parseHostfile, placeRanks } = await import('../../dist/cli/hosts.js');
  assert.deepEqual(parseHosts('a:2,b,c:3'), [{ host: 'a', slots: 2 }, { host: 'b', slots: 1 }, { host: 'c', slots: 3 }]);
  assert.throws(() => parseHosts('a:0'));
  assert.throws(() => parseHosts('a:x'));
  assert.deepEqual(parseHostfile('# cluster\nnode1 slots=2\nnode2 slots=4 max_slots=8\n\nnode3\n'),
    [{ host: 'node1', slots: 2 }, { host: 'node2', slots: 4 }, { host: 'node3', slots: 1 }]);
  assert.throws(() => parseHostfile('node1 cpus=2'));
  const p = placeRanks(5, [{ host: 'a', slots: 2 }, { host: 'b', slots: 4 }]);
  assert.deepEqual(p.map((x) => `${x.host}:${x.localRank}/${x.localSize}`), ['a:0/2', 'a:1/2', 'b:0/3', 'b:1/3', 'b:2/3']);
  assert.throws(() => placeRanks(7, [{ host: 'a', slots: 2 }, { host: 'b', slots: 4 }]), /do not fit/);
  assert.equal(placeRanks(2, [{ host: 'localhost', slots: 2 }])[0].local, true);
  assert.equal(placeRanks(3, undefined).every((x) => x.local && x.localSize === 3), true);
  // One host named by several entries (or localhost and 127.0.0.1): its ranks count together.
  assert.deepEqual(placeRanks(6, [{ host: 'localhost', slots: 2 }, { host: 'b', slots: 2 }, { host: '127.0.0.1', slots: 2 }]).map((x) => `${x.host}:${x.localRank}/${x.localSize}`),
    ['localhost:0/4', 'localhost:1/4', 'b:0/2', 'b:1/2', '127.0.0.1:2/4', '127.0.0.1:3/4']);
  assert.deepEqual(placeRanks(3, [{ host: 'a', slots: 1 }, { host: 'a', slots: 2 }]).map((x) => `${x.localRank}/${x.localSize}`), ['0/3', '1/3', '2/3']);
});

test('railcomm run refuses a --timeout no timer can hold, more ranks than it can start, and a --kv-host that is no address', async () => {
  const { parseRunArgs, MAX_RANKS } = await import('../../dist/cli/run-args.js');
  for (const args of [['--timeout', '2147484'], ['--timeout', '1e10'], ['--grace', '1e10']]) {
    assert.throws(() => parseRunArgs(['-n', '2', ...args, 'x.js']), /longer than the 2147483 s/, args.join(' '));
  }
  assert.equal(parseRunArgs(['-n', '2', '--timeout', '2147483', 'x.js']).opts.timeoutSec, 2147483);
  assert.throws(() => parseRunArgs(['--hosts', 'localhost:100000000000', 'x.js']), /100000000000 ranks: railcomm run starts at most/);
  assert.throws(() => parseRunArgs(['-n', String(MAX_RANKS + 1), 'x.js']), /starts at most/);
  for (const bad of ['999.1.1.1', 'a b', '-x', 'host_']) assert.throws(() => parseRunArgs(['-n', '2', '--kv-host', bad, 'x.js']), /is not an IP address or a host name/, bad);
  for (const good of ['10.0.0.1', 'fd00::2', 'node-1.cluster', 'h1']) assert.equal(parseRunArgs(['-n', '2', '--kv-host', good, 'x.js']).opts.kvHost, good);
});

test('remote ranks: ssh gets one quoted command line, exec-style agents get argv', async () => {
  const { remoteCommand, shellQuote } = await import('../../dist/cli/hosts.js');
  const { execFileSync } = await import('node:child_process');
  const env = { RAILCOMM_RANK: '1', OPTS: "a b 'c' $HOME;x", PATH: '/bin' };
  const [agent, argv] = remoteCommand({ rsh: ['ssh', '-o', 'BatchMode=yes'], env: { OPTS: '' }, cwd: '/tmp/my dir' }, 'nodeA', env, '/usr/bin/node', ['app.js', 'two words'], 0);
  assert.equal(agent, 'ssh');
  assert.deepEqual(argv.slice(0, 3), ['-o', 'BatchMode=yes', 'nodeA']);
  assert.equal(argv.length, 4, 'one command line for the remote shell');
  // What the remote shell would run: parse it with sh and print the words.
  const words = execFileSync('sh', ['-c', `set -- ${argv[3].replace(/^cd .* && exec /, '')}; for w in "$@"; do printf '%s\\n' "$w"; done`], { encoding: 'utf8' }).trim().split('\n');
  assert.deepEqual(words, ['env', 'RAILCOMM_RANK=1', "OPTS=a b 'c' $HOME;x", '/usr/bin/node', '/tmp/my dir/app.js', 'two words']);
  assert.match(argv[3], /^cd '\/tmp\/my dir' && exec env /);
  const [ip, argv2] = remoteCommand({ rsh: ['ip', 'netns', 'exec'], env: {}, cwd: '/srv' }, 'nsA', { RAILCOMM_RANK: '0' }, '/usr/bin/node', ['app.js'], 0);
  assert.equal(ip, 'ip');
  assert.deepEqual(argv2, ['netns', 'exec', 'nsA', 'env', 'RAILCOMM_RANK=0', '/usr/bin/node', '/srv/app.js']);
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
});

test('JavaScript ranks start with the inlining flags, a busy thread host without concurrent recompilation (RAILCOMM_NODE_FLAGS replaces them); a remote rank\'s script is still resolved after them', async () => {
  const { nodeFlags, DEFAULT_NODE_FLAGS } = await import('../../dist/cli/program.js');
  const { remoteCommand } = await import('../../dist/cli/hosts.js');
  assert.deepEqual(nodeFlags({}), DEFAULT_NODE_FLAGS);
  assert.ok(DEFAULT_NODE_FLAGS.every((f) => f.startsWith('--max-inlined-bytecode-size')));
  assert.deepEqual(nodeFlags({ RAILCOMM_NODE_FLAGS: '' }), []);
  assert.deepEqual(nodeFlags({}, true), [...DEFAULT_NODE_FLAGS, '--no-concurrent-recompilation']);
  assert.deepEqual(nodeFlags({ RAILCOMM_NODE_FLAGS: '--b' }, true), ['--b']);
  assert.deepEqual(nodeFlags({ RAILCOMM_NODE_FLAGS: ' --a=1  --b ' }), ['--a=1', '--b']);
  const flags = ['--conditions', 'development', ...DEFAULT_NODE_FLAGS];
  const [, argv] = remoteCommand({ rsh: ['ip', 'netns', 'exec'], env: {}, cwd: '/srv' }, 'nsA', { RAILCOMM_RANK: '0' }, process.execPath, [...flags, 'app.js', 'x.js'], flags.length);
  assert.deepEqual(argv, ['netns', 'exec', 'nsA', 'env', 'RAILCOMM_RANK=0', process.execPath, ...flags, '/srv/app.js', 'x.js']);
});
