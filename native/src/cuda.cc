// railcomm's CUDA part: the driver library (libcuda.so.1) opened at run time
// with the declarations of cuda-abi.h, so the addon builds without CUDA and a
// machine without a GPU only loses GPU memory. Device memory, synchronous
// copies (on one stream per thread and device, then a stream sync), pinned
// host memory as ArrayBuffers, CUDA IPC handles, pointer queries and one
// element-wise kernel launch. Contexts are per thread in the driver: every
// thread (a worker-thread rank) selects its device with cudaUse first.
#include "common.h"
// Memory and IPC are in cuda-memory.cc, kernels in cuda-kernels.cc; what they
// share, in cuda-driver.h.
#include "cuda-driver.h"
#include <cstdint>
#include <cstring>
#include <dlfcn.h>

namespace railcomm {
namespace cudadrv {

std::mutex g_mu;
Driver g_drv;
bool g_initialised = false;
std::vector<cu::Context> g_primary;
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

bool ReadyWithPtr(napi_env env, napi_callback_info info, cu::DevicePtr* out) {
  if (!Ready(env)) return false;
  napi_value argv[1];
  Args(env, info, argv, 1);
  return Ptr(env, argv[0], out);
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

bool HostBytes(napi_env env, napi_value v, char** data, size_t* len) {
  if (BytesOf(env, v, data, len)) return true;
  ThrowType(env, "expected a typed array, DataView or ArrayBuffer");
  return false;
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

}  // namespace cudadrv

using namespace cudadrv;

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
