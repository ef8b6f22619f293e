// The file descriptor behind a node:net socket, for the addon's calls on it
// (peeking at the wire-up service's socket, TCP_INFO and keepalive of a tcp
// lane). libuv's handle is internal (`_handle.fd`, the same from Node 20 to
// 26, and the same handle after a socket is re-wrapped); -1 where it is not
// there, and the caller does without.

import type net from 'node:net';

export function netSocketFd(s: net.Socket): number {
  const fd = (s as unknown as { _handle?: { fd?: unknown } | null })._handle?.fd;
  return typeof fd === 'number' && Number.isInteger(fd) && fd >= 0 ? fd : -1;
}
