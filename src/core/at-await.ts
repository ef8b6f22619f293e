// Errors found later (a truncation seen when the message arrives, a peer's
// failure, a cancellation) are made deep in railcomm, far from the program's
// line that posted the operation. These helpers give such an error the stack
// of the program instead, and cost nothing unless something fails.

import type { RailcommError } from './errors.js';
import { pendingPromise, takeReject, takeResolve } from './settlers.js';

/** The operation each moved error belongs to: another operation failing with the same error gets a copy. */
const owners = new WeakMap<Error, object>();

/**
 * err itself for its first operation (so request.error is what is thrown), a
 * copy for any other: one error may fail many requests (a peer's failure),
 * each awaited somewhere else, and each stack must stay its waiter's.
 */
function own(err: RailcommError, owner: object): RailcommError {
  const had = owners.get(err);
  if (had === undefined || had === owner) {
    owners.set(err, owner);
    return err;
  }
  const copy = Object.create(Object.getPrototypeOf(err) as object) as RailcommError;
  Object.defineProperties(copy, Object.getOwnPropertyDescriptors(err));
  owners.set(copy, owner);
  return copy;
}

/**
 * Runs as a rejection handler inside the awaiting code's promise chain: V8
 * then reconstructs that chain as `at async f (file:line)` frames, so the
 * captured stack names the program's await (its own frames above it are left out).
 */
function relocate(this: object, err: RailcommError): never {
  const e = own(err, this);
  Error.captureStackTrace(e, relocate);
  throw e;
}

/**
 * Settle a promise made by pendingPromise() (given its resolve function) as
 * rejected with err, err's stack captured where the awaiting code resumes.
 * The rejection passes through one more promise whose handler captures it:
 * the adoption is queued first, so the handler runs once the waiter's promise
 * follows its promise, which is what V8 walks. Failure path only: two promises
 * and a stack capture.
 */
export function rejectAtAwait<T>(resolve: (v: T) => void, err: RailcommError, owner: object): void {
  const p = pendingPromise<T>();
  takeResolve<T>();
  const reject = takeReject();
  (resolve as (v: PromiseLike<T>) => void)(p.then(undefined, relocate.bind(owner)));
  reject(err);
}

/** err with the stack of whoever called `above` (for an operation found failed when the program asks). */
export function failedHere(err: RailcommError, owner: object, above: Function): RailcommError {
  const e = own(err, owner);
  Error.captureStackTrace(e, above);
  return e;
}
