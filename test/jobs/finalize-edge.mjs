// Finalize edge cases, 2 ranks: a finalize right after a burst that fills the
// write batch exactly; probes and object receives from a rank that finalized;
// receives still posted at finalize fail with ERR_FINALIZED.
import { init, ANY_SOURCE } from '../../dist/index.js';

const comm = await init();
const out = [];
if (comm.rank === 1) {
  // 2048 empty messages are 2048 x 32-byte frames: exactly one 64 KiB batch.
  await comm.send(new Uint8Array(1), 0, 1);
  for (let i = 0; i < 4096; i++) comm.isend(new Uint8Array(0), 0, 2);
  await comm.finalize();
  out.push('finalize after a full batch: ok');
} else {
  await comm.recv(new Uint8Array(1), 1, 1);
  for (let i = 0; i < 4096; i++) await comm.recv(new Uint8Array(0), 1, 2);
  out.push('4096 empty messages: received');
  // Rank 1 has finalized (or is about to): wait until its connection says so.
  const t0 = Date.now();
  let code = '';
  while (Date.now() - t0 < 10_000) {
    try { await comm.send(new Uint8Array(1), 1, 3); await new Promise((r) => setTimeout(r, 20)); }
    catch (e) { code = e.code; break; }
  }
  out.push(`send to a finalized rank: ${code}`);
  for (const [what, p] of [['probe', () => comm.probe(1, 4)], ['recvObject', () => comm.recvObject(1, 5)], ['mprobe', () => comm.mprobe(1, 6)]]) {
    try { await p(); out.push(`${what} from a finalized rank: resolved (wrong)`); } catch (e) { out.push(`${what} from a finalized rank: ${e.code}`); }
  }
  const pending = comm.irecv(new Uint8Array(4), ANY_SOURCE, 7);
  const probe = comm.probe(ANY_SOURCE, 8).then(() => 'resolved', (e) => e.code);
  await comm.finalize();
  try { await pending.wait(); out.push('pending receive at finalize: resolved (wrong)'); } catch (e) { out.push(`pending receive at finalize: ${e.code}`); }
  out.push(`pending probe at finalize: ${await probe}`);
}
for (const l of out) console.log(`RESULT ${l}`);
