// The few CUDA driver API declarations railcomm uses, written out here so the
// addon builds with no CUDA toolkit: libcuda.so.1 is opened at run time and
// each entry point looked up by its exported (versioned) name. The driver API
// is a stable C ABI; native/cuda/abi-check.cc checks every type below against
// a real cuda.h where one is installed (test/gpu/run-on-gpu.sh compiles it).
#pragma once
#include <cstddef>

namespace railcomm {
namespace cu {

// cuda.h: CUresult is an enum (int-sized); CUdevice an int; CUdeviceptr an
// unsigned long long on 64-bit Linux; the rest are opaque pointers.
using Result = int;
using Device = int;
using DevicePtr = unsigned long long;
struct CtxSt;
struct StreamSt;
struct ModSt;
struct FuncSt;
using Context = CtxSt*;
using Stream = StreamSt*;
using Module = ModSt*;
using Function = FuncSt*;

/** CUipcMemHandle: 64 opaque bytes, passed by value to cuIpcOpenMemHandle. */
constexpr size_t kIpcHandleSize = 64;
struct IpcMemHandle { char reserved[kIpcHandleSize]; };

constexpr Result kSuccess = 0;
constexpr Result kErrorInvalidValue = 1;
constexpr Result kErrorNotInitialized = 3;
constexpr Result kErrorNoDevice = 100;
constexpr Result kErrorAlreadyMapped = 208;

// CUdevice_attribute
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrPciBusId = 33;
constexpr int kAttrPciDeviceId = 34;
constexpr int kAttrUnifiedAddressing = 41;
constexpr int kAttrPciDomainId = 50;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;

// CUpointer_attribute (data types in cuda.h's cuPointerGetAttribute notes)
constexpr int kPtrMemoryType = 2;          // unsigned int: CUmemorytype
constexpr int kPtrBufferId = 7;            // unsigned long long, never reused in a process
constexpr int kPtrIsManaged = 8;           // boolean
constexpr int kPtrDeviceOrdinal = 9;       // int
constexpr int kPtrLegacyIpcCapable = 10;   // boolean

// CUmemorytype
constexpr unsigned kMemoryTypeHost = 1;
constexpr unsigned kMemoryTypeDevice = 2;
constexpr unsigned kMemoryTypeUnified = 4;

constexpr unsigned kMemHostAllocPortable = 0x01;   // CU_MEMHOSTALLOC_PORTABLE
constexpr unsigned kIpcMemLazyEnablePeerAccess = 0x1;
constexpr unsigned kStreamDefault = 0x0;           // synchronises with the legacy default stream

// CUjit_option
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;

// Function types, named after the symbol each is looked up by.
using GetErrorStringFn = Result (*)(Result, const char**);          // cuGetErrorString
using GetErrorNameFn = Result (*)(Result, const char**);            // cuGetErrorName
using InitFn = Result (*)(unsigned int);                             // cuInit
using DriverGetVersionFn = Result (*)(int*);                         // cuDriverGetVersion
using DeviceGetFn = Result (*)(Device*, int);                        // cuDeviceGet
using DeviceGetCountFn = Result (*)(int*);                           // cuDeviceGetCount
using DeviceGetNameFn = Result (*)(char*, int, Device);              // cuDeviceGetName
using DeviceGetAttributeFn = Result (*)(int*, int, Device);          // cuDeviceGetAttribute
using DeviceTotalMemFn = Result (*)(size_t*, Device);                // cuDeviceTotalMem_v2
using DeviceCanAccessPeerFn = Result (*)(int*, Device, Device);      // cuDeviceCanAccessPeer
using DevicePrimaryCtxRetainFn = Result (*)(Context*, Device);       // cuDevicePrimaryCtxRetain
using CtxSetCurrentFn = Result (*)(Context);                         // cuCtxSetCurrent
using CtxSynchronizeFn = Result (*)();                               // cuCtxSynchronize
using MemAllocFn = Result (*)(DevicePtr*, size_t);                   // cuMemAlloc_v2
using MemFreeFn = Result (*)(DevicePtr);                             // cuMemFree_v2
using MemGetAddressRangeFn = Result (*)(DevicePtr*, size_t*, DevicePtr);  // cuMemGetAddressRange_v2
using MemHostAllocFn = Result (*)(void**, size_t, unsigned int);     // cuMemHostAlloc
using MemFreeHostFn = Result (*)(void*);                             // cuMemFreeHost
using MemcpyHtoDAsyncFn = Result (*)(DevicePtr, const void*, size_t, Stream);  // cuMemcpyHtoDAsync_v2
using MemcpyDtoHAsyncFn = Result (*)(void*, DevicePtr, size_t, Stream);        // cuMemcpyDtoHAsync_v2
using MemcpyDtoDAsyncFn = Result (*)(DevicePtr, DevicePtr, size_t, Stream);    // cuMemcpyDtoDAsync_v2
using MemcpyHtoDFn = Result (*)(DevicePtr, const void*, size_t);     // cuMemcpyHtoD_v2
using MemcpyDtoHFn = Result (*)(void*, DevicePtr, size_t);           // cuMemcpyDtoH_v2
using MemcpyDtoDFn = Result (*)(DevicePtr, DevicePtr, size_t);       // cuMemcpyDtoD_v2
using MemsetD8AsyncFn = Result (*)(DevicePtr, unsigned char, size_t, Stream);  // cuMemsetD8Async
using StreamCreateFn = Result (*)(Stream*, unsigned int);            // cuStreamCreate
using StreamSynchronizeFn = Result (*)(Stream);                      // cuStreamSynchronize
using PointerGetAttributeFn = Result (*)(void*, int, DevicePtr);     // cuPointerGetAttribute
using IpcGetMemHandleFn = Result (*)(IpcMemHandle*, DevicePtr);      // cuIpcGetMemHandle
using IpcOpenMemHandleFn = Result (*)(DevicePtr*, IpcMemHandle, unsigned int);  // cuIpcOpenMemHandle_v2
using IpcCloseMemHandleFn = Result (*)(DevicePtr);                   // cuIpcCloseMemHandle
using ModuleLoadDataExFn = Result (*)(Module*, const void*, unsigned int, int*, void**);  // cuModuleLoadDataEx
using ModuleGetFunctionFn = Result (*)(Function*, Module, const char*);  // cuModuleGetFunction
using LaunchKernelFn = Result (*)(Function, unsigned int, unsigned int, unsigned int,
                                  unsigned int, unsigned int, unsigned int,
                                  unsigned int, Stream, void**, void**);  // cuLaunchKernel

}  // namespace cu
}  // namespace railcomm
