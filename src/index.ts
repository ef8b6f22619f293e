// railcomm's public API (DESIGN sections 4 and 4b). Everything a program imports
// comes from here; the layers below are internal.

export { init, type InitOptions } from './comm/init.js';
export { Communicator, type RequestOptions } from './comm/communicator.js';
export { CartCommunicator } from './comm/cart-comm.js';
export { InterCommunicator } from './comm/inter.js';
export { dimsCreate, type Shift } from './comm/cart.js';
export { op, UserOp, type ReduceOpName, type ReduceOp } from './comm/coll/ops.js';
export type { ReduceArray } from './native/kernels.js';
export { Message } from './comm/message.js';
export { Window, type AtomicType, type AtomicValue, type AccumulateOp, type FetchOp, type LockMode } from './comm/window.js';
export { waitAll, waitAny, waitSome, testAll, testAny } from './comm/wait.js';
export { Request, type Status } from './proto/request.js';
export { ANY_SOURCE, ANY_TAG, PROC_NULL } from './proto/matching.js';
export { RailcommError, ErrorCode, type ErrorCodeName } from './core/errors.js';
export { PARAMS, describeParams, type ParamOptions } from './core/params.js';
export { cuda } from './cuda/api.js';
export { DeviceArray, type DeviceElements, type ElementType } from './cuda/memory.js';
export { DeviceBuffer } from './core/bytes.js';
