// Thread ranks that choose the ofi rail themselves (init({ params: { rails } }),
// with no RAILCOMM_RAILS for the thread host to see): libfabric must still
// read railcomm's defaults, which live in the process's real environment,
// not in a worker's copy of process.env (rail/ofi/env-defaults.ts). Each rank
// exchanges one message over ofi and prints what libfabric sees:
//   FIENV <rail> <FI_OFI_RXM_BUFFER_SIZE> <FI_SOCKETS_PE_WAITTIME> <FI_OFI_RXD_MAX_UNACKED> <FI_SOCKETS_MAX_BUF_SZ>
//   RAILCOMM_OFI_PROVIDERS='tcp;ofi_rxm' railcomm run -n 2 --threads-per-process 1 test/jobs/ofi-env-threads.mjs

import { init } from '../../dist/index.js';
import { loadOfi } from '../../dist/rail/ofi/native.js';

const comm = await init({ params: { rails: 'ofi,self' } });
const peer = 1 - comm.rank;
const b = new Uint8Array(8);
if (comm.rank === 0) { await comm.send(b, peer, 1); await comm.recv(b, peer, 1); } else { await comm.recv(b, peer, 1); await comm.send(b, peer, 1); }
const rail = comm.world.ctx.endpointFor(peer).lane?.rail.name ?? 'none';
const ofi = loadOfi();
console.log(`FIENV ${rail} ${ofi?.getEnv('FI_OFI_RXM_BUFFER_SIZE')} ${ofi?.getEnv('FI_SOCKETS_PE_WAITTIME')} ${ofi?.getEnv('FI_OFI_RXD_MAX_UNACKED')} ${ofi?.getEnv('FI_SOCKETS_MAX_BUF_SZ')}`);
await comm.finalize();
