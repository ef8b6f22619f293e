// What railcomm needs of an AbortSignal, as its own type: the public
// declarations then compile in a project with neither the DOM library nor
// Node's type package (@types/node); the DOM's and Node's AbortSignal fit it.

export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}
