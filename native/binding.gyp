# railcomm's native addon (Node-API: one binary for every Node version):
# shared-memory segments as SharedArrayBuffer, a cross-process futex doorbell,
# CMA single-copy reads, CRC32C, SipHash-2-4 (the udp MAC), batched datagram sends, vectorised reductions
# and copies for the shared-memory collectives, a watch on the process that
# started the rank, the PMIx client (libpmix.so.2 opened at run time, so
# no libpmix-dev is needed) and the CUDA part (libcuda.so.1 opened at run
# time: no CUDA toolkit needed). Linux only.
{
  "targets": [
    {
      "target_name": "railcomm_native",
      "sources": ["src/addon.cc", "src/shm.cc", "src/doorbell.cc", "src/cma.cc", "src/crc32c.cc", "src/siphash.cc", "src/udp.cc", "src/reduce.cc", "src/process.cc", "src/tcp-socket.cc", "src/pmix.cc", "src/cuda.cc", "src/cuda-memory.cc", "src/cuda-kernels.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      # NAPI_VERSION 8: Node 12.22 on, so every Node this package supports has each call.
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++14", "-std=gnu++1y", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-cast-function-type", "-Wno-stringop-truncation"],
      "libraries": ["-ldl"],
      "conditions": [["OS!='linux'", { "sources!": ["src/shm.cc", "src/process.cc", "src/tcp-socket.cc", "src/pmix.cc", "src/cuda.cc", "src/cuda-memory.cc", "src/cuda-kernels.cc"] }]]
    }
  ]
}
