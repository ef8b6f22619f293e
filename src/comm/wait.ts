// waitAll / waitAny over Requests, as MPI_Waitall / MPI_Waitany.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { Request, type Status } from '../proto/request.js';

function checkRequests(reqs: unknown, what: string): Request[] {
  if (!Array.isArray(reqs) || reqs.some((r) => !(r instanceof Request))) {
    throw new RailcommError(ErrorCode.INVALID_ARG, `${what} takes an array of Requests (from isend/irecv)`);
  }
  return reqs as Request[];
}

/** Resolves with every Status, in order; rejects with the first failure. */
export function waitAll(reqs: readonly Request[]): Promise<Status[]> {
  return Promise.all(checkRequests(reqs, 'waitAll').map((r) => r.wait()));
}

/** Resolves with the first request to complete: { index, status }; rejects if that one failed. */
export function waitAny(reqs: readonly Request[]): Promise<{ index: number; status: Status }> {
  const list = checkRequests(reqs, 'waitAny');
  if (list.length === 0) return Promise.reject(new RailcommError(ErrorCode.INVALID_ARG, 'waitAny needs at least one request'));
  for (let i = 0; i < list.length; i++) {
    if (list[i]!.done) return list[i]!.wait().then((status) => ({ index: i, status }));
  }
  return new Promise((resolve, reject) => {
    // One listener per request, all removed once the first settles, so a
    // long-lived request passed to many waitAny calls collects nothing.
    const listeners = list.map((r, index) => {
      const fn = (): void => {
        list.forEach((other, i) => other.offSettled(listeners[i]!));
        r.wait().then((status) => resolve({ index, status }), reject);
      };
      return fn;
    });
    list.forEach((r, i) => r.onSettled(listeners[i]!));
  });
}
