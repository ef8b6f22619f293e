// The CUDA part's memory: device allocations, synchronous copies to, from and
// between them (on this thread's stream), pinned host memory as ArrayBuffers,
// pointer queries, and CUDA IPC handles (cuda.cc loads the driver and selects
// devices; cuda-driver.h is what they share).
#include "cuda-driver.h"
#include <cstdint>
#include <cstring>

namespace railcomm {
namespace cudadrv {

// ---- memory ---------------------------------------------------------------

/** cudaAlloc(bytes): device memory on this thread's device. */
napi_value Alloc(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  size_t bytes = 0;
  if (!Size(env, argv[0], &bytes)) return nullptr;
  cu::DevicePtr p = 0;
  const cu::Result rc = g_drv.MemAlloc(&p, bytes == 0 ? 1 : bytes);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuMemAlloc", rc); return nullptr; }
  return BigPtr(env, p);
}

napi_value Free(napi_env env, napi_callback_info info) {
  cu::DevicePtr p = 0;
  if (!ReadyWithPtr(env, info, &p)) return nullptr;
  const cu::Result rc = g_drv.MemFree(p);
  if (rc != cu::kSuccess) ThrowCuda(env, "cuMemFree", rc);
  return nullptr;
}

/**
 * cudaPointer(ptr): null when the driver does not know the address, else
 * { type (CUmemorytype), device, base, size, bufferId, ipc, managed }.
 */
napi_value PointerInfo(napi_env env, napi_callback_info info) {
  cu::DevicePtr p = 0;
  if (!ReadyWithPtr(env, info, &p)) return nullptr;
  unsigned int type = 0;
  cu::Result rc = g_drv.PointerGetAttribute(&type, cu::kPtrMemoryType, p);
  napi_value out;
  if (rc == cu::kErrorInvalidValue) { napi_get_null(env, &out); return out; }
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuPointerGetAttribute(MEMORY_TYPE)", rc); return nullptr; }
  napi_create_object(env, &out);
  napi_set_named_property(env, out, "type", Uint(env, type));
  if (type != cu::kMemoryTypeDevice && type != cu::kMemoryTypeUnified) return out;
  int ordinal = -1;
  unsigned long long id = 0;
  unsigned int ipc = 0, managed = 0;  // booleans: zeroed, so a one-byte answer reads the same
  cu::DevicePtr base = 0;
  size_t size = 0;
  if ((rc = g_drv.PointerGetAttribute(&ordinal, cu::kPtrDeviceOrdinal, p)) != cu::kSuccess ||
      (rc = g_drv.PointerGetAttribute(&id, cu::kPtrBufferId, p)) != cu::kSuccess ||
      (rc = g_drv.MemGetAddressRange(&base, &size, p)) != cu::kSuccess) {
    ThrowCuda(env, "cuPointerGetAttribute", rc);
    return nullptr;
  }
  // Older drivers may not know these two: then no IPC, and not managed.
  if (g_drv.PointerGetAttribute(&ipc, cu::kPtrLegacyIpcCapable, p) != cu::kSuccess) ipc = 0;
  if (g_drv.PointerGetAttribute(&managed, cu::kPtrIsManaged, p) != cu::kSuccess) managed = 0;
  napi_set_named_property(env, out, "device", Int(env, ordinal));
  napi_set_named_property(env, out, "base", BigPtr(env, base));
  napi_set_named_property(env, out, "size", Double(env, static_cast<double>(size)));
  napi_value idv;
  napi_create_bigint_uint64(env, id, &idv);
  napi_set_named_property(env, out, "bufferId", idv);
  napi_set_named_property(env, out, "ipc", Bool(env, ipc != 0));
  napi_set_named_property(env, out, "managed", Bool(env, managed != 0));
  return out;
}

/** cudaUpload(dst, hostView): hostView's bytes to device address dst; returns when they are there. */
napi_value Upload(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[2];
  Args(env, info, argv, 2);
  cu::DevicePtr dst = 0;
  char* src = nullptr;
  size_t n = 0;
  if (!Ptr(env, argv[0], &dst) || !HostBytes(env, argv[1], &src, &n)) return nullptr;
  if (n > 0) Sync(env, "cuMemcpyHtoDAsync", g_drv.MemcpyHtoDAsync(dst, src, n, t_local.stream));
  return nullptr;
}

/** cudaDownload(hostView, src): hostView.byteLength bytes from device address src. */
napi_value Download(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[2];
  Args(env, info, argv, 2);
  char* dst = nullptr;
  size_t n = 0;
  cu::DevicePtr src = 0;
  if (!HostBytes(env, argv[0], &dst, &n) || !Ptr(env, argv[1], &src)) return nullptr;
  if (n > 0) Sync(env, "cuMemcpyDtoHAsync", g_drv.MemcpyDtoHAsync(dst, src, n, t_local.stream));
  return nullptr;
}

/** cudaCopy(dst, src, bytes): device to device (also through IPC-opened addresses); returns once done. */
napi_value Copy(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[3];
  Args(env, info, argv, 3);
  cu::DevicePtr dst = 0, src = 0;
  size_t n = 0;
  if (!Ptr(env, argv[0], &dst) || !Ptr(env, argv[1], &src) || !Size(env, argv[2], &n)) return nullptr;
  if (n > 0) Sync(env, "cuMemcpyDtoDAsync", g_drv.MemcpyDtoDAsync(dst, src, n, t_local.stream));
  return nullptr;
}

/** cudaMemset(ptr, byte, bytes). */
napi_value Memset(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[3];
  Args(env, info, argv, 3);
  cu::DevicePtr p = 0;
  double v = 0;
  size_t n = 0;
  if (!Ptr(env, argv[0], &p) || !Num(env, argv[1], &v) || !Size(env, argv[2], &n)) return nullptr;
  if (n > 0) Sync(env, "cuMemsetD8Async", g_drv.MemsetD8Async(p, static_cast<unsigned char>(static_cast<int>(v) & 0xff), n, t_local.stream));
  return nullptr;
}

/** cudaSynchronize(): every piece of work queued in this thread's context is done. */
napi_value Synchronize(napi_env env, napi_callback_info) {
  if (!Ready(env)) return nullptr;
  const cu::Result rc = g_drv.CtxSynchronize();
  if (rc != cu::kSuccess) ThrowCuda(env, "cuCtxSynchronize", rc);
  return nullptr;
}

void FreeHost(napi_env, void* data, void*) {
  // The finalizer runs on the thread that made the buffer, whose context is still current.
  if (data != nullptr && g_drv.MemFreeHost != nullptr) g_drv.MemFreeHost(data);
}

/** cudaHostAlloc(bytes): page-locked host memory as an ArrayBuffer (freed when it is collected). */
napi_value HostAlloc(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  size_t bytes = 0;
  if (!Size(env, argv[0], &bytes)) return nullptr;
  if (bytes == 0) { ThrowType(env, "cudaHostAlloc(0)"); return nullptr; }
  void* p = nullptr;
  // Portable: pinned for every context, so thread ranks on other devices may stage through it too.
  const cu::Result rc = g_drv.MemHostAlloc(&p, bytes, cu::kMemHostAllocPortable);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuMemHostAlloc", rc); return nullptr; }
  napi_value ab;
  if (napi_create_external_arraybuffer(env, p, bytes, FreeHost, nullptr, &ab) != napi_ok) {
    g_drv.MemFreeHost(p);
    ThrowPlain(env, "this Node.js cannot wrap pinned memory as an ArrayBuffer (napi_create_external_arraybuffer failed)");
    return nullptr;
  }
  return ab;
}

// ---- IPC --------------------------------------------------------------------

/** cudaIpcHandle(base): the 64-byte handle of the allocation that starts at base. */
napi_value IpcHandle(napi_env env, napi_callback_info info) {
  cu::DevicePtr p = 0;
  if (!ReadyWithPtr(env, info, &p)) return nullptr;
  cu::IpcMemHandle h;
  std::memset(&h, 0, sizeof h);
  const cu::Result rc = g_drv.IpcGetMemHandle(&h, p);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuIpcGetMemHandle", rc); return nullptr; }
  napi_value out;
  void* data = nullptr;
  napi_create_buffer_copy(env, sizeof h, &h, &data, &out);
  return out;
}

/** cudaIpcOpen(handle64): the allocation's base in this process (opened once per context: the driver counts). */
napi_value IpcOpen(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  char* data = nullptr;
  size_t n = 0;
  if (!HostBytes(env, argv[0], &data, &n)) return nullptr;
  if (n != cu::kIpcHandleSize) { ThrowType(env, "cudaIpcOpen: the handle must be 64 bytes"); return nullptr; }
  cu::IpcMemHandle h;
  std::memcpy(&h, data, sizeof h);
  cu::DevicePtr p = 0;
  const cu::Result rc = g_drv.IpcOpenMemHandle(&p, h, cu::kIpcMemLazyEnablePeerAccess);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuIpcOpenMemHandle", rc); return nullptr; }
  return BigPtr(env, p);
}

napi_value IpcClose(napi_env env, napi_callback_info info) {
  cu::DevicePtr p = 0;
  if (!ReadyWithPtr(env, info, &p)) return nullptr;
  const cu::Result rc = g_drv.IpcCloseMemHandle(p);
  if (rc != cu::kSuccess) ThrowCuda(env, "cuIpcCloseMemHandle", rc);
  return nullptr;
}

}  // namespace cudadrv
}  // namespace railcomm
