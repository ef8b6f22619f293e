// Entry point of railcomm's libfabric binding (the ofi rail): registers each
// part's functions. A module of its own, built only where libfabric's
// headers are (build.mjs), so the main addon never depends on libfabric.
#include "ofi.h"

#if FI_MAJOR_VERSION < 1 || (FI_MAJOR_VERSION == 1 && FI_MINOR_VERSION < 5)
#error "railcomm's ofi rail needs libfabric 1.5 or later"
#endif

static Napi::Object InitOfi(Napi::Env env, Napi::Object exports) {
  ofi::InitInfo(env, exports);
  ofi::InitEp(env, exports);
  ofi::InitMr(env, exports);
  ofi::InitOps(env, exports);
  ofi::InitPoll(env, exports);
  exports.Set("headers", std::to_string(FI_MAJOR_VERSION) + "." + std::to_string(FI_MINOR_VERSION));
  // The library's own version, which may be newer than the headers it was built with.
  const uint32_t v = fi_version();
  exports.Set("runtime", std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v)));
  return exports;
}

NODE_API_MODULE(railcomm_ofi, InitOfi)
