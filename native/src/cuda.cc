// railcomm's CUDA part: the driver library (libcuda.so.1) opened at run time
// with the declarations of cuda-abi.h, so the addon builds without CUDA and a
// machine without a GPU only loses GPU memory. Device memory, synchronous
// copies (on one stream per thread and device, then a stream sync), pinned
// host memory as ArrayBuffers, CUDA IPC handles, pointer queries and one
// element-wise kernel launch. Contexts are per thread in the driver: every
// thread (a worker-thread rank) selects its device with cudaUse first.
#include "common.h"
#include "cuda-abi.h"
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>

namespace railcomm {
namespace {

/** The driver's entry points; loaded once per process (the driver is per process). */
struct Driver {
  void* handle = nullptr;
  std::string file;
  cu::GetErrorStringFn GetErrorString = nullptr;
  cu::GetErrorNameFn GetErrorName = nullptr;
  cu::InitFn Init = nullptr;
  cu::DriverGetVersionFn DriverGetVersion = nullptr;
  cu::DeviceGetFn DeviceGet = nullptr;
  cu::DeviceGetCountFn DeviceGetCount = nullptr;
  cu::DeviceGetNameFn DeviceGetName = nullptr;
  cu::DeviceGetAttributeFn DeviceGetAttribute = nullptr;
  cu::DeviceTotalMemFn DeviceTotalMem = nullptr;
  cu::DeviceCanAccessPeerFn DeviceCanAccessPeer = nullptr;
  cu::DevicePrimaryCtxRetainFn DevicePrimaryCtxRetain = nullptr;
  cu::CtxSetCurrentFn CtxSetCurrent = nullptr;
  cu::CtxSynchronizeFn CtxSynchronize = nullptr;
  cu::MemAllocFn MemAlloc = nullptr;
  cu::MemFreeFn MemFree = nullptr;
  cu::MemGetAddressRangeFn MemGetAddressRange = nullptr;
  cu::MemHostAllocFn MemHostAlloc = nullptr;
  cu::MemFreeHostFn MemFreeHost = nullptr;
  cu::MemcpyHtoDAsyncFn MemcpyHtoDAsync = nullptr;
  cu::MemcpyDtoHAsyncFn MemcpyDtoHAsync = nullptr;
  cu::MemcpyDtoDAsyncFn MemcpyDtoDAsync = nullptr;
  cu::MemsetD8AsyncFn MemsetD8Async = nullptr;
  cu::StreamCreateFn StreamCreate = nullptr;
  cu::StreamSynchronizeFn StreamSynchronize = nullptr;
  cu::PointerGetAttributeFn PointerGetAttribute = nullptr;
  cu::IpcGetMemHandleFn IpcGetMemHandle = nullptr;
  cu::IpcOpenMemHandleFn IpcOpenMemHandle = nullptr;
  cu::IpcCloseMemHandleFn IpcCloseMemHandle = nullptr;
  cu::ModuleLoadDataExFn ModuleLoadDataEx = nullptr;
  cu::ModuleGetFunctionFn ModuleGetFunction = nullptr;
  cu::LaunchKernelFn LaunchKernel = nullptr;
};

std::mutex g_mu;              // guards everything below while it changes
Driver g_drv;                 // filled once, read-only after
bool g_initialised = false;   // cuInit succeeded
std::vector<cu::Context> g_primary;  // retained primary context per device (kept for the process)

/** What this thread uses: its device, that device's primary context, and one stream per device. */
struct Local {
  int device = -1;
  cu::Context ctx = nullptr;
  cu::Stream stream = nullptr;
  std::vector<cu::Stream> streams;  // by device ordinal
};
thread_local Local t_local;

void ThrowCuda(napi_env env, const char* what, cu::Result rc) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (g_drv.GetErrorName == nullptr || g_drv.GetErrorName(rc, &name) != cu::kSuccess || name == nullptr) name = "CUDA_ERROR_UNKNOWN";
  if (g_drv.GetErrorString == nullptr || g_drv.GetErrorString(rc, &text) != cu::kSuccess || text == nullptr) text = "unknown CUDA error";
  const std::string msg = std::string(what) + ": " + text + " (" + name + ")";
  napi_value code, m, e;
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, msg.c_str(), msg.size(), &m);
  napi_create_error(env, code, m, &e);
  napi_set_named_property(env, e, "cuda", Int(env, rc));
  napi_throw(env, e);
}

void ThrowPlain(napi_env env, const std::string& msg) { napi_throw_error(env, "ERR_CUDA", msg.c_str()); }

bool Loaded(napi_env env) {
  if (g_drv.handle != nullptr) return true;
  ThrowPlain(env, "the CUDA driver is not loaded (internal: call cudaOpen first)");
  return false;
}

/** The driver is loaded and this thread has a device selected. */
bool Ready(napi_env env) {
  if (!Loaded(env)) return false;
  if (t_local.ctx != nullptr) return true;
  ThrowPlain(env, "no CUDA device selected on this thread (internal: call cudaUse first)");
  return false;
}

bool Ptr(napi_env env, napi_value v, cu::DevicePtr* out) {
  uint64_t u = 0;
  bool lossless = false;
  if (napi_get_value_bigint_uint64(env, v, &u, &lossless) != napi_ok) { ThrowType(env, "expected a bigint device pointer"); return false; }
  *out = static_cast<cu::DevicePtr>(u);
  return true;
}

napi_value BigPtr(napi_env env, cu::DevicePtr p) {
  napi_value r;
  napi_create_bigint_uint64(env, static_cast<uint64_t>(p), &r);
  return r;
}

bool Size(napi_env env, napi_value v, size_t* out) {
  double d = 0;
  if (!Num(env, v, &d) || !Whole(d, 9007199254740991.0)) { ThrowType(env, "expected a byte count"); return false; }
  *out = static_cast<size_t>(d);
  return true;
}

bool Sync(napi_env env, const char* what, cu::Result rc) {
  if (rc == cu::kSuccess) rc = g_drv.StreamSynchronize(t_local.stream);
  if (rc != cu::kSuccess) { ThrowCuda(env, what, rc); return false; }
  return true;
}

// ---- loading --------------------------------------------------------------

/** cudaOpen(file): '' once the driver and every entry point are there, else why not. */
napi_value Open(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  Args(env, info, argv, 1);
  size_t n = 0;
  char file[4096];
  if (napi_get_value_string_utf8(env, argv[0], file, sizeof file, &n) != napi_ok) { ThrowType(env, "cudaOpen(file)"); return nullptr; }
  std::lock_guard<std::mutex> g(g_mu);
  napi_value out;
  if (g_drv.handle != nullptr) {
    const std::string why = g_drv.file == file ? "" : "the CUDA driver is already loaded from " + g_drv.file;
    napi_create_string_utf8(env, why.c_str(), why.size(), &out);
    return out;
  }
  void* h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    const std::string why = std::string(file) + " not found (" + (e != nullptr ? e : "dlopen failed") + ")";
    napi_create_string_utf8(env, why.c_str(), why.size(), &out);
    return out;
  }
  Driver d;
  d.handle = h;
  d.file = file;
  const char* missing = nullptr;
  auto sym = [&](const char* name) -> void* {
    void* p = dlsym(h, name);
    if (p == nullptr && missing == nullptr) missing = name;
    return p;
  };
#define RC_SYM(field, name) d.field = reinterpret_cast<decltype(d.field)>(sym(name))
  RC_SYM(GetErrorString, "cuGetErrorString");
  RC_SYM(GetErrorName, "cuGetErrorName");
  RC_SYM(Init, "cuInit");
  RC_SYM(DriverGetVersion, "cuDriverGetVersion");
  RC_SYM(DeviceGet, "cuDeviceGet");
  RC_SYM(DeviceGetCount, "cuDeviceGetCount");
  RC_SYM(DeviceGetName, "cuDeviceGetName");
  RC_SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
  RC_SYM(DeviceTotalMem, "cuDeviceTotalMem_v2");
  RC_SYM(DeviceCanAccessPeer, "cuDeviceCanAccessPeer");
  RC_SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  RC_SYM(CtxSetCurrent, "cuCtxSetCurrent");
  RC_SYM(CtxSynchronize, "cuCtxSynchronize");
  RC_SYM(MemAlloc, "cuMemAlloc_v2");
  RC_SYM(MemFree, "cuMemFree_v2");
  RC_SYM(MemGetAddressRange, "cuMemGetAddressRange_v2");
  RC_SYM(MemHostAlloc, "cuMemHostAlloc");
  RC_SYM(MemFreeHost, "cuMemFreeHost");
  RC_SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  RC_SYM(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  RC_SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  RC_SYM(MemsetD8Async, "cuMemsetD8Async");
  RC_SYM(StreamCreate, "cuStreamCreate");
  RC_SYM(StreamSynchronize, "cuStreamSynchronize");
  RC_SYM(PointerGetAttribute, "cuPointerGetAttribute");
  RC_SYM(IpcGetMemHandle, "cuIpcGetMemHandle");
  RC_SYM(IpcOpenMemHandle, "cuIpcOpenMemHandle_v2");
  RC_SYM(IpcCloseMemHandle, "cuIpcCloseMemHandle");
  RC_SYM(ModuleLoadDataEx, "cuModuleLoadDataEx");
  RC_SYM(ModuleGetFunction, "cuModuleGetFunction");
  RC_SYM(LaunchKernel, "cuLaunchKernel");
#undef RC_SYM
  if (missing != nullptr) {
    const std::string why = std::string(file) + " lacks " + missing + " (not a CUDA driver library this build can use)";
    dlclose(h);
    napi_create_string_utf8(env, why.c_str(), why.size(), &out);
    return out;
  }
  g_drv = d;
  napi_create_string_utf8(env, "", 0, &out);
  return out;
}

/** cudaDriverVersion(): e.g. 13000 for CUDA 13.0 (needs no cuInit). */
napi_value DriverVersion(napi_env env, napi_callback_info) {
  if (!Loaded(env)) return nullptr;
  int v = 0;
  const cu::Result rc = g_drv.DriverGetVersion(&v);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuDriverGetVersion", rc); return nullptr; }
  return Int(env, v);
}

/** cudaInit(): cuInit once per process; the number of devices. */
napi_value InitDriver(napi_env env, napi_callback_info) {
  if (!Loaded(env)) return nullptr;
  std::lock_guard<std::mutex> g(g_mu);
  if (!g_initialised) {
    const cu::Result rc = g_drv.Init(0);
    if (rc != cu::kSuccess) { ThrowCuda(env, "cuInit", rc); return nullptr; }
    g_initialised = true;
  }
  int count = 0;
  const cu::Result rc = g_drv.DeviceGetCount(&count);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuDeviceGetCount", rc); return nullptr; }
  if (g_primary.size() < static_cast<size_t>(count)) g_primary.resize(count, nullptr);
  return Int(env, count);
}

bool DeviceOf(napi_env env, napi_value v, cu::Device* dev, int* ordinal) {
  double d = -1;
  if (!Num(env, v, &d) || !Whole(d, 1 << 20)) { ThrowType(env, "expected a device ordinal"); return false; }
  *ordinal = static_cast<int>(d);
  const cu::Result rc = g_drv.DeviceGet(dev, *ordinal);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuDeviceGet", rc); return false; }
  return true;
}

/** cudaDeviceInfo(ordinal): { name, domain, bus, slot, major, minor, sms, unified, memory }. */
napi_value DeviceInfo(napi_env env, napi_callback_info info) {
  if (!Loaded(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  cu::Device dev = 0;
  int ordinal = 0;
  if (!DeviceOf(env, argv[0], &dev, &ordinal)) return nullptr;
  char name[256] = {0};
  cu::Result rc = g_drv.DeviceGetName(name, sizeof name - 1, dev);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuDeviceGetName", rc); return nullptr; }
  struct { const char* key; int attr; } attrs[] = {
    {"domain", cu::kAttrPciDomainId}, {"bus", cu::kAttrPciBusId}, {"slot", cu::kAttrPciDeviceId},
    {"major", cu::kAttrComputeCapabilityMajor}, {"minor", cu::kAttrComputeCapabilityMinor},
    {"sms", cu::kAttrMultiprocessorCount}, {"unified", cu::kAttrUnifiedAddressing},
  };
  napi_value out, s;
  napi_create_object(env, &out);
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &s);
  napi_set_named_property(env, out, "name", s);
  for (const auto& a : attrs) {
    int v = 0;
    rc = g_drv.DeviceGetAttribute(&v, a.attr, dev);
    if (rc != cu::kSuccess) { ThrowCuda(env, "cuDeviceGetAttribute", rc); return nullptr; }
    napi_set_named_property(env, out, a.key, Int(env, v));
  }
  size_t mem = 0;
  rc = g_drv.DeviceTotalMem(&mem, dev);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuDeviceTotalMem", rc); return nullptr; }
  napi_set_named_property(env, out, "memory", Double(env, static_cast<double>(mem)));
  return out;
}

/** cudaUse(ordinal): this thread works on that device (its primary context, and a stream of its own). */
napi_value Use(napi_env env, napi_callback_info info) {
  if (!Loaded(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  cu::Device dev = 0;
  int ordinal = 0;
  if (!DeviceOf(env, argv[0], &dev, &ordinal)) return nullptr;
  cu::Context ctx = nullptr;
  {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_primary.size() <= static_cast<size_t>(ordinal)) g_primary.resize(ordinal + 1, nullptr);
    if (g_primary[ordinal] == nullptr) {
      // Retained once for the life of the process: every thread shares it, as the runtime API does.
      const cu::Result rc = g_drv.DevicePrimaryCtxRetain(&g_primary[ordinal], dev);
      if (rc != cu::kSuccess) { g_primary[ordinal] = nullptr; ThrowCuda(env, "cuDevicePrimaryCtxRetain", rc); return nullptr; }
    }
    ctx = g_primary[ordinal];
  }
  cu::Result rc = g_drv.CtxSetCurrent(ctx);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuCtxSetCurrent", rc); return nullptr; }
  Local& l = t_local;
  if (l.streams.size() <= static_cast<size_t>(ordinal)) l.streams.resize(ordinal + 1, nullptr);
  if (l.streams[ordinal] == nullptr) {
    // A blocking stream: its copies wait for work the program queued on the legacy default stream.
    rc = g_drv.StreamCreate(&l.streams[ordinal], cu::kStreamDefault);
    if (rc != cu::kSuccess) { l.streams[ordinal] = nullptr; ThrowCuda(env, "cuStreamCreate", rc); return nullptr; }
  }
  l.device = ordinal;
  l.ctx = ctx;
  l.stream = l.streams[ordinal];
  return nullptr;
}

/** cudaCanAccessPeer(a, b): whether device a can map device b's memory. */
napi_value CanAccessPeer(napi_env env, napi_callback_info info) {
  if (!Loaded(env)) return nullptr;
  napi_value argv[2];
  Args(env, info, argv, 2);
  cu::Device a = 0, b = 0;
  int oa = 0, ob = 0;
  if (!DeviceOf(env, argv[0], &a, &oa) || !DeviceOf(env, argv[1], &b, &ob)) return nullptr;
  if (oa == ob) return Bool(env, true);
  int can = 0;
  const cu::Result rc = g_drv.DeviceCanAccessPeer(&can, a, b);
  if (rc != cu::kSuccess) { ThrowCuda(env, "cuDeviceCanAccessPeer", rc); return nullptr; }
  return Bool(env, can != 0);
}

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
  if (!Ready(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  cu::DevicePtr p = 0;
  if (!Ptr(env, argv[0], &p)) return nullptr;
  const cu::Result rc = g_drv.MemFree(p);
  if (rc != cu::kSuccess) ThrowCuda(env, "cuMemFree", rc);
  return nullptr;
}

/**
 * cudaPointer(ptr): null when the driver does not know the address, else
 * { type (CUmemorytype), device, base, size, bufferId, ipc, managed }.
 */
napi_value PointerInfo(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  cu::DevicePtr p = 0;
  if (!Ptr(env, argv[0], &p)) return nullptr;
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

bool HostBytes(napi_env env, napi_value v, char** data, size_t* len) {
  if (BytesOf(env, v, data, len)) return true;
  ThrowType(env, "expected a typed array, DataView or ArrayBuffer");
  return false;
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
  if (!Ready(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  cu::DevicePtr p = 0;
  if (!Ptr(env, argv[0], &p)) return nullptr;
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
  if (!Ready(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  cu::DevicePtr p = 0;
  if (!Ptr(env, argv[0], &p)) return nullptr;
  const cu::Result rc = g_drv.IpcCloseMemHandle(p);
  if (rc != cu::kSuccess) ThrowCuda(env, "cuIpcCloseMemHandle", rc);
  return nullptr;
}

// ---- kernels ------------------------------------------------------------------

/** cudaModuleLoad(ptx): a module JIT-compiled from PTX text by the driver (for this thread's device). */
napi_value ModuleLoad(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[1];
  Args(env, info, argv, 1);
  size_t len = 0;
  if (napi_get_value_string_utf8(env, argv[0], nullptr, 0, &len) != napi_ok) { ThrowType(env, "cudaModuleLoad(ptx)"); return nullptr; }
  std::string ptx(len + 1, '\0');
  napi_get_value_string_utf8(env, argv[0], &ptx[0], len + 1, &len);
  char log[8192] = {0};
  int opts[2] = {cu::kJitErrorLogBuffer, cu::kJitErrorLogBufferSizeBytes};
  void* vals[2] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof log - 1))};
  cu::Module m = nullptr;
  const cu::Result rc = g_drv.ModuleLoadDataEx(&m, ptx.c_str(), 2, opts, vals);
  if (rc != cu::kSuccess) {
    const std::string what = std::string("cuModuleLoadDataEx (the PTX JIT said: ") + (log[0] != '\0' ? log : "nothing") + ")";
    ThrowCuda(env, what.c_str(), rc);
    return nullptr;
  }
  return BigPtr(env, reinterpret_cast<uintptr_t>(m));
}

napi_value GetFunction(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[2];
  Args(env, info, argv, 2);
  cu::DevicePtr m = 0;
  char name[256];
  size_t n = 0;
  if (!Ptr(env, argv[0], &m) || napi_get_value_string_utf8(env, argv[1], name, sizeof name, &n) != napi_ok) { ThrowType(env, "cudaFunction(module, name)"); return nullptr; }
  cu::Function f = nullptr;
  const cu::Result rc = g_drv.ModuleGetFunction(&f, reinterpret_cast<cu::Module>(static_cast<uintptr_t>(m)), name);
  if (rc != cu::kSuccess) { ThrowCuda(env, (std::string("cuModuleGetFunction ") + name).c_str(), rc); return nullptr; }
  return BigPtr(env, reinterpret_cast<uintptr_t>(f));
}

/**
 * cudaLaunch(fn, grid, block, dst, src, n): an element-wise kernel
 * f(dst, src, n) (three 64-bit parameters) on this thread's stream; returns
 * once it finished.
 */
napi_value Launch(napi_env env, napi_callback_info info) {
  if (!Ready(env)) return nullptr;
  napi_value argv[6];
  Args(env, info, argv, 6);
  cu::DevicePtr f = 0, dst = 0, src = 0;
  double grid = 0, block = 0;
  size_t n = 0;
  if (!Ptr(env, argv[0], &f) || !Num(env, argv[1], &grid) || !Num(env, argv[2], &block) || !Ptr(env, argv[3], &dst) ||
      !Ptr(env, argv[4], &src) || !Size(env, argv[5], &n)) return nullptr;
  if (!Whole(grid, 2147483647.0) || grid < 1 || !Whole(block, 1024) || block < 1) { ThrowType(env, "cudaLaunch: grid and block out of range"); return nullptr; }
  unsigned long long count = n;
  void* params[3] = {&dst, &src, &count};
  Sync(env, "cuLaunchKernel", g_drv.LaunchKernel(reinterpret_cast<cu::Function>(static_cast<uintptr_t>(f)),
      static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block), 1, 1, 0, t_local.stream, params, nullptr));
  return nullptr;
}

}  // namespace

void InitCuda(Napi::Env env, Napi::Object exports) {
  napi_env e = env;
  SetFn(e, exports, "cudaOpen", Open);
  SetFn(e, exports, "cudaDriverVersion", DriverVersion);
  SetFn(e, exports, "cudaInit", InitDriver);
  SetFn(e, exports, "cudaDeviceInfo", DeviceInfo);
  SetFn(e, exports, "cudaUse", Use);
  SetFn(e, exports, "cudaCanAccessPeer", CanAccessPeer);
  SetFn(e, exports, "cudaAlloc", Alloc);
  SetFn(e, exports, "cudaFree", Free);
  SetFn(e, exports, "cudaPointer", PointerInfo);
  SetFn(e, exports, "cudaUpload", Upload);
  SetFn(e, exports, "cudaDownload", Download);
  SetFn(e, exports, "cudaCopy", Copy);
  SetFn(e, exports, "cudaMemset", Memset);
  SetFn(e, exports, "cudaSynchronize", Synchronize);
  SetFn(e, exports, "cudaHostAlloc", HostAlloc);
  SetFn(e, exports, "cudaIpcHandle", IpcHandle);
  SetFn(e, exports, "cudaIpcOpen", IpcOpen);
  SetFn(e, exports, "cudaIpcClose", IpcClose);
  SetFn(e, exports, "cudaModuleLoad", ModuleLoad);
  SetFn(e, exports, "cudaFunction", GetFunction);
  SetFn(e, exports, "cudaLaunch", Launch);
}

}  // namespace railcomm
