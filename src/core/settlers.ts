// A pending promise whose resolve and reject functions are handed over
// without a closure per promise: one shared executor leaves them in module
// variables, which the caller takes right after (the executor runs
// synchronously in the constructor). Requests and one-sided operations make
// one per operation on hot paths.

import type { RailcommError } from './errors.js';

let lastResolve: ((v: never) => void) | null = null;
let lastReject: ((e: RailcommError) => void) | null = null;
function capture(resolve: (v: never) => void, reject: (e: RailcommError) => void): void {
  lastResolve = resolve;
  lastReject = reject;
}

/** A new pending promise; take its functions next with takeResolve() and takeReject(). */
export function pendingPromise<T>(): Promise<T> {
  return new Promise<T>(capture as (resolve: (v: T) => void, reject: (e: RailcommError) => void) => void);
}

/** The resolve function of the promise pendingPromise() just made. */
export function takeResolve<T>(): (v: T) => void {
  const f = lastResolve as (v: T) => void;
  lastResolve = null;
  return f;
}

/** The reject function of the promise pendingPromise() just made. */
export function takeReject(): (e: RailcommError) => void {
  const f = lastReject!;
  lastReject = null;
  return f;
}
