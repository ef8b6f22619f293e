// The udp rail's two dgram sockets (rail.ts): made with a lookup that takes
// IP literals only, bound to a port of the device's address, and the fd
// behind each, for the addon's sendmmsg.

import dgram from 'node:dgram';

/** A udp4 socket with send and receive buffers of bufferBytes asked of the kernel. */
export function udpSocket(bufferBytes: number): dgram.Socket {
  // IP literals only: answer the lookup synchronously (dns.lookup would defer every send by a tick).
  const lookup = (address: string, _o: unknown, cb: (err: Error | null, a: string, family: number) => void): void => cb(null, address, 4);
  return dgram.createSocket({ type: 'udp4', lookup: lookup as never, recvBufferSize: bufferBytes, sendBufferSize: bufferBytes });
}

/** Bind s to a free port of ip; the port. */
export function bindSocket(s: dgram.Socket, ip: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    s.once('error', reject);
    s.bind({ address: ip, port: 0, exclusive: true }, () => { s.off('error', reject); resolve(s.address().port); });
  });
}

/**
 * The fd of a bound dgram socket, for the addon's sendmmsg; -1 where it
 * cannot be found. Node keeps the handle behind an internal symbol: should
 * that change, batching is simply off and dgram.send serves.
 */
export function socketFd(s: dgram.Socket): number {
  for (const sym of Object.getOwnPropertySymbols(s)) {
    if (sym.description !== 'state symbol') continue;
    const fd = (s as unknown as Record<symbol, { handle?: { fd?: unknown } } | undefined>)[sym]?.handle?.fd;
    if (typeof fd === 'number' && Number.isInteger(fd) && fd >= 0) return fd;
  }
  return -1;
}
