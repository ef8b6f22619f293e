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

bool Address(napi_env env, napi_value v, uint64_t* out) {
  bool lossless = false;
  return napi_get_value_bigint_uint64(env, v, out, &lossless) == napi_ok && lossless;
}

/** addressOf(view) -> bigint: where the view's first byte lives in this process. */
napi_value AddressOf(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  Args(env, info, argv, 1);
  char* p = nullptr;
  size_t len = 0;
  if (!BytesOf(env, argv[0], &p, &len)) { ThrowType(env, "addressOf(view)"); return nullptr; }
  napi_value r;
  napi_create_bigint_uint64(env, reinterpret_cast<uint64_t>(p), &r);
  return r;
}

/**
 * cmaRead(pid, remoteAddress: bigint, dst: view) -> bytes read (all of dst), or -errno;
 * cmaWrite(pid, remoteAddress: bigint, src: view) -> bytes written (all of src), or -errno.
 * One body for both directions: process_vm_readv and process_vm_writev take the same arguments.
 */
template <bool kWrite>
napi_value Cma(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  Args(env, info, argv, 3);
  char* local = nullptr;
  size_t len = 0;
  double pidArg = 0;
  uint64_t remote = 0;
  if (!Num(env, argv[0], &pidArg) || !Address(env, argv[1], &remote) || !BytesOf(env, argv[2], &local, &len)) {
    ThrowType(env, kWrite ? "cmaWrite(pid, address, src)" : "cmaRead(pid, address, dst)");
    return nullptr;
  }
  const pid_t pid = static_cast<pid_t>(pidArg);
  size_t done = 0;
  while (done < len) {
    struct iovec l = {local + done, len - done};
    struct iovec r = {reinterpret_cast<void*>(remote + done), len - done};
    const ssize_t n = kWrite ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0) { if (errno == EINTR) continue; return Int(env, -errno); }
    if (n == 0) return Int(env, -EFAULT);
    done += static_cast<size_t>(n);
  }
  return Double(env, static_cast<double>(done));
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
  const pid_t self = getpid();
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
napi_value Mem(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  Args(env, info, argv, 2);
  char* local = nullptr;
  size_t len = 0;
  uint64_t address = 0;
  if (!Address(env, argv[0], &address) || !BytesOf(env, argv[1], &local, &len)) {
    ThrowType(env, kWrite ? "memWrite(address, src)" : "memRead(address, dst)");
    return nullptr;
  }
  if (!Mapped(address, len)) return Int(env, -EFAULT);
  char* at = reinterpret_cast<char*>(address);
  if (kWrite) memcpy(at, local, len);
  else memcpy(local, at, len);
  return Double(env, static_cast<double>(len));
}

}  // namespace

void InitCma(Napi::Env env, Napi::Object exports) {
  SetFn(env, exports, "addressOf", AddressOf);
  SetFn(env, exports, "cmaRead", Cma<false>);
  SetFn(env, exports, "cmaWrite", Cma<true>);
  SetFn(env, exports, "memRead", Mem<false>);
  SetFn(env, exports, "memWrite", Mem<true>);
}

}  // namespace railcomm
