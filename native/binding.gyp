# railcomm's native addon: shared-memory segments as SharedArrayBuffer, a
# cross-process futex doorbell, CMA single-copy reads, CRC32C, batched
# datagram sends, vectorised reductions and copies for the shared-memory
# collectives, and a watch on the process that started the rank (Linux only).
{
  "targets": [
    {
      "target_name": "railcomm_native",
      "sources": ["src/addon.cc", "src/shm.cc", "src/doorbell.cc", "src/cma.cc", "src/crc32c.cc", "src/udp.cc", "src/reduce.cc", "src/process.cc"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++14", "-std=gnu++1y", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-O2", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-cast-function-type"],
      "conditions": [["OS!='linux'", { "sources!": ["src/shm.cc", "src/process.cc"] }]]
    }
  ]
}
