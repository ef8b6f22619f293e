// Entry point of railcomm's native addon: registers each part's functions.
// Context-aware, so worker-thread ranks (hybrid jobs) can load it too.
#include "common.h"
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <mutex>

namespace railcomm {

void ThrowErrno(Isolate* iso, const std::string& what, int err) {
  std::string msg = what + ": " + std::strerror(err);
  Local<v8::Context> ctx = iso->GetCurrentContext();
  Local<v8::Object> e = v8::Exception::Error(v8::String::NewFromUtf8(iso, msg.c_str()).ToLocalChecked()).As<v8::Object>();
  const char* name = err == ENOSPC ? "ENOSPC" : err == ENOENT ? "ENOENT" : err == EEXIST ? "EEXIST" : err == EPERM ? "EPERM"
                     : err == ESRCH ? "ESRCH" : err == ENOMEM ? "ENOMEM" : err == EFAULT ? "EFAULT" : err == EACCES ? "EACCES" : "EIO";
  e->Set(ctx, v8::String::NewFromUtf8Literal(iso, "code"), v8::String::NewFromUtf8(iso, name).ToLocalChecked()).Check();
  e->Set(ctx, v8::String::NewFromUtf8Literal(iso, "errno"), v8::Integer::New(iso, err)).Check();
  iso->ThrowException(e);
}

void ThrowType(Isolate* iso, const char* what) {
  iso->ThrowException(v8::Exception::TypeError(v8::String::NewFromUtf8(iso, what).ToLocalChecked()));
}

bool BytesOf(Local<Value> v, char** data, size_t* len) {
  if (v->IsArrayBufferView()) {
    Local<v8::ArrayBufferView> view = v.As<v8::ArrayBufferView>();
    // Buffer() moves an on-heap typed array's bytes off the heap: the address is then stable.
    std::shared_ptr<v8::BackingStore> bs = view->Buffer()->GetBackingStore();
    *data = static_cast<char*>(bs->Data()) + view->ByteOffset();
    *len = view->ByteLength();
    return true;
  }
  if (v->IsArrayBuffer()) {
    std::shared_ptr<v8::BackingStore> bs = v.As<v8::ArrayBuffer>()->GetBackingStore();
    *data = static_cast<char*>(bs->Data()); *len = bs->ByteLength();
    return true;
  }
  if (v->IsSharedArrayBuffer()) {
    std::shared_ptr<v8::BackingStore> bs = v.As<v8::SharedArrayBuffer>()->GetBackingStore();
    *data = static_cast<char*>(bs->Data()); *len = bs->ByteLength();
    return true;
  }
  return false;
}

/**
 * Node unloads an addon when the last environment using it (a worker thread)
 * ends, but V8 frees that worker's SharedArrayBuffers later, calling our unmap
 * deleter: the code must stay. Pin the library for the life of the process.
 */
void PinLibrary() {
  static std::once_flag once;  // workers may load the addon at the same moment
  std::call_once(once, [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&PinLibrary), &info) != 0 && info.dli_fname != nullptr) {
      dlopen(info.dli_fname, RTLD_NOW | RTLD_NODELETE);
    }
  });
}

}  // namespace railcomm

NODE_MODULE_INIT(/* exports, module, context */) {
  railcomm::PinLibrary();
  railcomm::InitShm(exports, context);
  railcomm::InitDoorbell(exports, context);
  railcomm::InitCma(exports, context);
  railcomm::InitCrc(exports, context);
  railcomm::InitUdp(exports, context);
  railcomm::InitReduce(exports, context);
  railcomm::InitProcess(exports, context);
}
