# railcomm's V8 shim (sab.cc says why it exists): built per Node ABI, only for
# a Node whose Node-API lacks node_api_create_external_sharedarraybuffer.
{
  "targets": [
    {
      "target_name": "railcomm_sab",
      "sources": ["sab.cc"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++14", "-std=gnu++1y", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": ["-std=c++20", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-cast-function-type"],
      "libraries": ["-ldl"]
    }
  ]
}
