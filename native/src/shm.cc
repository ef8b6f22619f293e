// Named shared-memory segments under /dev/shm, mapped and handed to JavaScript
// as SharedArrayBuffers that unmap when V8 frees the last reference. Space is
// reserved up front, so a full /dev/shm fails here.
//
// Node-API can wrap memory it did not allocate as a SharedArrayBuffer only
// through node_api_create_external_sharedarraybuffer (Node 24.16 and 26.1, and
// 22.23 has it too; experimental), looked up at run time, so this binary, built
// against any headers, uses it where the running Node has it; elsewhere the
// caller passes the V8 shim's wrapMapping (native/sab/) as the last argument.
#include "common.h"
#include <cerrno>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace railcomm {
namespace {

using CreateExternalSab = napi_status (*)(napi_env, void*, size_t, void (*)(void*, void*), void*, napi_value*);

CreateExternalSab ExternalSab() {
  static const CreateExternalSab fn =
      reinterpret_cast<CreateExternalSab>(dlsym(RTLD_DEFAULT, "node_api_create_external_sharedarraybuffer"));
  return fn;
}

/** Finalizer of a wrapped mapping (any thread, possibly after the env is gone): the hint is the length. */
void Unmap(void* data, void* hint) {
  const size_t len = reinterpret_cast<size_t>(hint);
  if (data != nullptr && len > 0) munmap(data, len);
}

bool NameArg(const Napi::CallbackInfo& a, std::string* out) {
  if (a.Length() < 1 || !a[0].IsString()) { ThrowType(a.Env(), "segment name must be a string"); return false; }
  const std::string name = a[0].As<Napi::String>().Utf8Value();
  if (name.empty() || name.size() > 200 || name.find('/') != std::string::npos) { ThrowType(a.Env(), "segment name must be 1-200 characters without '/'"); return false; }
  *out = "/" + name;
  return true;
}

/**
 * The mapping [p, p + len) as a SharedArrayBuffer that owns it (unmapped when
 * freed); on failure it is unmapped and an exception is pending.
 */
Napi::Value Wrap(const Napi::CallbackInfo& a, size_t shimArg, void* p, size_t len) {
  napi_env env = a.Env();
  if (a.Length() > shimArg && a[shimArg].IsFunction()) {
    napi_value args[2];
    napi_create_bigint_uint64(env, reinterpret_cast<uint64_t>(p), &args[0]);
    args[1] = Double(env, static_cast<double>(len));
    napi_value undef, out = nullptr;
    napi_get_undefined(env, &undef);
    // The shim throws only on bad arguments, before its buffer owns the mapping.
    if (napi_call_function(env, undef, a[shimArg], 2, args, &out) != napi_ok || out == nullptr) { munmap(p, len); return Napi::Value(); }
    return Napi::Value(env, out);
  }
  const CreateExternalSab create = ExternalSab();
  if (create == nullptr) {
    munmap(p, len);
    Napi::Error::New(env, "this Node.js has no node_api_create_external_sharedarraybuffer (Node 24.16, 26.1 and 22.23 have it) and the V8 shim (native/sab) was not passed").ThrowAsJavaScriptException();
    return Napi::Value();
  }
  napi_value out = nullptr;
  if (create(env, p, len, Unmap, reinterpret_cast<void*>(len), &out) != napi_ok) {
    munmap(p, len);
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (!pending) ThrowErrno(env, "node_api_create_external_sharedarraybuffer", ENOMEM);
    return Napi::Value();
  }
  return Napi::Value(env, out);
}

/** shmCreate(name, bytes, wrapMapping?) -> SharedArrayBuffer (zero-filled, space reserved) */
Napi::Value Create(const Napi::CallbackInfo& a) {
  napi_env env = a.Env();
  std::string name;
  if (!NameArg(a, &name)) return Napi::Value();
  if (a.Length() < 2 || !a[1].IsNumber()) { ThrowType(env, "size must be a number"); return Napi::Value(); }
  const double d = a[1].As<Napi::Number>().DoubleValue();
  if (!(d > 0) || d > 1099511627776.0) { ThrowType(env, "size must be positive and at most 1 TiB"); return Napi::Value(); }
  const size_t len = static_cast<size_t>(d);
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) { ThrowErrno(env, "shm_open(" + name + ")", errno); return Napi::Value(); }
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(len));  // returns the error, does not set errno
  if (err != 0) { close(fd); shm_unlink(name.c_str()); ThrowErrno(env, "reserving " + std::to_string(len) + " bytes for " + name, err); return Napi::Value(); }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int merr = errno;
  close(fd);
  if (p == MAP_FAILED) { shm_unlink(name.c_str()); ThrowErrno(env, "mmap(" + name + ")", merr); return Napi::Value(); }
  Napi::Value out = Wrap(a, 2, p, len);
  if (out.IsEmpty()) shm_unlink(name.c_str());
  return out;
}

/** shmOpen(name, wrapMapping?) -> SharedArrayBuffer over the whole segment */
Napi::Value Open(const Napi::CallbackInfo& a) {
  napi_env env = a.Env();
  std::string name;
  if (!NameArg(a, &name)) return Napi::Value();
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) { ThrowErrno(env, "shm_open(" + name + ")", errno); return Napi::Value(); }
  struct stat st;
  if (fstat(fd, &st) != 0) { const int e = errno; close(fd); ThrowErrno(env, "fstat(" + name + ")", e); return Napi::Value(); }
  if (st.st_size <= 0) { close(fd); ThrowErrno(env, "segment " + name + " is empty", EIO); return Napi::Value(); }
  const size_t len = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int merr = errno;
  close(fd);
  if (p == MAP_FAILED) { ThrowErrno(env, "mmap(" + name + ")", merr); return Napi::Value(); }
  return Wrap(a, 1, p, len);
}

void Unlink(const Napi::CallbackInfo& a) {
  std::string name;
  if (!NameArg(a, &name)) return;
  if (shm_unlink(name.c_str()) != 0 && errno != ENOENT) ThrowErrno(a.Env(), "shm_unlink(" + name + ")", errno);
}

/** Whether the running Node makes SharedArrayBuffers over a mapping itself (else pass the shim). */
Napi::Value HasExternalSab(const Napi::CallbackInfo& a) { return Napi::Boolean::New(a.Env(), ExternalSab() != nullptr); }

}  // namespace

void InitShm(Napi::Env env, Napi::Object exports) {
  exports.Set("shmCreate", Napi::Function::New(env, Create, "shmCreate"));
  exports.Set("shmOpen", Napi::Function::New(env, Open, "shmOpen"));
  exports.Set("shmUnlink", Napi::Function::New(env, Unlink, "shmUnlink"));
  exports.Set("externalSharedArrayBuffer", Napi::Function::New(env, HasExternalSab, "externalSharedArrayBuffer"));
}

}  // namespace railcomm
