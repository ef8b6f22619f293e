// railcomm's PMIx client: PMIx_Init, Put + Commit, Fence and Get through the
// PMIx server of the launcher (Open MPI's mpirun, srun --mpi=pmix). libpmix.so.2
// is opened at run time (Open MPI's openmpi-bin brings it) with the few
// declarations of pmix-abi.h, so no libpmix-dev is needed to build railcomm
// and a machine without PMIx loses only PMIx. Fence, Get and Finalize can wait
// on other processes, so they run on libuv's thread pool and settle a promise;
// losing the server is reported through a threadsafe function (no orphans).
#include "common.h"
#include "pmix-abi.h"
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>

namespace railcomm {
namespace {

namespace px = pmix;

/** The library's entry points; loaded once per process (PMIx is per process too). */
struct Lib {
  void* handle = nullptr;
  std::string file;
  int major = 0;  // of PMIx_Get_version
  px::InitFn Init = nullptr;
  px::FinalizeFn Finalize = nullptr;
  px::PutFn Put = nullptr;
  px::CommitFn Commit = nullptr;
  px::FenceFn Fence = nullptr;
  px::GetFn Get = nullptr;
  px::ErrorStringFn ErrorString = nullptr;
  px::GetVersionFn GetVersion = nullptr;
  px::RegisterEventHandlerFn RegisterEventHandler = nullptr;
  px::ValueDestructFn ValueDestruct = nullptr;  // optional
};

std::mutex g_lib_mu;
Lib g_lib;            // filled once under g_lib_mu, read-only after
std::string g_lib_error;

std::mutex g_mu;      // guards g_state and g_me while they change
int g_state = 0;      // 0 never initialised, 1 initialised, 2 finalised
px::Proc g_me;        // this process (namespace, rank); read-only once initialised

std::mutex g_lost_mu;                         // guards g_lost against teardown
napi_threadsafe_function g_lost = nullptr;    // JS callback for PMIX_ERR_LOST_CONNECTION

/** Open the library (once); false with g_lib_error set when it cannot be used. */
bool OpenLib(const std::string& file) {
  std::lock_guard<std::mutex> g(g_lib_mu);
  if (g_lib.handle != nullptr) return true;
  // RTLD_GLOBAL: PMIx's plugins (pmix/lib/pmix/*.so) resolve libpmix's symbols from the global scope.
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    const char* e = dlerror();
    g_lib_error = file + " not found (" + (e != nullptr ? e : "dlopen failed") + ")";
    return false;
  }
  Lib lib;
  lib.handle = h;
  lib.file = file;
  const char* missing = nullptr;
  auto sym = [&](const char* name) -> void* {
    void* p = dlsym(h, name);
    if (p == nullptr && missing == nullptr) missing = name;
    return p;
  };
  lib.Init = reinterpret_cast<px::InitFn>(sym("PMIx_Init"));
  lib.Finalize = reinterpret_cast<px::FinalizeFn>(sym("PMIx_Finalize"));
  lib.Put = reinterpret_cast<px::PutFn>(sym("PMIx_Put"));
  lib.Commit = reinterpret_cast<px::CommitFn>(sym("PMIx_Commit"));
  lib.Fence = reinterpret_cast<px::FenceFn>(sym("PMIx_Fence"));
  lib.Get = reinterpret_cast<px::GetFn>(sym("PMIx_Get"));
  lib.ErrorString = reinterpret_cast<px::ErrorStringFn>(sym("PMIx_Error_string"));
  lib.GetVersion = reinterpret_cast<px::GetVersionFn>(sym("PMIx_Get_version"));
  lib.RegisterEventHandler = reinterpret_cast<px::RegisterEventHandlerFn>(sym("PMIx_Register_event_handler"));
  if (missing != nullptr) {
    g_lib_error = file + " lacks " + missing + " (not a PMIx v3-v5 client library)";
    dlclose(h);
    return false;
  }
  lib.ValueDestruct = reinterpret_cast<px::ValueDestructFn>(dlsym(h, "PMIx_Value_destruct"));
  // "OpenPMIx 4.2.2, ..." or "PMIx 3.2.3, ...": the first number is the major version.
  const char* v = lib.GetVersion();
  while (v != nullptr && *v != '\0' && (*v < '0' || *v > '9')) v++;
  lib.major = v != nullptr ? std::atoi(v) : 0;
  g_lib = lib;
  return true;
}

/** Free a value PMIx_Get returned (PMIX_VALUE_RELEASE). */
void Release(px::Value* v) {
  if (v == nullptr) return;
  if (g_lib.ValueDestruct != nullptr) {
    g_lib.ValueDestruct(v);
  } else if (v->type == px::kString) {
    std::free(v->data.string);
  } else if (v->type == px::kByteObject) {
    std::free(v->data.bo.bytes);
  }
  std::free(v);
}

void LoadProc(px::Proc* p, const char* nspace, px::rank_t rank) {
  std::memset(p, 0, sizeof *p);
  std::strncpy(p->nspace, nspace, px::kMaxNsLen);
  p->rank = rank;
}

void LoadInfo(px::Info* i, const char* key, px::data_type_t type) {
  std::memset(i, 0, sizeof *i);
  std::strncpy(i->key, key, px::kMaxKeyLen);
  i->value.type = type;
}

const char* CodeOf(px::status_t rc) {
  switch (rc) {
    case px::kErrNotFound: return "PMIX_ERR_NOT_FOUND";
    case px::kErrTimeout: return "PMIX_ERR_TIMEOUT";
    case px::kErrUnreach: return "PMIX_ERR_UNREACH";
    case px::kErrInit: return "PMIX_ERR_INIT";
    case px::kErrBadParam: return "PMIX_ERR_BAD_PARAM";
    default: return "PMIX_ERR";
  }
}

napi_value MakeError(napi_env env, const std::string& what, px::status_t rc) {
  napi_value code, msg, err;
  const char* s = g_lib.ErrorString != nullptr ? g_lib.ErrorString(rc) : nullptr;
  const std::string text = what + ": " + (s != nullptr ? s : "PMIx error") + " (status " + std::to_string(rc) + ")";
  napi_create_string_utf8(env, CodeOf(rc), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, text.c_str(), text.size(), &msg);
  napi_create_error(env, code, msg, &err);
  napi_set_named_property(env, err, "pmixStatus", Int(env, rc));
  return err;
}

void Throw(napi_env env, const std::string& what, px::status_t rc) {
  napi_throw(env, MakeError(env, what, rc));
}

bool ArgString(napi_env env, napi_value v, std::string* out) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, nullptr, 0, &len) != napi_ok) return false;
  out->resize(len);
  size_t got = 0;
  napi_get_value_string_utf8(env, v, out->data(), len + 1, &got);
  out->resize(got);
  return true;
}

bool ArgInt(napi_env env, napi_value v, int64_t* out) {
  return napi_get_value_int64(env, v, out) == napi_ok;
}

bool Initialised(napi_env env, const char* what) {
  std::lock_guard<std::mutex> g(g_mu);
  if (g_state == 1) return true;
  Throw(env, std::string(what) + (g_state == 0 ? ": PMIx is not initialised" : ": PMIx was finalised"), px::kErrInit);
  return false;
}

/** A job-level (wildcard) or own value as a JS number; -1 when the server does not know it. */
int64_t GetNumber(const px::Proc* proc, const char* key) {
  px::Value* v = nullptr;
  if (g_lib.Get(proc, key, nullptr, 0, &v) != px::kSuccess || v == nullptr) return -1;
  int64_t n = -1;
  switch (v->type) {
    case px::kUint32: n = v->data.uint32; break;
    case px::kUint16: n = v->data.uint16; break;
    case px::kInt: n = v->data.integer; break;
    case px::kUint: n = v->data.uint; break;
    case px::kProcRank: n = v->data.rank; break;
    default: break;
  }
  Release(v);
  return n;
}

void SetNum(napi_env env, napi_value obj, const char* name, int64_t n) {
  napi_value v;
  napi_create_int64(env, n, &v);
  napi_set_named_property(env, obj, name, v);
}

// init(): { rank, namespace, size, localRank, localSize, version }; -1 = unknown.
napi_value Init(napi_env env, napi_callback_info info) {
  std::lock_guard<std::mutex> g(g_mu);
  if (g_state == 2) { Throw(env, "PMIx_Init", px::kErrInit); return nullptr; }
  if (g_state == 0) {
    px::Proc me;
    std::memset(&me, 0, sizeof me);
    const px::status_t rc = g_lib.Init(&me, nullptr, 0);
    if (rc != px::kSuccess) { Throw(env, "PMIx_Init", rc); return nullptr; }
    g_me = me;
    g_state = 1;
  }
  px::Proc wild;
  LoadProc(&wild, g_me.nspace, px::kRankWildcard);
  napi_value out, ns, ver;
  napi_create_object(env, &out);
  SetNum(env, out, "rank", g_me.rank);
  napi_create_string_utf8(env, g_me.nspace, NAPI_AUTO_LENGTH, &ns);
  napi_set_named_property(env, out, "namespace", ns);
  SetNum(env, out, "size", GetNumber(&wild, px::kJobSize));
  SetNum(env, out, "localRank", GetNumber(&g_me, px::kLocalRank));
  SetNum(env, out, "localSize", GetNumber(&wild, px::kLocalSize));
  napi_create_string_utf8(env, g_lib.GetVersion(), NAPI_AUTO_LENGTH, &ver);
  napi_set_named_property(env, out, "version", ver);
  return out;
}

// put(key, value): PMIx_Put(PMIX_GLOBAL) of a string; commit() makes puts visible.
napi_value Put(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  const size_t argc = Args(env, info, argv, 2);
  std::string key, value;
  if (argc < 2 || !ArgString(env, argv[0], &key) || !ArgString(env, argv[1], &value)) {
    napi_throw_type_error(env, nullptr, "put(key: string, value: string)");
    return nullptr;
  }
  if (key.empty() || key.size() > px::kMaxKeyLen) { napi_throw_range_error(env, nullptr, "PMIx keys are 1 to 511 bytes"); return nullptr; }
  if (!Initialised(env, "PMIx_Put")) return nullptr;
  px::Value v;
  std::memset(&v, 0, sizeof v);
  v.type = px::kString;
  v.data.string = const_cast<char*>(value.c_str());  // PMIx_Put copies the value
  const px::status_t rc = g_lib.Put(px::kGlobal, key.c_str(), &v);
  if (rc != px::kSuccess) Throw(env, "PMIx_Put " + key, rc);
  return nullptr;
}

napi_value Commit(napi_env env, napi_callback_info info) {
  if (!Initialised(env, "PMIx_Commit")) return nullptr;
  const px::status_t rc = g_lib.Commit();
  if (rc != px::kSuccess) Throw(env, "PMIx_Commit", rc);
  return nullptr;
}

// ---- blocking calls on the thread pool --------------------------------------

enum class Kind { Fence, Get, Finalize };

struct Op {
  Kind kind = Kind::Fence;
  napi_deferred deferred = nullptr;
  napi_async_work work = nullptr;
  uint32_t rank = 0;
  std::string key;
  int timeoutSec = 0;
  px::status_t rc = px::kSuccess;
  std::string value;
  std::string what;
};

void Execute(napi_env, void* data) {
  Op* op = static_cast<Op*>(data);
  if (op->kind == Kind::Finalize) {
    op->rc = g_lib.Finalize(nullptr, 0);
    return;
  }
  px::Proc proc;
  px::Info info[2];
  size_t ninfo = 0;
  if (op->kind == Kind::Fence) {
    LoadProc(&proc, g_me.nspace, px::kRankWildcard);
    LoadInfo(&info[ninfo], px::kCollectData, px::kBool);
    info[ninfo].value.data.flag = true;
    ninfo++;
  } else {
    LoadProc(&proc, g_me.nspace, op->rank);
  }
  if (op->timeoutSec > 0) {
    LoadInfo(&info[ninfo], px::kTimeout, px::kInt);
    info[ninfo].value.data.integer = op->timeoutSec;
    ninfo++;
  }
  if (op->kind == Kind::Fence) {
    op->rc = g_lib.Fence(&proc, 1, info, ninfo);
  } else {
    px::Value* v = nullptr;
    op->rc = g_lib.Get(&proc, op->key.c_str(), info, ninfo, &v);
    if (op->rc == px::kSuccess && v != nullptr) {
      if (v->type == px::kString && v->data.string != nullptr) op->value = v->data.string;
      else if (v->type == px::kByteObject && v->data.bo.bytes != nullptr) op->value.assign(v->data.bo.bytes, v->data.bo.size);
      else op->rc = px::kErrTypeMismatch;
    }
    Release(v);
  }
  // The infos hold only a bool and an int: nothing to destruct.
}

void Complete(napi_env env, napi_status status, void* data) {
  Op* op = static_cast<Op*>(data);
  if (op->kind == Kind::Finalize && op->rc == px::kSuccess) {
    std::lock_guard<std::mutex> g(g_mu);
    g_state = 2;
  }
  if (op->rc != px::kSuccess) {
    napi_reject_deferred(env, op->deferred, MakeError(env, op->what, op->rc));
  } else {
    napi_value result;
    if (op->kind == Kind::Get) napi_create_string_utf8(env, op->value.c_str(), op->value.size(), &result);
    else napi_get_undefined(env, &result);
    napi_resolve_deferred(env, op->deferred, result);
  }
  napi_delete_async_work(env, op->work);
  delete op;
}

napi_value Queue(napi_env env, Op* op) {
  napi_value promise, name;
  napi_create_promise(env, &op->deferred, &promise);
  napi_create_string_utf8(env, "railcomm:pmix", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, nullptr, name, Execute, Complete, op, &op->work);
  napi_queue_async_work(env, op->work);
  return promise;
}

// fence(timeoutSec): PMIx_Fence over the whole namespace with PMIX_COLLECT_DATA.
napi_value Fence(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const size_t argc = Args(env, info, argv, 1);
  int64_t t = 0;
  if (argc >= 1 && !ArgInt(env, argv[0], &t)) { napi_throw_type_error(env, nullptr, "fence(timeoutSec: number)"); return nullptr; }
  if (!Initialised(env, "PMIx_Fence")) return nullptr;
  Op* op = new Op();
  op->timeoutSec = t > 0 ? static_cast<int>(t) : 0;
  op->what = "PMIx_Fence";
  return Queue(env, op);
}

// get(rank, key, timeoutSec): the string rank put under key.
napi_value Get(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  const size_t argc = Args(env, info, argv, 3);
  int64_t rank = 0, t = 0;
  std::string key;
  if (argc < 3 || !ArgInt(env, argv[0], &rank) || !ArgString(env, argv[1], &key) || !ArgInt(env, argv[2], &t) || rank < 0 || rank > INT32_MAX) {
    napi_throw_type_error(env, nullptr, "get(rank: number, key: string, timeoutSec: number)");
    return nullptr;
  }
  if (!Initialised(env, "PMIx_Get")) return nullptr;
  Op* op = new Op();
  op->kind = Kind::Get;
  op->rank = static_cast<uint32_t>(rank);
  op->key = key;
  op->timeoutSec = t > 0 ? static_cast<int>(t) : 0;
  op->what = "PMIx_Get " + key + " of rank " + std::to_string(rank);
  return Queue(env, op);
}

// finalize(): PMIx_Finalize (tells the server this process ends on purpose).
napi_value Finalize(napi_env env, napi_callback_info info) {
  if (!Initialised(env, "PMIx_Finalize")) return nullptr;
  Op* op = new Op();
  op->kind = Kind::Finalize;
  op->what = "PMIx_Finalize";
  return Queue(env, op);
}

// ---- losing the server ---------------------------------------------------------

void CallLost(napi_env env, napi_value cb, void*, void*) {
  if (env == nullptr || cb == nullptr) return;
  napi_value undef;
  napi_get_undefined(env, &undef);
  napi_call_function(env, undef, cb, 0, nullptr, nullptr);
}

// Runs on PMIx's progress thread.
void OnPmixEvent(size_t, px::status_t, const px::Proc*, px::Info[], size_t, px::Info*, size_t,
                 px::EventNotificationCb cbfunc, void* cbdata) {
  {
    std::lock_guard<std::mutex> g(g_lost_mu);
    if (g_lost != nullptr) napi_call_threadsafe_function(g_lost, nullptr, napi_tsfn_nonblocking);
  }
  if (cbfunc != nullptr) cbfunc(px::kEventActionComplete, nullptr, 0, nullptr, nullptr, cbdata);
}

// Registered after the threadsafe function, so it runs before Node frees it.
void DropLost(void*) {
  std::lock_guard<std::mutex> g(g_lost_mu);
  g_lost = nullptr;
}

// onLost(cb): call cb (on the event loop) if the connection to the PMIx server
// is lost. The callback never keeps the process alive. Once per process.
napi_value OnLost(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const size_t argc = Args(env, info, argv, 1);
  napi_valuetype t = napi_undefined;
  if (argc < 1 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_function) {
    napi_throw_type_error(env, nullptr, "onLost(callback: () => void)");
    return nullptr;
  }
  if (!Initialised(env, "PMIx_Register_event_handler")) return nullptr;
  {
    std::lock_guard<std::mutex> g(g_lost_mu);
    if (g_lost != nullptr) return nullptr;
  }
  napi_value name;
  napi_create_string_utf8(env, "railcomm:pmix-lost", NAPI_AUTO_LENGTH, &name);
  napi_threadsafe_function tsfn;
  if (napi_create_threadsafe_function(env, argv[0], nullptr, name, 0, 1, nullptr, nullptr, nullptr, CallLost, &tsfn) != napi_ok) {
    napi_throw_error(env, nullptr, "cannot create the PMIx lost-connection callback");
    return nullptr;
  }
  napi_unref_threadsafe_function(env, tsfn);
  {
    std::lock_guard<std::mutex> g(g_lost_mu);
    g_lost = tsfn;
  }
  napi_add_env_cleanup_hook(env, DropLost, nullptr);
  px::status_t codes[] = {px::kErrLostConnection};
  const px::status_t rc = g_lib.RegisterEventHandler(codes, 1, nullptr, 0, OnPmixEvent, nullptr, nullptr);
  if (g_lib.major >= 4 && rc < 0) Throw(env, "PMIx_Register_event_handler", rc);
  return nullptr;
}

napi_value Version(napi_env env, napi_callback_info info) {
  napi_value v;
  napi_create_string_utf8(env, g_lib.GetVersion(), NAPI_AUTO_LENGTH, &v);
  return v;
}

napi_value Library(napi_env env, napi_callback_info info) {
  napi_value v;
  napi_create_string_utf8(env, g_lib.file.c_str(), g_lib.file.size(), &v);
  return v;
}

/**
 * pmix(file = "libpmix.so.2") -> the PMIx client functions, after opening the
 * library; throws an Error with code ERR_PMIX_LIBRARY saying why it cannot.
 * The first library opened stays for the process (a later file is ignored).
 */
napi_value Open(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  const size_t argc = Args(env, info, argv, 1);
  std::string file = "libpmix.so.2";
  napi_valuetype t = napi_undefined;
  if (argc >= 1 && napi_typeof(env, argv[0], &t) == napi_ok && t == napi_string) ArgString(env, argv[0], &file);
  if (!OpenLib(file)) {
    napi_value code, msg, err;
    napi_create_string_utf8(env, "ERR_PMIX_LIBRARY", NAPI_AUTO_LENGTH, &code);
    napi_create_string_utf8(env, g_lib_error.c_str(), g_lib_error.size(), &msg);
    napi_create_error(env, code, msg, &err);
    napi_throw(env, err);
    return nullptr;
  }
  napi_value mod;
  napi_create_object(env, &mod);
  SetFn(env, mod, "init", Init);
  SetFn(env, mod, "put", Put);
  SetFn(env, mod, "commit", Commit);
  SetFn(env, mod, "fence", Fence);
  SetFn(env, mod, "get", Get);
  SetFn(env, mod, "finalize", Finalize);
  SetFn(env, mod, "onLost", OnLost);
  SetFn(env, mod, "version", Version);
  SetFn(env, mod, "library", Library);
  return mod;
}

}  // namespace

void InitPmix(Napi::Env env, Napi::Object exports) {
  SetFn(env, exports, "pmix", Open);
}

}  // namespace railcomm
