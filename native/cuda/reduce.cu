// Element-wise reduction kernels for railcomm's device allreduce: dst[i] =
// dst[i] op src[i] for i < n, a grid-stride loop so any grid covers any n.
// railcomm loads them from PTX text through the driver (cuModuleLoadDataEx,
// which compiles PTX for whatever GPU it runs on), so no CUDA is needed to
// build railcomm. The PTX that ships is native/cuda/reduce.ptx, carried by
// src/cuda/reduce-ptx.ts; regenerate both with nvcc (CUDA 13: compute_75 is the
// oldest target it has; the script lowers .version to 6.4 for older drivers
// and checks the result with ptxas):
//   NVCC=/usr/local/cuda/bin/nvcc native/cuda/gen-ptx.sh
// Entry names: railcomm_<op>_<type>, op in sum prod min max, type in f32 f64
// i32 u32 i64 u64; parameters (u64 dst, u64 src, u64 n).

template <typename T> struct Sum { __device__ static T apply(T a, T b) { return a + b; } };
template <typename T> struct Prod { __device__ static T apply(T a, T b) { return a * b; } };
// min and max exactly as the host kernels (src/native/kernels.ts) compute them, so
// ranks that reduce on the GPU and ranks that reduce on the host get the same bits:
// a NaN on either side wins (b != b is false for integers).
template <typename T> struct Min { __device__ static T apply(T a, T b) { return (b < a || b != b) ? b : a; } };
template <typename T> struct Max { __device__ static T apply(T a, T b) { return (b > a || b != b) ? b : a; } };

template <typename T, typename Op>
__device__ void combine(T* __restrict__ dst, const T* __restrict__ src, unsigned long long n) {
  const unsigned long long stride = static_cast<unsigned long long>(blockDim.x) * gridDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = Op::apply(dst[i], src[i]);
  }
}

#define RAILCOMM_KERNEL(op, Op, tname, T) \
  extern "C" __global__ void railcomm_##op##_##tname(T* dst, const T* src, unsigned long long n) { combine<T, Op<T>>(dst, src, n); }

#define RAILCOMM_KERNELS(tname, T) \
  RAILCOMM_KERNEL(sum, Sum, tname, T) RAILCOMM_KERNEL(prod, Prod, tname, T) \
  RAILCOMM_KERNEL(min, Min, tname, T) RAILCOMM_KERNEL(max, Max, tname, T)

RAILCOMM_KERNELS(f32, float)
RAILCOMM_KERNELS(f64, double)
RAILCOMM_KERNELS(i32, int)
RAILCOMM_KERNELS(u32, unsigned int)
RAILCOMM_KERNELS(i64, long long)
RAILCOMM_KERNELS(u64, unsigned long long)
