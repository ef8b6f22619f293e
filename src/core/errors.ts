// The one error class railcomm throws or rejects with. Each failure has a
// stable `code` that programs can branch on, and a message that says what to do.

export const ErrorCode = {
  TRUNCATE: 'ERR_TRUNCATE',
  INVALID_ARG: 'ERR_INVALID_ARG',
  RANK: 'ERR_RANK',
  TAG: 'ERR_TAG',
  PEER_FAILED: 'ERR_PEER_FAILED',
  TIMEOUT: 'ERR_TIMEOUT',
  CANCELLED: 'ERR_CANCELLED',
  FINALIZED: 'ERR_FINALIZED',
  NO_RAIL: 'ERR_NO_RAIL',
  PROTOCOL: 'ERR_PROTOCOL',
  BOOT: 'ERR_BOOT',
  /** RAILCOMM_CHECK found ranks that called different collectives (or with different arguments) at the same point. */
  COLLECTIVE_MISMATCH: 'ERR_COLLECTIVE_MISMATCH',
  /** GPU memory: the CUDA driver is missing here, or one of its calls failed (the message names the call and its CUresult). */
  CUDA: 'ERR_CUDA',
} as const;

export type ErrorCodeName = (typeof ErrorCode)[keyof typeof ErrorCode];

export class RailcommError extends Error {
  readonly code: ErrorCodeName;

  constructor(code: ErrorCodeName, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'RailcommError';
  }
}

export function invalidArg(message: string): RailcommError {
  return new RailcommError(ErrorCode.INVALID_ARG, message);
}

export function peerFailed(rank: number, why: string, cause?: unknown): RailcommError {
  return new RailcommError(ErrorCode.PEER_FAILED, `rank ${rank} failed: ${why}`, cause === undefined ? undefined : { cause });
}

export function finalized(what: string): RailcommError {
  return new RailcommError(ErrorCode.FINALIZED, `${what}: finalize() was already called on this rank; create no new operations after it`);
}
