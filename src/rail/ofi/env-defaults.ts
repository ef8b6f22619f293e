// Environment libfabric and the libraries it links read from the process's
// real environment (getenv, some of them as they load). A worker thread's
// process.env is a copy of its own: set there, libfabric never sees it. So
// the loader sets these in a process rank, and the thread host in its main
// thread before it starts thread ranks of a job that names ofi; a thread rank
// that chose ofi itself (init({ rails })) has the binding copy them into the
// real environment before libfabric initializes (native.ts, setEnvDefault),
// which serves every variable but the two read as the binding loads. A value
// the user set is kept.

import { resolveParams } from '../../core/params.js';
import { COPY_MAX, FRAME_HEAD, HEADER_MAX } from './wire.js';

/** SO_RCVBUF and SO_SNDBUF of the sockets provider's connections (bytes). */
const SOCKETS_BUFFER = 1024 * 1024;

/** libfabric's default FI_OFI_RXM_BUFFER_SIZE. */
const RXM_BUFFER_DEFAULT = 16384;

/** The rxm buffer that holds a whole eager frame: the eager limit's payload, railcomm's head and the largest header. */
export function rxmBufferFor(env: NodeJS.ProcessEnv): number {
  let eager = RXM_BUFFER_DEFAULT;
  try { eager = resolveParams({}, env).eagerLimit; } catch { /* a bad setting is reported where it is used */ }
  return Math.max(RXM_BUFFER_DEFAULT, Math.min(eager, COPY_MAX) + FRAME_HEAD + HEADER_MAX);
}

/** railcomm's value for each variable, for the environment env (the rxm buffer follows its eager limit). */
export function ofiEnvDefaults(env: NodeJS.ProcessEnv): Record<string, string> {
  return {
    // libfabric's psm providers link libinfinipath and libpsm2, whose constructors
    // (run as the binding loads) take over SIGTERM, SIGINT, SIGSEGV... to print a
    // backtrace into a file in the working directory and exit: a rank's own
    // SIGTERM listener then never runs, and railcomm run's polite stop kills it.
    IPATH_NO_BACKTRACE: '1',
    HFI_NO_BACKTRACE: '1',
    // The sockets provider's progress thread spins 10 ms before it blocks; beside
    // Node ranks that already fill the cores it starves them (a passive-target
    // lock/put/unlock took 40-76 ms instead of 4): it blocks at once unless told otherwise.
    FI_SOCKETS_PE_WAITTIME: '0',
    // The sockets provider peeks at a message's header (MSG_PEEK) and reads it
    // only once whole. With the kernel's autotuned buffers a stream of
    // mixed-size sends left the first 17 bytes of one queued, and they held
    // their whole coalesced segment (ss -m at the receiver: 317 KB of its 341 KB
    // buffer): less than one 64 KiB loopback segment free, so the window stayed
    // at zero, the rest of the header (in the sender's 418 KB unsent) never came
    // and both ranks waited forever. The provider sets this size on its
    // listening socket, so on the connections it accepts: the receiving end in
    // both hangs whose sockets were recorded. The kernel doubles it (capped at
    // net.core.rmem_max). 1 MiB streams within 6% of autotuned buffers; with
    // 4 MiB (8 in the kernel) a 1 MiB stream once crawled, dropping and
    // retransmitting (bench/RESULTS.md).
    FI_SOCKETS_MAX_BUF_SZ: String(SOCKETS_BUFFER),
    // tcp;ofi_rxm sends a message in one hop up to its buffer size (16384 bytes
    // by default) and in segments beyond. An eager message of the eager limit is
    // a frame of that payload plus railcomm's head and header: with room for it
    // a 16 KiB message takes 13.4 us a half round trip here, not 35.7
    // (bench/ofi/tagged-ab.sh, bench/RESULTS.md).
    FI_OFI_RXM_BUFFER_SIZE: String(rxmBufferFor(env)),
    // udp;ofi_rxd (libfabric 1.17, Debian 12's) keeps up to 128 unacknowledged
    // packets per peer. With thousands of requests outstanding among 4 ranks it
    // then wrote bytes of its own over the first 16 bytes of a receive it
    // completed, in 6 runs of 60 (the rail's frame checks caught it: a peer
    // failed, or a sender's next frame never came). At 32: none in 280 (Node 20
    // and 24; bench/ofi/rxd-stress.sh, bench/RESULTS.md). Likely, not proven:
    // the udp provider underneath wrote past a full completion queue, which
    // libfabric fixed in 2.4 (commit 37eb3f5); fewer packets in flight keep it
    // from filling.
    FI_OFI_RXD_MAX_UNACKED: '32',
  };
}

/** The variables railcomm gives libfabric a value for. */
export const OFI_ENV_NAMES: readonly string[] = Object.keys(ofiEnvDefaults({}));

/** Set railcomm's value of each variable env lacks (a value the user set is kept). */
export function setOfiEnvDefaults(env: NodeJS.ProcessEnv = process.env): void {
  for (const [name, value] of Object.entries(ofiEnvDefaults(env))) env[name] ??= value;
}
