// The CUDA part's kernels: PTX loaded through the driver's JIT and one
// element-wise launch shape, f(dst, src, n), run to completion on this
// thread's stream (cuda-driver.h: what the CUDA files share).
#include "cuda-driver.h"
#include <cstdint>
#include <string>

namespace railcomm {
namespace cudadrv {

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

}  // namespace cudadrv
}  // namespace railcomm
