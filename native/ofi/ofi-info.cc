// What libfabric offers here: fi_getinfo for reliable datagram endpoints
// (FI_EP_RDM) with messages, RMA and atomics, each answer described for the
// rail's device list and `railcomm info`, and the ones the rail cannot use
// (they need local registration, per-endpoint keys, RMA events, message
// prefixes or unordered sends) marked refused with the reason.
#include "ofi.h"
#include <cstdlib>
#include <cstring>

namespace ofi {

namespace {

/** MR mode bits the rail works with (the seed's list): virtual addresses or offsets, provider or chosen keys. */
constexpr int kMrSupported = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
/** Everything, to see what the providers that refuse kMrSupported would need. */
constexpr int kMrAny = FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                       FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT | FI_MR_ENDPOINT | FI_MR_HMEM;

std::string MrText(int m) {
  std::string s;
  auto add = [&](int bit, const char* name) { if (m & bit) { if (!s.empty()) s += '|'; s += name; } };
  add(FI_MR_LOCAL, "local"); add(FI_MR_RAW, "raw"); add(FI_MR_VIRT_ADDR, "virt_addr"); add(FI_MR_ALLOCATED, "allocated");
  add(FI_MR_PROV_KEY, "prov_key"); add(FI_MR_MMU_NOTIFY, "mmu_notify"); add(FI_MR_RMA_EVENT, "rma_event");
  add(FI_MR_ENDPOINT, "endpoint"); add(FI_MR_HMEM, "hmem");
  return s.empty() ? "0" : s;
}

std::string CapsText(uint64_t c) {
  std::string s;
  auto add = [&](uint64_t bit, const char* name) { if (c & bit) { if (!s.empty()) s += ','; s += name; } };
  add(FI_MSG, "msg"); add(FI_TAGGED, "tagged"); add(FI_RMA, "rma"); add(FI_ATOMIC, "atomic");
  add(FI_MULTI_RECV, "multi_recv"); add(FI_SOURCE, "source"); add(FI_DIRECTED_RECV, "directed_recv");
  add(FI_HMEM, "hmem"); add(FI_RMA_EVENT, "rma_event"); add(FI_SHARED_AV, "shared_av");
  return s;
}

const char* Progress(fi_progress p) {
  switch (p) {
    case FI_PROGRESS_AUTO: return "auto";
    case FI_PROGRESS_MANUAL: return "manual";
    default: return "unspec";
  }
}

}  // namespace

fi_info* Hints(bool strict) {
  fi_info* h = fi_allocinfo();
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_MSG | FI_RMA | FI_ATOMIC;
  // Every operation passes its own fi_context2 (entries and receive slots), so both context modes are fine.
  h->mode = strict ? (FI_CONTEXT | FI_CONTEXT2) : ~0ULL;
  h->domain_attr->mr_mode = strict ? kMrSupported : kMrAny;
  // One thread (the rank's) uses each endpoint: no locking asked of the provider.
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  h->domain_attr->resource_mgmt = FI_RM_ENABLED;
  // Active messages to one peer arrive in the order sent.
  if (strict) {
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
  }
  return h;
}

/** Why the rail cannot use this answer (from the permissive query), or "". */
std::string Refusal(const fi_info* i) {
  const std::string prov = i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "";
  if (prov == "net" || prov.rfind("net;", 0) == 0) return "the net provider advertises atomics that fail and its completion fd is always readable";
  const int m = i->domain_attr->mr_mode;
  if (m & FI_MR_LOCAL) return "needs FI_MR_LOCAL (local buffers registered before use)";
  if (m & FI_MR_ENDPOINT) return "needs FI_MR_ENDPOINT (registrations bound to an endpoint)";
  if (m & FI_MR_RMA_EVENT) return "needs FI_MR_RMA_EVENT";
  if (m & FI_MR_MMU_NOTIFY) return "needs FI_MR_MMU_NOTIFY";
  if (m & FI_MR_RAW) return "needs FI_MR_RAW (raw keys)";
  if (i->mode & FI_MSG_PREFIX) return "needs FI_MSG_PREFIX (a provider header before every buffer)";
  if (i->mode & FI_RX_CQ_DATA) return "needs FI_RX_CQ_DATA";
  if (i->mode & ~(FI_CONTEXT | FI_CONTEXT2 | FI_ASYNC_IOV | FI_LOCAL_MR)) return "needs a mode bit the rail does not implement";
  if (!(i->tx_attr->msg_order & FI_ORDER_SAS)) return "does not keep sends to one peer in order (FI_ORDER_SAS)";
  return "not offered with FI_MSG|FI_RMA|FI_ATOMIC and these attributes";
}

namespace {

Napi::Object Describe(Napi::Env env, const fi_info* i) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("provider", i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "");
  o.Set("fabric", i->fabric_attr->name ? i->fabric_attr->name : "");
  o.Set("domain", i->domain_attr->name ? i->domain_attr->name : "");
  o.Set("addrFormat", static_cast<double>(i->addr_format));
  o.Set("caps", CapsText(i->caps));
  o.Set("mrMode", static_cast<double>(i->domain_attr->mr_mode));
  o.Set("mrModeText", MrText(i->domain_attr->mr_mode));
  o.Set("dataProgress", Progress(i->domain_attr->data_progress));
  o.Set("controlProgress", Progress(i->domain_attr->control_progress));
  o.Set("injectSize", static_cast<double>(i->tx_attr->inject_size));
  o.Set("txSize", static_cast<double>(i->tx_attr->size));
  o.Set("rxSize", static_cast<double>(i->rx_attr->size));
  o.Set("iovLimit", static_cast<double>(i->tx_attr->iov_limit));
  o.Set("maxMsgSize", static_cast<double>(i->ep_attr->max_msg_size));
  o.Set("maxTxContexts", static_cast<double>(i->domain_attr->max_ep_tx_ctx));
  o.Set("maxRxContexts", static_cast<double>(i->domain_attr->max_ep_rx_ctx));
  o.Set("multiRecv", (i->caps & FI_MULTI_RECV) != 0);
  o.Set("mrKeySize", static_cast<double>(i->domain_attr->mr_key_size));
  return o;
}

bool Same(const fi_info* a, const fi_info* b) {
  return a->fabric_attr->prov_name && b->fabric_attr->prov_name && a->domain_attr->name && b->domain_attr->name &&
         std::strcmp(a->fabric_attr->prov_name, b->fabric_attr->prov_name) == 0 && std::strcmp(a->domain_attr->name, b->domain_attr->name) == 0 &&
         a->addr_format == b->addr_format;
}

/** getinfo(): { version, usable: [...], refused: [...] } (each answer described; refused ones with `why`). */
Napi::Value GetInfo(const Napi::CallbackInfo& cb) {
  Napi::Env env = cb.Env();
  Napi::Object out = Napi::Object::New(env);
  const uint32_t v = fi_version();
  out.Set("version", std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v)));
  fi_info* strict = nullptr;
  fi_info* hints = Hints(true);
  int r = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints, &strict);
  fi_freeinfo(hints);
  if (r != 0 && r != -FI_ENODATA) out.Set("error", std::string("fi_getinfo: ") + fi_strerror(-r));
  Napi::Array usable = Napi::Array::New(env);
  uint32_t n = 0;
  for (fi_info* i = r == 0 ? strict : nullptr; i != nullptr; i = i->next) {
    if (i->fabric_attr->prov_name == nullptr || std::string(i->fabric_attr->prov_name).rfind("net", 0) == 0) continue;
    usable.Set(n++, Describe(env, i));
  }
  out.Set("usable", usable);
  // The permissive query: what is offered that the strict one did not return, and why not.
  fi_info* loose = nullptr;
  hints = Hints(false);
  const int r2 = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints, &loose);
  fi_freeinfo(hints);
  Napi::Array refused = Napi::Array::New(env);
  uint32_t k = 0;
  for (fi_info* i = r2 == 0 ? loose : nullptr; i != nullptr; i = i->next) {
    bool ok = false;
    for (fi_info* s = r == 0 ? strict : nullptr; s != nullptr && !ok; s = s->next) ok = Same(i, s);
    const std::string prov = i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "";
    if (ok && prov.rfind("net", 0) != 0) continue;
    Napi::Object o = Describe(env, i);
    o.Set("why", Refusal(i));
    refused.Set(k++, o);
  }
  out.Set("refused", refused);
  if (strict) fi_freeinfo(strict);
  if (loose) fi_freeinfo(loose);
  return out;
}

}  // namespace

/**
 * waitObject(provider, domain, addrFormat) -> "fd" | "none" | "" (could not
 * open): whether a completion queue of this provider has a wait fd to sleep
 * on (fabric, domain and queue opened and closed again), for `railcomm info`.
 */
Napi::Value WaitObject(const Napi::CallbackInfo& cb) {
  Napi::Env env = cb.Env();
  const std::string prov = cb[0].As<Napi::String>();
  const std::string dom = cb[1].As<Napi::String>();
  const uint32_t fmt = cb[2].As<Napi::Number>().Uint32Value();
  fi_info* hints = Hints(true);
  hints->fabric_attr->prov_name = strdup(prov.c_str());
  hints->domain_attr->name = strdup(dom.c_str());
  fi_info* list = nullptr;
  const int r = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints, &list);
  fi_freeinfo(hints);
  if (r != 0) return Napi::String::New(env, "");
  fi_info* i = list;
  for (fi_info* k = list; k != nullptr; k = k->next) if (k->addr_format == fmt) { i = k; break; }
  std::string out;
  fid_fabric* fab = nullptr;
  fid_domain* d = nullptr;
  fid_cq* cq = nullptr;
  if (fi_fabric(i->fabric_attr, &fab, nullptr) == 0 && fi_domain(fab, i, &d, nullptr) == 0) {
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_DATA;
    ca.wait_obj = FI_WAIT_FD;
    int fd = -1;
    if (fi_cq_open(d, &ca, &cq, nullptr) == 0 && fi_control(&cq->fid, FI_GETWAIT, &fd) == 0 && fd >= 0) out = "fd";
    else out = "none";
  }
  if (cq) fi_close(&cq->fid);
  if (d) fi_close(&d->fid);
  if (fab) fi_close(&fab->fid);
  fi_freeinfo(list);
  return Napi::String::New(env, out);
}

Napi::Value StrError(const Napi::CallbackInfo& cb) {
  const int e = cb[0].IsNumber() ? cb[0].As<Napi::Number>().Int32Value() : 0;
  return Napi::String::New(cb.Env(), fi_strerror(e < 0 ? -e : e));
}

/**
 * setEnvDefault(name, value): setenv(name, value) in the process's real
 * environment unless it holds name already; getEnv(name) -> its value or
 * null. libfabric reads its settings there (getenv, when it initializes), and
 * a worker thread's process.env is a copy that never reaches it: a thread
 * rank that loads the binding first sets railcomm's defaults this way before
 * its first fi_getinfo (env-defaults.ts).
 */
Napi::Value SetEnvDefault(const Napi::CallbackInfo& cb) {
  const std::string name = cb[0].As<Napi::String>();
  const std::string value = cb[1].As<Napi::String>();
  if (name.empty() || name.find('=') != std::string::npos) {
    Napi::TypeError::New(cb.Env(), "setEnvDefault: not a variable name: " + name).ThrowAsJavaScriptException();
    return cb.Env().Undefined();
  }
  setenv(name.c_str(), value.c_str(), 0);
  return cb.Env().Undefined();
}

Napi::Value GetEnv(const Napi::CallbackInfo& cb) {
  const std::string name = cb[0].As<Napi::String>();
  const char* v = getenv(name.c_str());
  return v == nullptr ? cb.Env().Null() : Napi::String::New(cb.Env(), v);
}

void InitInfo(Napi::Env env, Napi::Object exports) {
  exports.Set("setEnvDefault", Napi::Function::New(env, SetEnvDefault, "setEnvDefault"));
  exports.Set("getEnv", Napi::Function::New(env, GetEnv, "getEnv"));
  exports.Set("getinfo", Napi::Function::New(env, GetInfo, "getinfo"));
  exports.Set("strerror", Napi::Function::New(env, StrError, "strerror"));
  exports.Set("waitObject", Napi::Function::New(env, WaitObject, "waitObject"));
}

}  // namespace ofi
