// Shared helpers of the railcomm addon: argument checks and errors thrown into
// JavaScript with an errno code, so the TypeScript wrapper can map them to
// RailcommError codes.
#pragma once
#include <node.h>
#include <v8.h>
#include <string>

namespace railcomm {

using v8::FunctionCallbackInfo;
using v8::Isolate;
using v8::Local;
using v8::Value;

/** Throw an Error whose `code` is the errno name (e.g. ENOSPC) and `errno` its number. */
void ThrowErrno(Isolate* iso, const std::string& what, int err);
/** Throw a TypeError (bad argument from the TypeScript wrapper: a bug, not a user error). */
void ThrowType(Isolate* iso, const char* what);

/** Data pointer and length of an ArrayBufferView, ArrayBuffer or SharedArrayBuffer; false if none. */
bool BytesOf(Local<Value> v, char** data, size_t* len);

void InitShm(Local<v8::Object> exports, Local<v8::Context> ctx);
void InitDoorbell(Local<v8::Object> exports, Local<v8::Context> ctx);
void InitCma(Local<v8::Object> exports, Local<v8::Context> ctx);
void InitCrc(Local<v8::Object> exports, Local<v8::Context> ctx);
void InitUdp(Local<v8::Object> exports, Local<v8::Context> ctx);
void InitReduce(Local<v8::Object> exports, Local<v8::Context> ctx);
void InitProcess(Local<v8::Object> exports, Local<v8::Context> ctx);

inline void SetFn(Local<v8::Object> exports, Local<v8::Context> ctx, const char* name, v8::FunctionCallback fn) {
  Isolate* iso = ctx->GetIsolate();
  exports->Set(ctx, v8::String::NewFromUtf8(iso, name).ToLocalChecked(),
               v8::FunctionTemplate::New(iso, fn)->GetFunction(ctx).ToLocalChecked()).Check();
}

}  // namespace railcomm
