// Linux cross-memory attach: read another process's memory in one copy
// (process_vm_readv) or write into it (process_vm_writev), and the address of a buffer's bytes to publish for it.
// The kernel refuses (EPERM) under ptrace restrictions; callers fall back.
#include "common.h"
#include <cerrno>
#include <sys/uio.h>

namespace railcomm {
namespace {

/** addressOf(view) -> bigint: where the view's first byte lives in this process. */
void AddressOf(const FunctionCallbackInfo<Value>& a) {
  char* p = nullptr; size_t len = 0;
  if (a.Length() < 1 || !BytesOf(a[0], &p, &len)) { ThrowType(a.GetIsolate(), "addressOf(view)"); return; }
  a.GetReturnValue().Set(v8::BigInt::NewFromUnsigned(a.GetIsolate(), reinterpret_cast<uint64_t>(p)));
}

/** cmaRead(pid, remoteAddress: bigint, dst: view) -> bytes read (all of dst), or -errno. */
void Read(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  char* dst = nullptr; size_t len = 0;
  if (a.Length() < 3 || !a[0]->IsNumber() || !a[1]->IsBigInt() || !BytesOf(a[2], &dst, &len)) { ThrowType(iso, "cmaRead(pid, address, dst)"); return; }
  pid_t pid = static_cast<pid_t>(a[0].As<v8::Number>()->Value());
  uint64_t remote = a[1].As<v8::BigInt>()->Uint64Value();
  size_t done = 0;
  while (done < len) {
    struct iovec l = {dst + done, len - done};
    struct iovec r = {reinterpret_cast<void*>(remote + done), len - done};
    ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0) { if (errno == EINTR) continue; a.GetReturnValue().Set(-errno); return; }
    if (n == 0) { a.GetReturnValue().Set(-EFAULT); return; }
    done += static_cast<size_t>(n);
  }
  a.GetReturnValue().Set(static_cast<double>(done));
}

/** cmaWrite(pid, remoteAddress: bigint, src: view) -> bytes written (all of src), or -errno. */
void Write(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  char* src = nullptr; size_t len = 0;
  if (a.Length() < 3 || !a[0]->IsNumber() || !a[1]->IsBigInt() || !BytesOf(a[2], &src, &len)) { ThrowType(iso, "cmaWrite(pid, address, src)"); return; }
  pid_t pid = static_cast<pid_t>(a[0].As<v8::Number>()->Value());
  uint64_t remote = a[1].As<v8::BigInt>()->Uint64Value();
  size_t done = 0;
  while (done < len) {
    struct iovec l = {src + done, len - done};
    struct iovec r = {reinterpret_cast<void*>(remote + done), len - done};
    ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);
    if (n < 0) { if (errno == EINTR) continue; a.GetReturnValue().Set(-errno); return; }
    if (n == 0) { a.GetReturnValue().Set(-EFAULT); return; }
    done += static_cast<size_t>(n);
  }
  a.GetReturnValue().Set(static_cast<double>(done));
}

}  // namespace

void InitCma(Local<v8::Object> exports, Local<v8::Context> ctx) {
  SetFn(exports, ctx, "addressOf", AddressOf);
  SetFn(exports, ctx, "cmaRead", Read);
  SetFn(exports, ctx, "cmaWrite", Write);
}

}  // namespace railcomm
