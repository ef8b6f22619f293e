// railcomm's public API (DESIGN section 4). Everything a program imports comes
// from here; the layers below are internal.

export { init, type InitOptions } from './comm/init.js';
export { Communicator, type RequestOptions } from './comm/communicator.js';
export { Message } from './comm/message.js';
export { Window, type AtomicType, type AccumulateOp, type FetchOp, type LockMode } from './comm/window.js';
export { waitAll, waitAny } from './comm/wait.js';
export { Request, type Status } from './proto/request.js';
export { ANY_SOURCE, ANY_TAG } from './proto/matching.js';
export { RailcommError, ErrorCode, type ErrorCodeName } from './core/errors.js';
export { PARAMS, describeParams, type ParamOptions } from './core/params.js';
