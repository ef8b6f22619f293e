// What the CUDA part's files share (cuda.cc, cuda-memory.cc, cuda-kernels.cc):
// the driver's entry points as loaded from libcuda.so.1, the per-process and
// per-thread state, and the argument and error helpers of the bindings.
#ifndef RAILCOMM_CUDA_DRIVER_H_
#define RAILCOMM_CUDA_DRIVER_H_
#include "common.h"
#include "cuda-abi.h"
#include <mutex>
#include <string>
#include <vector>

namespace railcomm {
namespace cudadrv {

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

extern std::mutex g_mu;              // guards the state below while it changes
extern Driver g_drv;                 // filled once, read-only after
extern bool g_initialised;           // cuInit succeeded
extern std::vector<cu::Context> g_primary;  // retained primary context per device (kept for the process)

/** What this thread uses: its device, that device's primary context, and one stream per device. */
struct Local {
  int device = -1;
  cu::Context ctx = nullptr;
  cu::Stream stream = nullptr;
  std::vector<cu::Stream> streams;  // by device ordinal
};
extern thread_local Local t_local;

/** Throw the driver's error rc for `what` (its name as the error's code). */
void ThrowCuda(napi_env env, const char* what, cu::Result rc);
void ThrowPlain(napi_env env, const std::string& msg);
/** The driver is loaded (else thrown). */
bool Loaded(napi_env env);
/** The driver is loaded and this thread has a device selected (else thrown). */
bool Ready(napi_env env);
/** A bigint device pointer argument. */
bool Ptr(napi_env env, napi_value v, cu::DevicePtr* out);
/** Ready(), and the call's one argument as a device pointer (else thrown). */
bool ReadyWithPtr(napi_env env, napi_callback_info info, cu::DevicePtr* out);
napi_value BigPtr(napi_env env, cu::DevicePtr p);
/** A byte count argument. */
bool Size(napi_env env, napi_value v, size_t* out);
/** rc, then this thread's stream synchronized: false (thrown) on an error. */
bool Sync(napi_env env, const char* what, cu::Result rc);
/** A host view argument's bytes (else thrown). */
bool HostBytes(napi_env env, napi_value v, char** data, size_t* len);

// The entry points of cuda-memory.cc and cuda-kernels.cc (InitCuda registers them).
napi_value Alloc(napi_env env, napi_callback_info info);
napi_value Free(napi_env env, napi_callback_info info);
napi_value PointerInfo(napi_env env, napi_callback_info info);
napi_value Upload(napi_env env, napi_callback_info info);
napi_value Download(napi_env env, napi_callback_info info);
napi_value Copy(napi_env env, napi_callback_info info);
napi_value Memset(napi_env env, napi_callback_info info);
napi_value Synchronize(napi_env env, napi_callback_info info);
napi_value HostAlloc(napi_env env, napi_callback_info info);
napi_value IpcHandle(napi_env env, napi_callback_info info);
napi_value IpcOpen(napi_env env, napi_callback_info info);
napi_value IpcClose(napi_env env, napi_callback_info info);
napi_value ModuleLoad(napi_env env, napi_callback_info info);
napi_value GetFunction(napi_env env, napi_callback_info info);
napi_value Launch(napi_env env, napi_callback_info info);

}  // namespace cudadrv
}  // namespace railcomm
#endif  // RAILCOMM_CUDA_DRIVER_H_
