// Linux cross-memory attach: read another process's memory in one copy
// (process_vm_readv) or write into it (process_vm_writev), and the address of a buffer's bytes to publish for it.
// The kernel refuses (EPERM) under ptrace restrictions; callers fall back.
#include "common.h"
#include <cerrno>
#include <cstring>
#include <sys/uio.h>
#include <unistd.h>

namespace railcomm {
namespace {

/** addressOf(view) -> bigint: where the view's first byte lives in this process. */
void AddressOf(const FunctionCallbackInfo<Value>& a) {
  char* p = nullptr; size_t len = 0;
  if (a.Length() < 1 || !BytesOf(a[0], &p, &len)) { ThrowType(a.GetIsolate(), "addressOf(view)"); return; }
  a.GetReturnValue().Set(v8::BigInt::NewFromUnsigned(a.GetIsolate(), reinterpret_cast<uint64_t>(p)));
}

/**
 * cmaRead(pid, remoteAddress: bigint, dst: view) -> bytes read (all of dst), or -errno;
 * cmaWrite(pid, remoteAddress: bigint, src: view) -> bytes written (all of src), or -errno.
 * One body for both directions: process_vm_readv and process_vm_writev take the same arguments.
 */
template <bool kWrite>
void Cma(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  char* local = nullptr; size_t len = 0;
  if (a.Length() < 3 || !a[0]->IsNumber() || !a[1]->IsBigInt() || !BytesOf(a[2], &local, &len)) {
    ThrowType(iso, kWrite ? "cmaWrite(pid, address, src)" : "cmaRead(pid, address, dst)");
    return;
  }
  pid_t pid = static_cast<pid_t>(a[0].As<v8::Number>()->Value());
  uint64_t remote = a[1].As<v8::BigInt>()->Uint64Value();
  size_t done = 0;
  while (done < len) {
    struct iovec l = {local + done, len - done};
    struct iovec r = {reinterpret_cast<void*>(remote + done), len - done};
    ssize_t n = kWrite ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0) { if (errno == EINTR) continue; a.GetReturnValue().Set(-errno); return; }
    if (n == 0) { a.GetReturnValue().Set(-EFAULT); return; }
    done += static_cast<size_t>(n);
  }
  a.GetReturnValue().Set(static_cast<double>(done));
}

/**
 * True when the first and last byte of [address, address + len) are mapped
 * readable in this process (a one-byte process_vm_readv each, which reports
 * EFAULT instead of faulting): the guard before a plain memcpy. It catches a
 * freed buffer (the whole range gone), not a hole inside the range nor a
 * read-only mapping under memWrite: those still fault. The buffers it guards
 * are other thread ranks' ArrayBuffers, which are whole and writable.
 */
bool Mapped(uint64_t address, size_t len) {
  if (len == 0) return true;
  char probe;
  pid_t self = getpid();
  for (uint64_t at : {address, address + len - 1}) {
    struct iovec l = {&probe, 1};
    struct iovec r = {reinterpret_cast<void*>(at), 1};
    ssize_t n;
    do { n = process_vm_readv(self, &l, 1, &r, 1, 0); } while (n < 0 && errno == EINTR);
    if (n != 1) return false;
  }
  return true;
}

/**
 * memRead(address: bigint, dst: view) / memWrite(address: bigint, src: view)
 * -> bytes copied, or -EFAULT: memcpy
 * from an address in this same process (another worker thread's buffer).
 * Cross-memory attach on our own pid pins every page and costs 75 us a MiB
 * here against memcpy's 20; the range's ends are probed first, so a buffer
 * freed under a send (a user error) gives EFAULT, as CMA would, not a crash.
 */
template <bool kWrite>
void Mem(const FunctionCallbackInfo<Value>& a) {
  Isolate* iso = a.GetIsolate();
  char* local = nullptr; size_t len = 0;
  if (a.Length() < 2 || !a[0]->IsBigInt() || !BytesOf(a[1], &local, &len)) {
    ThrowType(iso, kWrite ? "memWrite(address, src)" : "memRead(address, dst)");
    return;
  }
  char* address = reinterpret_cast<char*>(a[0].As<v8::BigInt>()->Uint64Value());
  if (!Mapped(reinterpret_cast<uint64_t>(address), len)) { a.GetReturnValue().Set(-EFAULT); return; }
  if (kWrite) memcpy(address, local, len);
  else memcpy(local, address, len);
  a.GetReturnValue().Set(static_cast<double>(len));
}

}  // namespace

void InitCma(Local<v8::Object> exports, Local<v8::Context> ctx) {
  SetFn(exports, ctx, "addressOf", AddressOf);
  SetFn(exports, ctx, "cmaRead", Cma<false>);
  SetFn(exports, ctx, "cmaWrite", Cma<true>);
  SetFn(exports, ctx, "memRead", Mem<false>);
  SetFn(exports, ctx, "memWrite", Mem<true>);
}

}  // namespace railcomm
