// railcomm's PMIx module (N-API): PMIx_Init, Put + Commit, Fence and Get as a
// client of the launcher's PMIx server. Fence, Get and Finalize can wait on
// other processes, so they run on libuv's thread pool and settle a promise;
// losing the server is reported through a threadsafe function (no orphans).
#include <node_api.h>
#include <pmix.h>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

namespace {

std::mutex g_mu;          // guards g_state and g_me while they change
int g_state = 0;          // 0 never initialised, 1 initialised, 2 finalised
pmix_proc_t g_me;         // this process (namespace, rank); read-only once initialised

std::mutex g_lost_mu;                         // guards g_lost against teardown
napi_threadsafe_function g_lost = nullptr;    // JS callback for PMIX_ERR_LOST_CONNECTION

const char* CodeOf(pmix_status_t rc) {
  switch (rc) {
    case PMIX_ERR_NOT_FOUND: return "PMIX_ERR_NOT_FOUND";
    case PMIX_ERR_TIMEOUT: return "PMIX_ERR_TIMEOUT";
    case PMIX_ERR_UNREACH: return "PMIX_ERR_UNREACH";
    case PMIX_ERR_INIT: return "PMIX_ERR_INIT";
    case PMIX_ERR_BAD_PARAM: return "PMIX_ERR_BAD_PARAM";
    default: return "PMIX_ERR";
  }
}

napi_value MakeError(napi_env env, const std::string& what, pmix_status_t rc) {
  napi_value code, msg, err, st;
  const std::string text = what + ": " + PMIx_Error_string(rc) + " (status " + std::to_string(rc) + ")";
  napi_create_string_utf8(env, CodeOf(rc), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, text.c_str(), text.size(), &msg);
  napi_create_error(env, code, msg, &err);
  napi_create_int32(env, rc, &st);
  napi_set_named_property(env, err, "pmixStatus", st);
  return err;
}

void Throw(napi_env env, const std::string& what, pmix_status_t rc) {
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
  Throw(env, std::string(what) + (g_state == 0 ? ": PMIx is not initialised" : ": PMIx was finalised"), PMIX_ERR_INIT);
  return false;
}

/** A job-level (wildcard) or own value as a JS number; -1 when the server does not know it. */
int64_t GetNumber(const pmix_proc_t* proc, const char* key) {
  pmix_value_t* v = nullptr;
  if (PMIx_Get(proc, key, nullptr, 0, &v) != PMIX_SUCCESS || v == nullptr) return -1;
  int64_t n = -1;
  switch (v->type) {
    case PMIX_UINT32: n = v->data.uint32; break;
    case PMIX_UINT16: n = v->data.uint16; break;
    case PMIX_INT: n = v->data.integer; break;
    case PMIX_UINT: n = v->data.uint; break;
    case PMIX_PROC_RANK: n = v->data.rank; break;
    default: break;
  }
  PMIX_VALUE_RELEASE(v);
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
  if (g_state == 2) { Throw(env, "PMIx_Init", PMIX_ERR_INIT); return nullptr; }
  if (g_state == 0) {
    pmix_proc_t me;
    PMIX_PROC_CONSTRUCT(&me);
    pmix_status_t rc = PMIx_Init(&me, nullptr, 0);
    if (rc != PMIX_SUCCESS) { Throw(env, "PMIx_Init", rc); return nullptr; }
    g_me = me;
    g_state = 1;
  }
  pmix_proc_t wild;
  PMIX_PROC_CONSTRUCT(&wild);
  PMIX_LOAD_PROCID(&wild, g_me.nspace, PMIX_RANK_WILDCARD);
  napi_value out, ns, ver;
  napi_create_object(env, &out);
  SetNum(env, out, "rank", g_me.rank);
  napi_create_string_utf8(env, g_me.nspace, NAPI_AUTO_LENGTH, &ns);
  napi_set_named_property(env, out, "namespace", ns);
  SetNum(env, out, "size", GetNumber(&wild, PMIX_JOB_SIZE));
  SetNum(env, out, "localRank", GetNumber(&g_me, PMIX_LOCAL_RANK));
  SetNum(env, out, "localSize", GetNumber(&wild, PMIX_LOCAL_SIZE));
  napi_create_string_utf8(env, PMIx_Get_version(), NAPI_AUTO_LENGTH, &ver);
  napi_set_named_property(env, out, "version", ver);
  return out;
}

// put(key, value): PMIx_Put(PMIX_GLOBAL) of a string; commit() makes puts visible.
napi_value Put(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  std::string key, value;
  if (argc < 2 || !ArgString(env, argv[0], &key) || !ArgString(env, argv[1], &value)) {
    napi_throw_type_error(env, nullptr, "put(key: string, value: string)");
    return nullptr;
  }
  if (key.empty() || key.size() > PMIX_MAX_KEYLEN) { napi_throw_range_error(env, nullptr, "PMIx keys are 1 to 511 bytes"); return nullptr; }
  if (!Initialised(env, "PMIx_Put")) return nullptr;
  pmix_value_t v;
  PMIX_VALUE_CONSTRUCT(&v);
  v.type = PMIX_STRING;
  v.data.string = const_cast<char*>(value.c_str());  // PMIx_Put copies the value
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
  if (rc != PMIX_SUCCESS) Throw(env, "PMIx_Put " + key, rc);
  return nullptr;
}

napi_value Commit(napi_env env, napi_callback_info info) {
  if (!Initialised(env, "PMIx_Commit")) return nullptr;
  pmix_status_t rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) Throw(env, "PMIx_Commit", rc);
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
  pmix_status_t rc = PMIX_SUCCESS;
  std::string value;
  std::string what;
};

void Execute(napi_env, void* data) {
  Op* op = static_cast<Op*>(data);
  pmix_proc_t proc;
  PMIX_PROC_CONSTRUCT(&proc);
  if (op->kind == Kind::Finalize) {
    op->rc = PMIx_Finalize(nullptr, 0);
    return;
  }
  pmix_info_t info[2];
  size_t ninfo = 0;
  bool collect = true;
  int timeout = op->timeoutSec;
  if (op->kind == Kind::Fence) {
    PMIX_LOAD_PROCID(&proc, g_me.nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_CONSTRUCT(&info[ninfo]);
    PMIX_INFO_LOAD(&info[ninfo], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    ninfo++;
  } else {
    PMIX_LOAD_PROCID(&proc, g_me.nspace, op->rank);
  }
  if (timeout > 0) {
    PMIX_INFO_CONSTRUCT(&info[ninfo]);
    PMIX_INFO_LOAD(&info[ninfo], PMIX_TIMEOUT, &timeout, PMIX_INT);
    ninfo++;
  }
  if (op->kind == Kind::Fence) {
    op->rc = PMIx_Fence(&proc, 1, info, ninfo);
  } else {
    pmix_value_t* v = nullptr;
    op->rc = PMIx_Get(&proc, op->key.c_str(), info, ninfo, &v);
    if (op->rc == PMIX_SUCCESS && v != nullptr) {
      if (v->type == PMIX_STRING && v->data.string != nullptr) op->value = v->data.string;
      else if (v->type == PMIX_BYTE_OBJECT && v->data.bo.bytes != nullptr) op->value.assign(v->data.bo.bytes, v->data.bo.size);
      else op->rc = PMIX_ERR_TYPE_MISMATCH;
    }
    if (v != nullptr) PMIX_VALUE_RELEASE(v);
  }
  for (size_t i = 0; i < ninfo; i++) PMIX_INFO_DESTRUCT(&info[i]);
}

void Complete(napi_env env, napi_status status, void* data) {
  Op* op = static_cast<Op*>(data);
  if (op->kind == Kind::Finalize && op->rc == PMIX_SUCCESS) {
    std::lock_guard<std::mutex> g(g_mu);
    g_state = 2;
  }
  if (op->rc != PMIX_SUCCESS) {
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
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
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
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
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
void OnPmixEvent(size_t, pmix_status_t, const pmix_proc_t*, pmix_info_t[], size_t, pmix_info_t*, size_t,
                 pmix_event_notification_cbfunc_fn_t cbfunc, void* cbdata) {
  {
    std::lock_guard<std::mutex> g(g_lost_mu);
    if (g_lost != nullptr) napi_call_threadsafe_function(g_lost, nullptr, napi_tsfn_nonblocking);
  }
  if (cbfunc != nullptr) cbfunc(PMIX_EVENT_ACTION_COMPLETE, nullptr, 0, nullptr, nullptr, cbdata);
}

// Registered after the threadsafe function, so it runs before Node frees it.
void DropLost(void*) {
  std::lock_guard<std::mutex> g(g_lost_mu);
  g_lost = nullptr;
}

// onLost(cb): call cb (on the event loop) if the connection to the PMIx server
// is lost. The callback never keeps the process alive. Once per process.
napi_value OnLost(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
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
  pmix_status_t codes[] = {PMIX_ERR_LOST_CONNECTION};
  pmix_status_t rc = PMIx_Register_event_handler(codes, 1, nullptr, 0, OnPmixEvent, nullptr, nullptr);
  if (rc < 0) Throw(env, "PMIx_Register_event_handler", rc);
  return nullptr;
}

napi_value Version(napi_env env, napi_callback_info info) {
  napi_value v;
  napi_create_string_utf8(env, PMIx_Get_version(), NAPI_AUTO_LENGTH, &v);
  return v;
}

}  // namespace

NAPI_MODULE_INIT() {
  const napi_property_descriptor props[] = {
    {"init", nullptr, Init, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"put", nullptr, Put, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"commit", nullptr, Commit, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"fence", nullptr, Fence, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"get", nullptr, Get, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"finalize", nullptr, Finalize, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"onLost", nullptr, OnLost, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"version", nullptr, Version, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}
