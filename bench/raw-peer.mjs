// Shared set-up of the raw Node baselines: the parent listens on loopback,
// forks the same script as the peer (`--child PORT [--spin]`), and waits for
// both the connection and the child's 'connected' message.
import net from 'node:net';
import { fork } from 'node:child_process';

export async function startPeer(scriptPath, opts) {
  const server = net.createServer();
  await new Promise((res) => server.listen(0, '127.0.0.1', res));
  const { port } = server.address();
  const child = fork(scriptPath, ['--child', String(port), ...(opts.spin ? ['--spin'] : [])], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.on('exit', (code) => { if (code) { console.error(`child exited with ${code}`); process.exit(1); } });

  const waiters = [];
  child.on('message', (m) => { const w = waiters.shift(); if (w) w(m); });
  const nextMsg = () => new Promise((res) => waiters.push(res));

  const [sock] = await Promise.all([
    new Promise((res) => server.once('connection', res)),
    nextMsg(), // 'connected'
  ]);
  server.close();
  sock.setNoDelay(true);
  return { sock, child, nextMsg };
}
