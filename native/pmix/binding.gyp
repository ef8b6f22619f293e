# railcomm's optional PMIx module: wire-up (put, commit, fence, get) through the
# PMIx server of the launcher (Open MPI's mpirun, srun --mpi=pmix). Separate
# from the main addon so a machine without libpmix loses only PMIx.
{
  "targets": [
    {
      "target_name": "railcomm_pmix",
      "sources": ["src/pmix.cc"],
      "include_dirs": ["<!@(pkg-config --cflags-only-I pmix | sed 's/-I//g')"],
      "libraries": ["<!@(pkg-config --libs-only-l pmix)"],
      "ldflags": ["<!@(pkg-config --libs-only-L --libs-only-other pmix)"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++14", "-std=gnu++1y", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-O2", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
