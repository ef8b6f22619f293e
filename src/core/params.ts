// The parameter registry: every tunable railcomm reads, with its type, default
// and a one-line doc. Values come from init() options, then RAILCOMM_<NAME>
// environment variables, then the default. `railcomm info --params` prints it.

import { invalidArg } from './errors.js';
import { parseSize } from './bytes.js';

type Kind = 'int' | 'size' | 'bool' | 'string' | 'ms';

interface ParamSpec<K extends Kind = Kind> {
  /** Name without the RAILCOMM_ prefix, as in the environment. */
  readonly name: string;
  readonly kind: K;
  readonly def: K extends 'bool' ? boolean : K extends 'string' ? string : number;
  readonly doc: string;
  readonly min?: number;
  readonly choices?: readonly string[];
}

const spec = <K extends Kind>(s: ParamSpec<K>): ParamSpec<K> => s;

export const PARAMS = {
  rails: spec({ name: 'RAILS', kind: 'string', def: '', doc: 'comma-separated rails to use (self,tcp,...); empty chooses by job layout' }),
  tcpDevices: spec({ name: 'TCP_DEVICES', kind: 'string', def: '', doc: 'network devices for tcp and udp, comma-separated globs (lo, eth*); empty: loopback on one host, else the first routable device' }),
  tcpPort: spec({ name: 'TCP_PORT', kind: 'int', def: 0, min: 0, doc: 'tcp listen port (0: any free port)' }),
  eagerLimit: spec({ name: 'EAGER_LIMIT', kind: 'size', def: 16384, min: 0, doc: 'largest message copied at send (the send completes at once, never waiting for the receiver)' }),
  rndvThreshold: spec({ name: 'RNDV_THRESHOLD', kind: 'size', def: 65536, min: 1, doc: 'messages of at least this many bytes use rendezvous (RTS, match, CTS or RGET, data straight into the receive buffer)' }),
  rndvChunk: spec({ name: 'RNDV_CHUNK', kind: 'size', def: 1048576, min: 4096, doc: 'rendezvous data is sent in pipelined chunks of this size' }),
  maxEagerRails: spec({ name: 'MAX_EAGER_RAILS', kind: 'int', def: 1, min: 1, doc: 'lanes to one peer that carry eager messages and control (round robin); the others carry rendezvous data and stand by' }),
  maxRndvRails: spec({ name: 'MAX_RNDV_RAILS', kind: 'int', def: 2, min: 1, doc: 'lanes to one peer that rendezvous data is striped over, by bandwidth (on distinct devices only)' }),
  laneTimeout: spec({ name: 'LANE_TIMEOUT', kind: 'ms', def: 3000, min: 100, doc: 'a lane to a peer that answers no heartbeat for this long while another lane to it answers is given up on, its traffic moved to the others (peers with several lanes)' }),
  eagerCredits: spec({ name: 'EAGER_CREDITS', kind: 'size', def: 4194304, min: 0, doc: 'bytes of eager data one sender may have unmatched at one receiver (bounds its unexpected queue); beyond it, eager-sized sends still complete at once but their bytes are copied and wait at the sender for the receive (rendezvous)' }),
  sendBuffer: spec({ name: 'SEND_BUFFER', kind: 'size', def: 8388608, min: 0, doc: 'bytes one rank may hold for one peer in copies of eager-sized sends that completed before the peer took them (each message counts 400 bytes more: its request and copy on the heap); beyond it a send waits for the receiver and isend stays pending (bounds sender memory)' }),
  tcpMaxFrame: spec({ name: 'TCP_MAX_FRAME', kind: 'size', def: 4194304, min: 65536, doc: 'largest tcp frame payload accepted; a longer length field closes the connection' }),
  tcpRecvBuffer: spec({ name: 'TCP_RECV_BUFFER', kind: 'size', def: 262144, min: 4096, doc: 'per-connection staging buffer that socket reads land in' }),
  tcpSendHighWater: spec({ name: 'TCP_SEND_HIGH_WATER', kind: 'size', def: 16777216, min: 65536, doc: 'bytes queued on a socket before sends answer no-resource and wait' }),
  connectTimeout: spec({ name: 'CONNECT_TIMEOUT', kind: 'ms', def: 30000, min: 1, doc: 'how long to try to reach a peer before its requests fail' }),
  handshakeTimeout: spec({ name: 'HANDSHAKE_TIMEOUT', kind: 'ms', def: 5000, min: 1, doc: 'an incoming connection that has not proven the job key by then is closed; a tcp dial whose connection the peer\'s host has not taken by then is made again (a dropped SYN), until RAILCOMM_CONNECT_TIMEOUT' }),
  udpMtu: spec({ name: 'UDP_MTU', kind: 'size', def: 0, min: 0, doc: 'udp: largest datagram on the data channel (0: from the device MTU minus 28 bytes of IP/UDP headers, at most 65507: about 64 KiB on loopback, 1472 on Ethernet)' }),
  udpTinyMtu: spec({ name: 'UDP_TINY_MTU', kind: 'size', def: 768, min: 64, doc: 'udp: fragments whose AM header and payload fit in this many bytes travel on the priority channel, and go out at once when it is idle' }),
  udpWindow: spec({ name: 'UDP_WINDOW', kind: 'int', def: 4096, min: 16, doc: 'udp: send and receive window in segments per peer (rounded up to a power of two); bytes in flight are further bounded by the socket buffers (credits)' }),
  udpRtoMs: spec({ name: 'UDP_RTO_MS', kind: 'ms', def: 100, min: 1, doc: 'udp: initial retransmission timeout; adapts to measured round trips (floor 5 ms) and backs off on timeouts' }),
  udpAckDelay: spec({ name: 'UDP_ACK_DELAY', kind: 'int', def: 1, min: 1, doc: 'udp: receive bursts / progress passes an ACK may wait for a segment to ride on before it is sent on its own (a 2 ms timer backs it up when idle)' }),
  tcpPeerTimeout: spec({ name: 'TCP_PEER_TIMEOUT', kind: 'int', def: 60, min: 0, doc: 'tcp: seconds after which a connection whose peer\'s host acknowledges nothing (keepalive probes on an idle connection, data waiting for its ACK) fails its lane, and the peer with its last lane; the peer\'s kernel answers even while the peer computes, so a busy rank is never failed for it; 0 off' }),
  udpPeerTimeout: spec({ name: 'UDP_PEER_TIMEOUT', kind: 'int', def: 300, min: 1, doc: 'udp: seconds without any datagram from a peer we wait on before it is declared failed; after a third of it the peer is probed (generous: a peer computing without calling railcomm cannot answer)' }),
  udpFaults: spec({ name: 'UDP_FAULTS', kind: 'string', def: '', doc: 'udp: fault injection for tests, per datagram on both channels, e.g. drop=0.05,dup=0.02,reorder=0.1,corrupt=0.001,delay=2ms' }),
  udpChecksum: spec({ name: 'UDP_CHECKSUM', kind: 'bool', def: true, doc: 'udp: checksum every byte of every datagram (0: headers only, leaving payloads to the link\'s own UDP checksum; injected corruption of a payload then goes undetected; applies only with RAILCOMM_UDP_AUTH=0: a MAC always covers every byte)' }),
  udpAuth: spec({ name: 'UDP_AUTH', kind: 'bool', def: true, doc: 'udp: every datagram of a session carries a 32-bit MAC (SipHash-2-4 under a key both sides derive from the handshake), so a sniffed session token forges nothing; 0: a checksum only (CRC32C or a word sum), for trusted fabrics; every rank must use the same setting' }),
  udpSocketBuffer: spec({ name: 'UDP_SOCKET_BUFFER', kind: 'size', def: 4194304, min: 65536, doc: 'udp: send and receive socket buffer size asked of the kernel (capped by net.core.rmem_max / wmem_max); bytes in flight per peer stay within it' }),
  ofiProviders: spec({ name: 'OFI_PROVIDERS', kind: 'string', def: '', doc: 'ofi: libfabric providers the ofi rail may use, comma-separated (tcp;ofi_rxm, shm, udp;ofi_rxd, sockets; a core name such as tcp matches tcp;ofi_rxm; * globs); empty: all it can use, the first in libfabric\'s order opens (FI_PROVIDER also filters, in libfabric itself)' }),
  ofiContexts: spec({ name: 'OFI_CONTEXTS', kind: 'int', def: 0, min: 0, doc: 'ofi: contexts of each scalable endpoint (fi_scalable_ep) the thread ranks of one process share, on providers that offer them (sockets here: 16): one domain and one address per process, a transmit and a receive context with its own completion queue per thread rank; when the ranks outnumber the contexts another scalable endpoint opens; 0: one per thread rank of the process (RAILCOMM_THREADS), capped at the provider\'s maximum; a process of one rank uses a plain endpoint unless this is at least 2' }),
  ofiSep: spec({ name: 'OFI_SEP', kind: 'bool', def: true, doc: 'ofi: 0: no scalable endpoints, every thread rank opens a fabric, domain and endpoint of its own (the seed\'s btl_ofi_disable_sep)' }),
  ofiWaitFd: spec({ name: 'OFI_WAIT_FD', kind: 'bool', def: true, doc: 'ofi: 1: the completion queue has a wait fd where the provider offers one (tcp;ofi_rxm), so an idle rank sleeps in the event loop and still serves one-sided traffic at once; 0: no wait object, as Open MPI\'s mtl ofi opens it: each message costs libfabric one write and one read of its signal fd less (about 0.5-1 us a hop on tcp;ofi_rxm), but an idle rank looks at the queue on a timer (1-16 ms for the first message after a sleep, as on shm and udp;ofi_rxd)' }),
  spinUs: spec({ name: 'SPIN_US', kind: 'int', def: 20000, min: 0, doc: 'while requests are outstanding, keep polling (no sleep) this many microseconds after the last activity; 0 never spins; ranks that outnumber the cores do not spin (20 ms, as RAILCOMM_COLL_SPIN_US: a peer the scheduler preempts for a time slice does not send its partner to sleep, whose wake-up costs about half a millisecond)' }),
  hangTimeout: spec({ name: 'HANG_TIMEOUT', kind: 'ms', def: 60000, min: 0, doc: 'hang report: when ranks wait and no operation completes for this long, print once what each waits for (railcomm run gathers one picture of who waits on whom across the job, naming any cycle; elsewhere each rank prints its own); it never stops the job (--timeout does); 0: off' }),
  tbsmRing: spec({ name: 'TBSM_RING', kind: 'size', def: 1048576, min: 65536, doc: 'bytes of each shared-memory ring between two thread ranks (a power of two)' }),
  shmRing: spec({ name: 'SHM_RING', kind: 'size', def: 1048576, min: 65536, doc: 'bytes of each shared-memory ring between two process ranks on one host (a power of two; one /dev/shm segment per ordered pair that talks)' }),
  shmRndvThreshold: spec({ name: 'SHM_RNDV_THRESHOLD', kind: 'size', def: 0, min: 0, doc: 'rendezvous threshold between ranks on one host (0: each ring rail\'s measured crossover, shm 256 KiB, tbsm 128 KiB: below it copying through the ring beats a single-copy rendezvous round trip); RAILCOMM_RNDV_THRESHOLD applies to the network rails' }),
  shmSingleCopy: spec({ name: 'SHM_SINGLE_COPY', kind: 'bool', def: true, doc: 'rendezvous between ranks on one host (processes over shm, threads over tbsm) reads the sender\'s buffer once (Linux CMA through the native addon, negotiated per peer; falls back to the ring when the kernel refuses)' }),
  collAllreduceRing: spec({ name: 'COLL_ALLREDUCE_RING', kind: 'size', def: 262144, min: 0, doc: 'allreduce of at least this many bytes uses ring reduce-scatter + allgather; smaller, recursive doubling' }),
  collAllgatherRing: spec({ name: 'COLL_ALLGATHER_RING', kind: 'size', def: 65536, min: 0, doc: 'allgather whose result is at least this many bytes uses the ring; smaller, Bruck' }),
  collGatherBinomial: spec({ name: 'COLL_GATHER_BINOMIAL', kind: 'size', def: 4096, min: 0, doc: 'gather blocks up to this many bytes go up a binomial tree; larger, straight to the root' }),
  collAlltoallPairwise: spec({ name: 'COLL_ALLTOALL_PAIRWISE', kind: 'size', def: 32768, min: 0, doc: 'alltoall blocks of at least this many bytes use pairwise exchange; smaller, every exchange at once' }),
  collSharedMax: spec({ name: 'COLL_SHARED_MAX', kind: 'size', def: 1048576, min: 0, doc: 'barrier, bcast, reduce, allreduce and allgather of up to this many bytes go through a shared segment when every rank of the communicator maps it (thread ranks of one process); 0 never' }),
  collSpinUs: spec({ name: 'COLL_SPIN_US', kind: 'int', def: 20000, min: 0, doc: 'a shared-memory collective waiting for its peers polls this many microseconds (letting the event loop run every 50 us) before it sleeps on the doorbell; ranks that outnumber the cores never spin: for 5 ms they block on the doorbell word in waits of at most 500 us (the event loop runs between), then sleep' }),
  collSharedSplit: spec({ name: 'COLL_SHARED_SPLIT', kind: 'size', def: 32768, min: 0, doc: 'shared-memory reduce and allreduce of at least this many bytes split the arithmetic (each rank reduces one block, then all copy every block out: two phases); smaller ones reduce the whole vector on every rank (one phase)' }),
  rdmaRgetMin: spec({ name: 'RDMA_RGET_MIN', kind: 'size', def: 64 << 10, min: 0, doc: 'rendezvous messages of at least this many bytes over a rail with native one-sided operations (ofi; not its sockets provider) are read by the receiver straight from the sender\'s registered buffer (fi_read), then FIN; 0: never (CTS and DATA frames)' }),
  bind: spec({ name: 'BIND', kind: 'string', def: 'none', choices: ['none', 'core'], doc: 'core: pin each rank\'s thread to one CPU of the ones it may use (the local rank\'s, in order; as Open MPI\'s --bind-to core), unless the ranks on this host outnumber those CPUs; none: leave placement to the kernel' }),
  collSharedFlat: spec({ name: 'COLL_SHARED_FLAT', kind: 'int', def: 8, min: 1, doc: 'shared-memory collectives of communicators up to this many ranks wait in flat phases (every rank watches every rank\'s flag: one hop); larger ones in leader phases (rank 0 gathers the flags, combines small reductions, and releases the others: two hops, but each rank polls one cache line instead of one per rank)' }),
  collSharedSlot: spec({ name: 'COLL_SHARED_SLOT', kind: 'size', def: 262144, min: 4096, doc: 'bytes each rank writes per round of a shared-memory collective (larger ones go a slot at a time; the segment holds two per rank)' }),
  cudaIpc: spec({ name: 'CUDA_IPC', kind: 'bool', def: true, doc: 'large device-memory messages between processes on one host go through CUDA IPC (negotiated per peer: the receiver opens the sender\'s handle once, cached, and copies device to device); 0: staged through pinned host memory instead (the same results, counted as stagedIpcOff)' }),
  cudaEager: spec({ name: 'CUDA_EAGER', kind: 'size', def: 16384, min: 0, doc: 'device-memory messages up to this size are copied to pinned host memory at send and go as host messages (eager: the send completes at once); larger ones take the device rendezvous (CUDA IPC, a direct copy between thread ranks, or pinned host chunks)' }),
  cudaIpcCache: spec({ name: 'CUDA_IPC_CACHE', kind: 'int', def: 64, min: 1, doc: 'CUDA IPC handles a rank keeps open per job (opened on a peer\'s first message from an allocation, least recently used closed first, closed when the owner frees it)' }),
  cudaReduceMin: spec({ name: 'CUDA_REDUCE_MIN', kind: 'size', def: 262144, min: 0, doc: 'allreduce on device arrays of at least this many bytes combines on the GPU (ring over device messages, an element-wise kernel); smaller ones go through host memory' }),
  check: spec({ name: 'CHECK', kind: 'bool', def: false, doc: 'before every collective, the ranks of the communicator agree on the call, root, op, element type and counts (a 48-byte exchange per rank) and all fail with ERR_COLLECTIVE_MISMATCH, naming who called what, instead of running mismatched calls; the communicator stays usable. Every rank must set it alike (init({ check: true }) does too)' }),
  log: spec({ name: 'LOG', kind: 'string', def: 'warn', choices: ['error', 'warn', 'info', 'debug', 'trace'], doc: 'log level' }),
  protoInfo: spec({ name: 'PROTO_INFO', kind: 'bool', def: false, doc: 'print, per peer, which protocol and rail serve each message size range' }),
  stats: spec({ name: 'STATS', kind: 'bool', def: false, doc: 'print counters per rail and per peer at finalize' }),
  statsFormat: spec({ name: 'STATS_FORMAT', kind: 'string', def: 'table', choices: ['table', 'json'], doc: 'how RAILCOMM_STATS prints: a table per rank, or one line `railcomm stats {json}` per rank' }),
} as const;

type Specs = typeof PARAMS;
type ValueOf<S> = S extends ParamSpec<infer K> ? (K extends 'bool' ? boolean : K extends 'string' ? string : number) : never;
export type Params = { -readonly [K in keyof Specs]: ValueOf<Specs[K]> };
export type ParamName = keyof Specs;
export type ParamOptions = Partial<Record<ParamName | string, string | number | boolean>>;

export function envName(key: ParamName): string {
  return `RAILCOMM_${PARAMS[key].name}`;
}

function parseValue(s: ParamSpec, raw: string | number | boolean, where: string): number | string | boolean {
  const bad = (what: string) => invalidArg(`${where}=${String(raw)}: ${what} (${s.doc})`);
  switch (s.kind) {
    case 'bool': {
      if (typeof raw === 'boolean') return raw;
      const t = String(raw).toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(t)) return true;
      if (['0', 'false', 'no', 'off', ''].includes(t)) return false;
      throw bad('expected a boolean (1/0, true/false)');
    }
    case 'string': {
      const t = String(raw);
      if (s.choices && !s.choices.includes(t.toLowerCase())) throw bad(`expected one of ${s.choices.join(', ')}`);
      return s.choices ? t.toLowerCase() : t;
    }
    case 'int':
    case 'ms':
    case 'size': {
      const text = String(raw).trim();
      const n = typeof raw === 'number' ? raw : s.kind === 'size' ? parseSize(text) : /^-?\d+$/.test(text) ? Number(text) : NaN;
      if (!Number.isSafeInteger(n)) throw bad(s.kind === 'size' ? 'expected a byte count such as 65536, 64k or 4m' : 'expected an integer');
      if (s.min !== undefined && n < s.min) throw bad(`must be at least ${s.min}`);
      return n;
    }
  }
}

/** Resolve every parameter: options first, then the environment, then defaults. */
export function resolveParams(options: ParamOptions = {}, env: Readonly<Record<string, string | undefined>> = process.env): Params {
  const byEnv = new Map<string, ParamName>();
  for (const k of Object.keys(PARAMS) as ParamName[]) byEnv.set(PARAMS[k].name, k);
  const given = new Map<ParamName, string | number | boolean>();
  for (const [k, v] of Object.entries(options)) {
    if (v === undefined) continue;
    const key: ParamName | undefined = Object.hasOwn(PARAMS, k) ? (k as ParamName) : byEnv.get(k.replace(/^RAILCOMM_/, ''));
    if (!key) throw invalidArg(`unknown railcomm parameter '${k}'; 'railcomm info --params' lists them`);
    given.set(key, v);
  }
  const out: Record<string, number | string | boolean> = {};
  for (const key of Object.keys(PARAMS) as ParamName[]) {
    const s = PARAMS[key] as ParamSpec;
    const opt = given.get(key);
    const ev = env[envName(key)];
    if (opt !== undefined) out[key] = parseValue(s, opt, key);
    else if (ev !== undefined && ev !== '') out[key] = parseValue(s, ev, envName(key));
    else out[key] = s.def;
  }
  return out as Params;
}

/**
 * Variables railcomm reads outside resolveParams: the launcher, a module as it
 * loads, or `npm install` read them from the environment (init() options do
 * not reach them). Documented beside the parameters; `railcomm info --params`
 * lists them after them. def is the text shown for the default ('' when it is
 * decided at run time, as the doc says).
 */
export interface EnvSetting {
  readonly name: string;
  readonly def: string;
  /** Who reads it, and when. */
  readonly readBy: string;
  readonly doc: string;
  /** Its value is never printed. */
  readonly secret?: boolean;
}

/** The node flags `railcomm run` starts JavaScript ranks with unless RAILCOMM_NODE_FLAGS says otherwise (cli/program.ts says why). */
export const DEFAULT_NODE_FLAGS: readonly string[] = ['--max-inlined-bytecode-size-cumulative=3000', '--max-inlined-bytecode-size=1000'];

/**
 * What `railcomm run` adds, unless RAILCOMM_NODE_FLAGS is set, for a thread
 * host whose ranks take every CPU of the host (as many thread ranks on it as
 * CPUs, or more): no concurrent TurboFan recompilation. The isolates of one
 * process share V8's few helper threads; with a rank spinning on every core, a
 * queued optimization waited for a core while the ranks waited for it: 16
 * thread ranks took 48 us for an 8-byte allreduce instead of 4.5 (bench
 * RESULTS, "16 ranks on 16 cores"). With CPUs to spare, a compile on the
 * background thread costs the ranks nothing, and one on the rank's own thread
 * stalls it. Rank processes never get it by default: 16 processes on 16 cores
 * gained in allreduceSync with it, but 2 processes on 2 CPUs drained a tcp
 * flood 1.8x slower, their compiles then on the receiving rank's thread while
 * the other CPU sat idle (bench RESULTS, "16 ranks on 16 cores again").
 */
export const BUSY_HOST_NODE_FLAGS: readonly string[] = ['--no-concurrent-recompilation'];

export const ENV_SETTINGS: readonly EnvSetting[] = [
  { name: 'RAILCOMM_NODE_FLAGS', def: DEFAULT_NODE_FLAGS.join(' '), readBy: 'railcomm run', doc: 'node flags railcomm run starts JavaScript ranks and thread hosts with, replacing the default (a larger V8 inlining budget: 25-30% less CPU per small message over shared memory; thread hosts whose ranks take every CPU of the host also --no-concurrent-recompilation: 16 thread ranks on 16 cores 10x faster in small collectives); set but empty: none' },
  { name: 'RAILCOMM_HOST_CPUS', def: '', readBy: 'init()', doc: 'CPUs the job\'s ranks share on this host; more ranks than that turns spinning off. railcomm run sets it for the ranks on its host to its own CPU count; unset: SLURM_CPUS_ON_NODE, else this process\'s affinity' },
  { name: 'RAILCOMM_PLAIN_SYNC', def: '', readBy: 'railcomm as it loads', doc: 'ring positions: 1 reads and publishes them with plain typed-array accesses, 0 with Atomics; unset: 1 on x86 under Node 20, 22, 24 and 26 (where CI checks it), else 0' },
  { name: 'RAILCOMM_JOB_KEY', def: '', readBy: 'init()', secret: true, doc: 'the job\'s secret (hex, at least 16 digits) every connection proves it knows; railcomm run and PMIx make one; under other launchers set the same value on every rank' },
  { name: 'RAILCOMM_NO_NATIVE', def: '0', readBy: 'railcomm as it loads', doc: '1: ignore the built native addon and libfabric binding (no shm rail, no ofi rail, JavaScript checksums and reductions)' },
  { name: 'RAILCOMM_SAB_SHIM', def: '0', readBy: 'railcomm as it loads', doc: '1: map shared memory through the V8 shim (native/sab) even where Node-API can do it' },
  { name: 'RAILCOMM_NO_PMIX', def: '0', readBy: 'init()', doc: '1: do not use PMIx even under a PMIx launcher (wire up through MASTER_ADDR:MASTER_PORT instead)' },
  { name: 'RAILCOMM_PMIX_LIB', def: '', readBy: 'init()', doc: 'the PMIx library to load (unset: libpmix.so.2 from the system\'s library path, as openmpi-bin installs it)' },
  { name: 'RAILCOMM_CUDA', def: '1', readBy: 'the first GPU call', doc: '0: do not load the CUDA driver (cuda.available is false, cuda.why says so); device arrays then cannot be made' },
  { name: 'RAILCOMM_CUDA_LIBRARY', def: 'libcuda.so.1', readBy: 'the first GPU call', doc: 'the CUDA driver library to dlopen (a path, or a name the dynamic loader finds)' },
  { name: 'RAILCOMM_CUDA_DEVICE', def: '0', readBy: 'the first GPU call in each thread', doc: 'the device (ordinal) a rank allocates on and copies with until cuda.setDevice chooses another' },
  { name: 'RAILCOMM_CUDA_PTX', def: '', readBy: 'the first device reduction', doc: 'a PTX file to load the reduction kernels from instead of the one shipped in the package (unset: the shipped one)' },
  { name: 'RAILCOMM_OFI_NATIVE_ATOMICS', def: '0', readBy: 'the ofi rail as it opens', doc: '1: native atomics (fi_atomic) on the ofi shm, udp;ofi_rxd and sockets providers too; by default railcomm emulates them there, because with libfabric 1.17 shm atomics from several origins at once to one target give wrong results, udp;ofi_rxd crashes with two fetching atomics in flight to one peer, and a provider with its own progress thread (sockets) applies native atomics while emulated ones (an atomic that found the queue full) are applied by the target: an update can be lost' },
  { name: 'RAILCOMM_SKIP_NATIVE', def: '0', readBy: 'npm install', doc: '1: build and load no native part at install (railcomm then runs without them)' },
  { name: 'RAILCOMM_BUILD_FROM_SOURCE', def: '0', readBy: 'npm install', doc: '1: build the native parts from source even where a prebuilt binary fits (needs g++, make and python3)' },
];

/** Rows for the variables read outside resolveParams, with the value set in `env` (a secret's as '(set)'). */
export function describeEnvSettings(env: Readonly<Record<string, string | undefined>> = process.env): Array<{ name: string; def: string; value?: string; readBy: string; doc: string }> {
  return ENV_SETTINGS.map((e) => {
    const row: { name: string; def: string; value?: string; readBy: string; doc: string } = { name: e.name, def: e.def, readBy: e.readBy, doc: e.doc };
    const v = env[e.name];
    if (v !== undefined) row.value = e.secret === true ? '(set)' : v;
    return row;
  });
}

/** Rows for `railcomm info --params`. */
export function describeParams(current?: Params): Array<{ name: string; kind: string; def: string; value?: string; doc: string }> {
  return (Object.keys(PARAMS) as ParamName[]).map((key) => {
    const s = PARAMS[key] as ParamSpec;
    const row: { name: string; kind: string; def: string; value?: string; doc: string } = {
      name: envName(key), kind: s.kind, def: String(s.def), doc: s.doc,
    };
    if (current) row.value = String(current[key]);
    return row;
  });
}
