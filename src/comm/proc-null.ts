// MPI_PROC_NULL: a send or receive naming it completes at once and moves
// nothing, so a halo exchange needs no branch at a non-periodic edge
// (cart.shift() names PROC_NULL there). A receive from it reports
// { source: PROC_NULL, tag: ANY_TAG, bytes: 0 }, as MPI's status does.

import { ANY_TAG, PROC_NULL } from '../proto/matching.js';
import { Request, statusOf, type Status } from '../proto/request.js';

export const NULL_STATUS: Status = statusOf(PROC_NULL, ANY_TAG, 0);

/** The Request of a nonblocking call naming PROC_NULL: already complete. */
export function nullRequest(kind: number): Request {
  const r = new Request(kind, new Uint8Array(0));
  r.complete(PROC_NULL, ANY_TAG, 0);
  return r;
}

/** A blocking call naming PROC_NULL: resolved with NULL_STATUS. */
export function nullDone(): Promise<Status> {
  return Promise.resolve(NULL_STATUS);
}

/** What mprobe/improbe return for PROC_NULL (MPI_MESSAGE_NO_PROC): its recv moves nothing. */
export const NO_PROC_TOKEN = Symbol('PROC_NULL message');
