// Shared helpers of the railcomm addon (Node-API, so one binary serves every
// Node version): argument checks, and errors thrown into JavaScript with an
// errno code so the TypeScript wrapper can map them to RailcommError codes.
//
// The functions called per message (crc32cRange, copy, reduce, futexWake,
// addressOf, cma*/mem*) are plain napi_callback functions on the C API:
// Napi::CallbackInfo copies the arguments into a heap array past six (reduce
// takes nine) and each wrapper layer adds checks. The rest uses node-addon-api.
#pragma once
#include <napi.h>
#include <string>

namespace railcomm {

/** Throw an Error whose `code` is the errno name (e.g. ENOSPC) and `errno` its number. */
void ThrowErrno(napi_env env, const std::string& what, int err);
/** Throw a TypeError (bad argument from the TypeScript wrapper: a bug, not a user error). */
void ThrowType(napi_env env, const char* what);

/**
 * Data pointer and byte length of a typed array, DataView or ArrayBuffer;
 * false if none. (A SharedArrayBuffer itself is not readable through Node-API
 * before Node 24.9: the TypeScript wrapper passes a view over it.)
 */
bool BytesOf(napi_env env, napi_value v, char** data, size_t* len);

/** The first n arguments (undefined past those given); returns how many were given. */
inline size_t Args(napi_env env, napi_callback_info info, napi_value* argv, size_t n) {
  size_t argc = n;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  return argc;
}

/** A number argument; false if it is not a number. */
inline bool Num(napi_env env, napi_value v, double* out) { return napi_get_value_double(env, v, out) == napi_ok; }

/** Whether x is a whole number in [0, max]. */
inline bool Whole(double x, double max) { return x >= 0 && x <= max && x == static_cast<double>(static_cast<uint64_t>(x)); }

napi_value Int(napi_env env, int32_t v);
napi_value Uint(napi_env env, uint32_t v);
napi_value Double(napi_env env, double v);
napi_value Bool(napi_env env, bool v);

/** exports[name] = a function calling fn (the C API's callback). */
void SetFn(napi_env env, napi_value exports, const char* name, napi_callback fn);

void InitShm(Napi::Env env, Napi::Object exports);
void InitDoorbell(Napi::Env env, Napi::Object exports);
void InitCma(Napi::Env env, Napi::Object exports);
void InitCrc(Napi::Env env, Napi::Object exports);
void InitSiphash(Napi::Env env, Napi::Object exports);
void InitUdp(Napi::Env env, Napi::Object exports);
void InitReduce(Napi::Env env, Napi::Object exports);
void InitProcess(Napi::Env env, Napi::Object exports);
void InitTcpSocket(Napi::Env env, Napi::Object exports);
void InitPmix(Napi::Env env, Napi::Object exports);
void InitCuda(Napi::Env env, Napi::Object exports);

}  // namespace railcomm
