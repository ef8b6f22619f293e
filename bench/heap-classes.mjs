// A heap snapshot's bytes and object counts by constructor (objects and
// closures by name, the rest by node type), largest first:
//   node --max-old-space-size=4000 bench/heap-classes.mjs file.heapsnapshot [top]
import { readFileSync } from 'node:fs';

const s = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const top = Number(process.argv[3] ?? 20);
const { node_fields: fields, node_types: [types] } = s.snapshot.meta;
const T = fields.indexOf('type'), N = fields.indexOf('name'), S = fields.indexOf('self_size');
const by = new Map();
for (let i = 0; i < s.nodes.length; i += fields.length) {
  const type = types[s.nodes[i + T]];
  const name = type === 'object' || type === 'closure' ? s.strings[s.nodes[i + N]] : `(${type})`;
  const e = by.get(name) ?? { count: 0, bytes: 0 };
  e.count++;
  e.bytes += s.nodes[i + S];
  by.set(name, e);
}
for (const [name, e] of [...by].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top)) {
  console.log(`${String(e.bytes).padStart(11)} bytes ${String(e.count).padStart(8)} objects  ${(e.bytes / e.count).toFixed(0).padStart(5)} B each  ${name}`);
}
