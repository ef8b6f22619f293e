// Named shared-memory segments under /dev/shm, mapped and handed to JavaScript
// as SharedArrayBuffers whose backing store unmaps when V8 frees the last
// reference. Space is reserved up front, so a full /dev/shm fails here.
#include "common.h"
#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace railcomm {
namespace {

void Unmap(void* data, size_t len, void* /*deleter_data*/) {
  if (data != nullptr && len > 0) munmap(data, len);
}

bool NameArg(const FunctionCallbackInfo<Value>& a, std::string* out) {
  Isolate* iso = a.GetIsolate();
  if (a.Length() < 1 || !a[0]->IsString()) { ThrowType(iso, "segment name must be a string"); return false; }
  v8::String::Utf8Value s(iso, a[0]);
  std::string name(*s, s.length());
  if (name.empty() || name.size() > 200 || name.find('/') != std::string::npos) { ThrowType(iso, "segment name must be 1-200 characters without '/'"); return false; }
  *out = "/" + name;
  return true;
}

Local<v8::SharedArrayBuffer> Wrap(Isolate* iso, void* p, size_t len) {
  std::unique_ptr<v8::BackingStore> bs = v8::SharedArrayBuffer::NewBackingStore(p, len, Unmap, nullptr);
  return v8::SharedArrayBuffer::New(iso, std::shared_ptr<v8::BackingStore>(std::move(bs)));
}

void Create(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  std::string name;
  if (!NameArg(a, &name)) return;
  if (a.Length() < 2 || !a[1]->IsNumber()) { ThrowType(iso, "size must be a number"); return; }
  double d = a[1].As<v8::Number>()->Value();
  if (!(d > 0) || d > 1099511627776.0) { ThrowType(iso, "size must be positive and at most 1 TiB"); return; }
  size_t len = static_cast<size_t>(d);
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) { ThrowErrno(iso, "shm_open(" + name + ")", errno); return; }
  int err = posix_fallocate(fd, 0, static_cast<off_t>(len));  // returns the error, does not set errno
  if (err != 0) { close(fd); shm_unlink(name.c_str()); ThrowErrno(iso, "reserving " + std::to_string(len) + " bytes for " + name, err); return; }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int merr = errno;
  close(fd);
  if (p == MAP_FAILED) { shm_unlink(name.c_str()); ThrowErrno(iso, "mmap(" + name + ")", merr); return; }
  a.GetReturnValue().Set(Wrap(iso, p, len));
}

void Open(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  std::string name;
  if (!NameArg(a, &name)) return;
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) { ThrowErrno(iso, "shm_open(" + name + ")", errno); return; }
  struct stat st;
  if (fstat(fd, &st) != 0) { int e = errno; close(fd); ThrowErrno(iso, "fstat(" + name + ")", e); return; }
  if (st.st_size <= 0) { close(fd); ThrowErrno(iso, "segment " + name + " is empty", EIO); return; }
  size_t len = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int merr = errno;
  close(fd);
  if (p == MAP_FAILED) { ThrowErrno(iso, "mmap(" + name + ")", merr); return; }
  a.GetReturnValue().Set(Wrap(iso, p, len));
}

void Unlink(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  std::string name;
  if (!NameArg(a, &name)) return;
  if (shm_unlink(name.c_str()) != 0 && errno != ENOENT) ThrowErrno(iso, "shm_unlink(" + name + ")", errno);
}

}  // namespace

void InitShm(Local<v8::Object> exports, Local<v8::Context> ctx) {
  SetFn(exports, ctx, "shmCreate", Create);
  SetFn(exports, ctx, "shmOpen", Open);
  SetFn(exports, ctx, "shmUnlink", Unlink);
}

}  // namespace railcomm
