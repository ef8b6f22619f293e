// A tcp address that drops connection requests, as a firewall that drops
// would: a listener whose accept queue is full (backlog 1) in a child process
// whose event loop never runs, so the kernel drops every further SYN.
import net from 'node:net';
import { spawn } from 'node:child_process';
import { once } from 'node:events';

/** Starts one; `close()` ends it (the child and the connections that filled its queue). */
export async function blackHole() {
  const code = `const s = require('node:net').createServer();
s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
  process.stdout.write(s.address().port + '\\n');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30000);
  process.exit(0);
});`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = await once(child.stdout, 'data');
  const port = Number(String(line).trim());
  const fillers = [];
  for (let i = 0; i < 16; i++) {
    const s = net.connect({ host: '127.0.0.1', port });
    s.on('error', () => {});
    fillers.push(s);
    const made = await Promise.race([once(s, 'connect').then(() => true), new Promise((r) => setTimeout(() => r(false), 300))]);
    if (!made) break; // this SYN went unanswered: the queue is full
  }
  return { port, close() { for (const s of fillers) s.destroy(); child.kill('SIGKILL'); } };
}
