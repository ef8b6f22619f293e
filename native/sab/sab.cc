// railcomm's V8 shim: the one thing railcomm's Node-API addon cannot do on
// every Node it supports. Node-API wraps memory it did not allocate as a
// SharedArrayBuffer only through node_api_create_external_sharedarraybuffer,
// which Node 20 lacks (as do 24 before 24.16, 26.0, and 22 before its
// backport: 22.23 has it); the shm rail needs its /dev/shm mappings as
// SharedArrayBuffers. This file does
// just that with the V8 API that Node 20, 22, 24 and 26 all have, so it is
// built per Node ABI (prebuilds/linux-x64/node.abi<N>.node); the addon uses
// it only where the Node-API call is missing (src/native/addon.ts decides).
#include <node.h>
#include <v8.h>
#include <dlfcn.h>
#include <mutex>
#include <sys/mman.h>

namespace {

/** V8 frees the buffer (any thread, possibly after the creating worker is gone): unmap. */
void Unmap(void* data, size_t len, void* /*deleter_data*/) {
  if (data != nullptr && len > 0) munmap(data, len);
}

/**
 * wrapMapping(address: bigint, length: number) -> SharedArrayBuffer over the
 * MAP_SHARED mapping at address, which it then owns (unmapped when freed).
 * Only for mappings the addon just made: the address is not checked.
 */
void WrapMapping(const v8::FunctionCallbackInfo<v8::Value>& a) {
  v8::Isolate* iso = a.GetIsolate();
  if (a.Length() < 2 || !a[0]->IsBigInt() || !a[1]->IsNumber()) {
    iso->ThrowException(v8::Exception::TypeError(v8::String::NewFromUtf8Literal(iso, "wrapMapping(address: bigint, length: number)")));
    return;
  }
  bool lossless = false;
  const uint64_t address = a[0].As<v8::BigInt>()->Uint64Value(&lossless);
  const double len = a[1].As<v8::Number>()->Value();
  if (!lossless || address == 0 || !(len > 0)) {
    iso->ThrowException(v8::Exception::TypeError(v8::String::NewFromUtf8Literal(iso, "wrapMapping: a mapping's address and positive length")));
    return;
  }
  std::unique_ptr<v8::BackingStore> bs = v8::SharedArrayBuffer::NewBackingStore(reinterpret_cast<void*>(address), static_cast<size_t>(len), Unmap, nullptr);
  a.GetReturnValue().Set(v8::SharedArrayBuffer::New(iso, std::shared_ptr<v8::BackingStore>(std::move(bs))));
}

/** V8 may free a worker's buffers after the worker (and Node's hold on this library) is gone: stay loaded. */
void PinLibrary() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&PinLibrary), &info) != 0 && info.dli_fname != nullptr) dlopen(info.dli_fname, RTLD_NOW | RTLD_NODELETE);
  });
}

}  // namespace

// Context-aware: worker-thread ranks load it too.
NODE_MODULE_INIT(/* exports, module, context */) {
  PinLibrary();
  v8::Isolate* iso = v8::Isolate::GetCurrent();  // Context::GetIsolate is gone in V8 14 (Node 26)
  exports->Set(context, v8::String::NewFromUtf8Literal(iso, "wrapMapping"),
               v8::FunctionTemplate::New(iso, WrapMapping)->GetFunction(context).ToLocalChecked()).Check();
}
