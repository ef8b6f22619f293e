// Pass a token around a ring of ranks: each rank receives from its left
// neighbour, adds its rank, and sends to its right neighbour.
//   npx railcomm run -n 4 examples/ring.js
import { init } from 'railcomm';

const comm = await init();
const { rank, size } = comm;
const token = new Int32Array(1);
const right = (rank + 1) % size;
const left = (rank - 1 + size) % size;

if (rank === 0) {
  token[0] = 0;
  await comm.send(token, right);
  await comm.recv(token, left);
  console.log(`token went around ${size} ranks and came back as ${token[0]} (expected ${(size * (size - 1)) / 2})`);
} else {
  await comm.recv(token, left);
  token[0] += rank;
  await comm.send(token, right);
}
await comm.finalize();
