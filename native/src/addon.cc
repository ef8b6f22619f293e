// Entry point of railcomm's native addon: registers each part's functions.
// Node-API only, so the one binary loads in every Node version (and in
// worker-thread ranks: Node-API addons are context-aware).
#include "common.h"
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <mutex>

namespace railcomm {

namespace {
const char* ErrnoName(int err) {
  switch (err) {
    case ENOSPC: return "ENOSPC";
    case ENOENT: return "ENOENT";
    case EEXIST: return "EEXIST";
    case EPERM: return "EPERM";
    case ESRCH: return "ESRCH";
    case ENOMEM: return "ENOMEM";
    case EFAULT: return "EFAULT";
    case EACCES: return "EACCES";
    default: return "EIO";
  }
}

/** Bytes per element of each napi_typedarray_type (Float16Array, where Node has it, is 11). */
size_t ElementSize(napi_typedarray_type t) {
  static const size_t kSize[] = {1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8, 2};
  const size_t i = static_cast<size_t>(t);
  return i < sizeof(kSize) / sizeof(kSize[0]) ? kSize[i] : 1;
}
}  // namespace

void ThrowErrno(napi_env env, const std::string& what, int err) {
  const std::string msg = what + ": " + std::strerror(err);
  napi_value code, m, e;
  napi_create_string_utf8(env, ErrnoName(err), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, msg.c_str(), msg.size(), &m);
  napi_create_error(env, code, m, &e);
  napi_set_named_property(env, e, "errno", Int(env, err));
  napi_throw(env, e);
}

void ThrowType(napi_env env, const char* what) { napi_throw_type_error(env, nullptr, what); }

bool BytesOf(napi_env env, napi_value v, char** data, size_t* len) {
  // Typed arrays first (what every hot call passes): one Node-API call. Node
  // moves an on-heap typed array's bytes off the heap to answer, so the
  // address is then stable.
  napi_typedarray_type type;
  size_t n = 0;
  void* p = nullptr;
  if (napi_get_typedarray_info(env, v, &type, &n, &p, nullptr, nullptr) == napi_ok) {
    *data = static_cast<char*>(p);
    *len = n * ElementSize(type);
    return true;
  }
  if (napi_get_dataview_info(env, v, &n, &p, nullptr, nullptr) == napi_ok) {
    *data = static_cast<char*>(p); *len = n;
    return true;
  }
  if (napi_get_arraybuffer_info(env, v, &p, &n) == napi_ok) {
    *data = static_cast<char*>(p); *len = n;
    return true;
  }
  return false;
}

napi_value Int(napi_env env, int32_t v) { napi_value r; napi_create_int32(env, v, &r); return r; }
napi_value Uint(napi_env env, uint32_t v) { napi_value r; napi_create_uint32(env, v, &r); return r; }
napi_value Double(napi_env env, double v) { napi_value r; napi_create_double(env, v, &r); return r; }
napi_value Bool(napi_env env, bool v) { napi_value r; napi_get_boolean(env, v, &r); return r; }

void SetFn(napi_env env, napi_value exports, const char* name, napi_callback fn) {
  napi_value f;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, fn, nullptr, &f);
  napi_set_named_property(env, exports, name, f);
}

/**
 * Node unloads an addon when the last environment using it (a worker thread)
 * ends, but V8 frees that worker's SharedArrayBuffers later, calling our unmap
 * finalizer, and the doorbell and parent-watch threads may still be on their
 * way out: the code must stay. Pin the library for the life of the process.
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

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  PinLibrary();
  InitShm(env, exports);
  InitDoorbell(env, exports);
  InitCma(env, exports);
  InitCrc(env, exports);
  InitSiphash(env, exports);
  InitUdp(env, exports);
  InitReduce(env, exports);
  InitProcess(env, exports);
  InitPmix(env, exports);
#ifdef __linux__
  InitCuda(env, exports);
  InitTcpSocket(env, exports);
#endif
  return exports;
}

}  // namespace railcomm

namespace {
Napi::Object Init(Napi::Env env, Napi::Object exports) { return railcomm::Init(env, exports); }
}  // namespace

NODE_API_MODULE(railcomm_native, Init)
