# railcomm's libfabric binding (the ofi rail): Node-API, one binary for every
# Node; built by native/ofi/build.mjs only where libfabric's headers are
# (pkg-config libfabric, else /usr/include/rdma/fabric.h).
{
  "targets": [
    {
      "target_name": "railcomm_ofi",
      "sources": ["ofi.cc", "ofi-info.cc", "ofi-ep.cc", "ofi-mr.cc", "ofi-sep.cc", "ofi-ops.cc", "ofi-poll.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++14", "-std=gnu++1y", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers", "<!@(pkg-config --cflags libfabric 2>/dev/null || true)"],
      "libraries": ["<!@(pkg-config --libs libfabric 2>/dev/null || echo -lfabric)"]
    }
  ]
}
