// Which libfabric errors mean a peer cannot be reached (rail.ts, endpoint.ts).

/** Errors that mean the peer cannot be reached (libfabric errno values). */
export function isPeerError(err: number): boolean {
  return err === 111 || err === 104 || err === 107 || err === 113 || err === 110 || err === 103 || err === 101 || err === 100 || err === 32 || err === 5;
}

/** A send refused at the call because the peer is unreachable: the errors above, or an address that names nothing now (sockets: FI_ENOENT). */
export function unreachableAtSend(err: number): boolean {
  return isPeerError(err) || err === 2;
}
