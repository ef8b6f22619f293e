// Soak test of the udp rail (not part of CI): one million messages of mixed
// sizes from rank 0 to rank 1 under the fault mix, checking that none is lost,
// duplicated, reordered or corrupted, and printing the retransmission counts.
//   node bench/udp-soak.mjs [--messages 1000000] [--faults drop=0.05,dup=0.02,reorder=0.1,corrupt=0.001]
// Exits 1 if any message went wrong.

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const messages = opt('--messages', '1000000');
const faults = opt('--faults', 'drop=0.05,dup=0.02,reorder=0.1,corrupt=0.001');
const cli = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const rank = fileURLToPath(new URL('./udp-soak-rank.mjs', import.meta.url));
const r = spawnSync(process.execPath, [cli, 'run', '-n', '2', '--timeout', '3600', rank], {
  encoding: 'utf8', env: { ...process.env, RAILCOMM_RAILS: 'udp,self', RAILCOMM_UDP_FAULTS: faults, MESSAGES: messages },
});
process.stdout.write(`faults: ${faults}\n${r.stdout}`);
if (r.status !== 0) process.stderr.write(r.stderr);
const ok = /SOAK messages=\d+ lost=0 duplicated=0 reordered=0 corrupt=0/.test(r.stdout);
process.exit(r.status === 0 && ok ? 0 : 1);
