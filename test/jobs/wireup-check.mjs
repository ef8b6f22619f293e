// Started by any launcher: says which one railcomm detected, then proves the
// wire-up works with a ring, an allreduce and a barrier.
import { init } from '../../dist/index.js';

const comm = await init();
const t = new Int32Array(1);
const right = (comm.rank + 1) % comm.size, left = (comm.rank - 1 + comm.size) % comm.size;
if (comm.rank === 0) { await comm.send(t, right); await comm.recv(t, left); }
else { await comm.recv(t, left); t[0] += comm.rank; await comm.send(t, right); }
const sum = new Float64Array(1);
await comm.allreduce(new Float64Array([comm.rank]), sum, 'sum');
await comm.barrier();
const ok = sum[0] === (comm.size * (comm.size - 1)) / 2 && (comm.rank !== 0 || t[0] === sum[0]);
const tcp = comm.world.ctx.rails.find((r) => r.component === 'tcp');
console.log(`WIREUP ${ok ? 'ok' : 'wrong'} launcher=${comm.world.ctx.launch.launcher} rank=${comm.rank} size=${comm.size}`);
console.log(`WIREUP-VIA rank=${comm.rank} ${comm.world.ctx.launch.wireup}`);
if (process.env.SHOW_DEVICE) console.log(`DEVICE rank=${comm.rank} ${tcp ? tcp.device.name + ' ' + tcp.address() : 'none'}`);
await comm.finalize();
