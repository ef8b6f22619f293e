// Compile-time check of native/src/cuda-abi.h against a real cuda.h: every
// function type the addon looks up, mapped type by type (CUresult and the
// attribute enums to int, the opaque handles to railcomm's), must be exactly
// the type cuda.h declares for that symbol, and every constant must agree.
// Not part of the addon build (which needs no CUDA). Run where cuda.h exists:
//   g++ -std=c++17 -fsyntax-only -I/usr/local/cuda/include -Inative/src native/cuda/abi-check.cc
#include <cuda.h>
#include <type_traits>
#include "cuda-abi.h"

namespace rc = railcomm::cu;

// M<T>::type: the type railcomm declares where cuda.h has T.
template <class T> struct M { using type = T; };
template <class T> struct M<const T> { using type = const typename M<T>::type; };
template <class T> struct M<T*> { using type = typename M<T>::type*; };
template <> struct M<CUresult> { using type = int; };
template <> struct M<CUdevice_attribute> { using type = int; };
template <> struct M<CUpointer_attribute> { using type = int; };
template <> struct M<CUjit_option> { using type = int; };
template <> struct M<CUctx_st> { using type = rc::CtxSt; };
template <> struct M<CUstream_st> { using type = rc::StreamSt; };
template <> struct M<CUmod_st> { using type = rc::ModSt; };
template <> struct M<CUfunc_st> { using type = rc::FuncSt; };
template <> struct M<CUipcMemHandle> { using type = rc::IpcMemHandle; };
template <class R, class... A> struct M<R (*)(A...)> { using type = typename M<R>::type (*)(typename M<A>::type...); };

#define SAME(sym, fn) static_assert(std::is_same<M<decltype(&::sym)>::type, rc::fn>::value, #sym " differs from cuda-abi.h's " #fn)

SAME(cuGetErrorString, GetErrorStringFn);
SAME(cuGetErrorName, GetErrorNameFn);
SAME(cuInit, InitFn);
SAME(cuDriverGetVersion, DriverGetVersionFn);
SAME(cuDeviceGet, DeviceGetFn);
SAME(cuDeviceGetCount, DeviceGetCountFn);
SAME(cuDeviceGetName, DeviceGetNameFn);
SAME(cuDeviceGetAttribute, DeviceGetAttributeFn);
SAME(cuDeviceTotalMem_v2, DeviceTotalMemFn);
SAME(cuDeviceCanAccessPeer, DeviceCanAccessPeerFn);
SAME(cuDevicePrimaryCtxRetain, DevicePrimaryCtxRetainFn);
SAME(cuCtxSetCurrent, CtxSetCurrentFn);
SAME(cuCtxSynchronize, CtxSynchronizeFn);
SAME(cuMemAlloc_v2, MemAllocFn);
SAME(cuMemFree_v2, MemFreeFn);
SAME(cuMemGetAddressRange_v2, MemGetAddressRangeFn);
SAME(cuMemHostAlloc, MemHostAllocFn);
SAME(cuMemFreeHost, MemFreeHostFn);
SAME(cuMemcpyHtoDAsync_v2, MemcpyHtoDAsyncFn);
SAME(cuMemcpyDtoHAsync_v2, MemcpyDtoHAsyncFn);
SAME(cuMemcpyDtoDAsync_v2, MemcpyDtoDAsyncFn);
SAME(cuMemcpyHtoD_v2, MemcpyHtoDFn);
SAME(cuMemcpyDtoH_v2, MemcpyDtoHFn);
SAME(cuMemcpyDtoD_v2, MemcpyDtoDFn);
SAME(cuMemsetD8Async, MemsetD8AsyncFn);
SAME(cuStreamCreate, StreamCreateFn);
SAME(cuStreamSynchronize, StreamSynchronizeFn);
SAME(cuPointerGetAttribute, PointerGetAttributeFn);
SAME(cuIpcGetMemHandle, IpcGetMemHandleFn);
SAME(cuIpcOpenMemHandle_v2, IpcOpenMemHandleFn);
SAME(cuIpcCloseMemHandle, IpcCloseMemHandleFn);
SAME(cuModuleLoadDataEx, ModuleLoadDataExFn);
SAME(cuModuleGetFunction, ModuleGetFunctionFn);
SAME(cuLaunchKernel, LaunchKernelFn);

// The enums railcomm passes as int are int-sized; the handle and pointer types match.
static_assert(sizeof(CUresult) == sizeof(int) && sizeof(CUdevice_attribute) == sizeof(int), "enum sizes");
static_assert(sizeof(CUpointer_attribute) == sizeof(int) && sizeof(CUjit_option) == sizeof(int), "enum sizes");
static_assert(std::is_same<CUdeviceptr, rc::DevicePtr>::value && std::is_same<CUdevice, rc::Device>::value, "pointer and device types");
static_assert(sizeof(CUipcMemHandle) == rc::kIpcHandleSize && CU_IPC_HANDLE_SIZE == rc::kIpcHandleSize, "IPC handle size");

static_assert(CUDA_SUCCESS == rc::kSuccess && CUDA_ERROR_INVALID_VALUE == rc::kErrorInvalidValue, "CUresult");
static_assert(CUDA_ERROR_NOT_INITIALIZED == rc::kErrorNotInitialized && CUDA_ERROR_NO_DEVICE == rc::kErrorNoDevice, "CUresult");
static_assert(CUDA_ERROR_ALREADY_MAPPED == rc::kErrorAlreadyMapped, "CUresult");
static_assert(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == rc::kAttrMultiprocessorCount, "attribute");
static_assert(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID == rc::kAttrPciBusId && CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID == rc::kAttrPciDeviceId, "attribute");
static_assert(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING == rc::kAttrUnifiedAddressing && CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID == rc::kAttrPciDomainId, "attribute");
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == rc::kAttrComputeCapabilityMajor, "attribute");
static_assert(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == rc::kAttrComputeCapabilityMinor, "attribute");
static_assert(CU_POINTER_ATTRIBUTE_MEMORY_TYPE == rc::kPtrMemoryType && CU_POINTER_ATTRIBUTE_BUFFER_ID == rc::kPtrBufferId, "pointer attribute");
static_assert(CU_POINTER_ATTRIBUTE_IS_MANAGED == rc::kPtrIsManaged && CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL == rc::kPtrDeviceOrdinal, "pointer attribute");
static_assert(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE == rc::kPtrLegacyIpcCapable, "pointer attribute");
static_assert(CU_MEMORYTYPE_HOST == rc::kMemoryTypeHost && CU_MEMORYTYPE_DEVICE == rc::kMemoryTypeDevice, "memory type");
static_assert(CU_MEMORYTYPE_UNIFIED == rc::kMemoryTypeUnified, "memory type");
static_assert(CU_MEMHOSTALLOC_PORTABLE == rc::kMemHostAllocPortable && CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS == rc::kIpcMemLazyEnablePeerAccess, "flags");
static_assert(CU_STREAM_DEFAULT == rc::kStreamDefault, "stream flags");
static_assert(CU_JIT_ERROR_LOG_BUFFER == rc::kJitErrorLogBuffer && CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES == rc::kJitErrorLogBufferSizeBytes, "JIT options");
