// waitAll / waitAny / waitSome and testAll / testAny over Requests, as
// MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Testall and MPI_Testany.

import { RailcommError, ErrorCode } from '../core/errors.js';
import { Request, type Status } from '../proto/request.js';
import { describe } from '../core/bytes.js';

function checkRequests(reqs: unknown, what: string): Request[] {
  if (!Array.isArray(reqs)) throw new RailcommError(ErrorCode.INVALID_ARG, `${what} takes an array of Requests (from isend, irecv or an i-collective), got ${describe(reqs)}`);
  const bad = reqs.findIndex((r) => !(r instanceof Request));
  if (bad >= 0) throw new RailcommError(ErrorCode.INVALID_ARG, `${what}: element ${bad} is ${describe(reqs[bad])}, not a Request; pass the Requests that isend, irecv or an i-collective returned`);
  return reqs as Request[];
}

/** Resolves with every Status, in order; rejects with the first failure. */
export function waitAll(reqs: readonly Request[]): Promise<Status[]> {
  return Promise.all(checkRequests(reqs, 'waitAll').map((r) => r.wait()));
}

/** Resolves with the first request to complete: { index, status }; rejects if that one failed. */
export function waitAny(reqs: readonly Request[]): Promise<{ index: number; status: Status }> {
  const list = checkRequests(reqs, 'waitAny');
  if (list.length === 0) throw new RailcommError(ErrorCode.INVALID_ARG, 'waitAny needs at least one request');
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

/**
 * Resolves once at least one request completed, with every one complete by
 * then, in index order: [{ index, status }, ...]; rejects with the first
 * failure among them. An empty array resolves to [].
 */
export function waitSome(reqs: readonly Request[]): Promise<Array<{ index: number; status: Status }>> {
  const list = checkRequests(reqs, 'waitSome');
  if (list.length === 0 || list.some((r) => r.done)) return settledNow(list);
  return waitAny(list).then(() => settledNow(list), () => settledNow(list));
}

/** The completed requests now, in order; rejects with the first failed one's error. */
function settledNow(list: readonly Request[]): Promise<Array<{ index: number; status: Status }>> {
  try {
    const out: Array<{ index: number; status: Status }> = [];
    for (let i = 0; i < list.length; i++) {
      const st = list[i]!.test();
      if (st !== undefined) out.push({ index: i, status: st });
    }
    return Promise.resolve(out);
  } catch (e) {
    return Promise.reject(e);
  }
}

/** Every Status when all requests are complete, else undefined; throws the first failure. [] for []. */
export function testAll(reqs: readonly Request[]): Status[] | undefined {
  const list = checkRequests(reqs, 'testAll');
  const out: Status[] = [];
  let pending = false;
  // test() throws a failed request's error: look at every one, so a failure is never hidden behind a pending one.
  for (const r of list) {
    const st = r.test();
    if (st === undefined) pending = true;
    else out.push(st);
  }
  return pending ? undefined : out;
}

/** The first complete request as { index, status }, or undefined when none is (or the array is empty); throws if it failed. */
export function testAny(reqs: readonly Request[]): { index: number; status: Status } | undefined {
  const list = checkRequests(reqs, 'testAny');
  for (let i = 0; i < list.length; i++) {
    const st = list[i]!.test();
    if (st !== undefined) return { index: i, status: st };
  }
  return undefined;
}
