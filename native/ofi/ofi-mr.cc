// Memory registration on one endpoint's domain (keys chosen by the provider
// or, where it lets the application choose, unique per domain), the peers'
// registrations the endpoint's RMA calls name by index, and the kernel's
// cross-memory-attach check behind the shm provider's fast RMA.
#include "ofi.h"
#include <sys/uio.h>

namespace ofi {

namespace {

/** regMr(h, view) -> { id, key (bigint), base (number: the address) } for remote read, write and atomics. */
Napi::Value RegMr(const Napi::CallbackInfo& cb) {
  Napi::Env env = cb.Env();
  Ep* e;
  if (EpArg(cb, &e) < 0) return env.Undefined();
  uint8_t* p = nullptr;
  size_t len = 0;
  if (!ViewData(env, cb[1], &p, &len)) { Napi::TypeError::New(env, "regMr: expected a typed array").ThrowAsJavaScriptException(); return env.Undefined(); }
  fid_mr* m = nullptr;
  uint64_t want = e->provKey ? 0 : (*e->keys)++;
  int r = fi_mr_reg(e->domain, p, len, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE, 0, want, 0, &m, nullptr);
  // A key another registration (in this domain) holds: take the next.
  for (int tries = 0; r == -FI_ENOKEY && !e->provKey && tries < 64; tries++) {
    want = (*e->keys)++;
    r = fi_mr_reg(e->domain, p, len, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE, 0, want, 0, &m, nullptr);
  }
  if (r != 0) { ThrowFi(env, "fi_mr_reg of " + std::to_string(len) + " bytes", r); return env.Undefined(); }
  size_t id = e->mrs.size();
  for (size_t i = 0; i < e->mrs.size(); i++) if (e->mrs[i] == nullptr) { id = i; break; }
  if (id == e->mrs.size()) e->mrs.push_back(m); else e->mrs[id] = m;
  Napi::Object out = Napi::Object::New(env);
  out.Set("id", static_cast<double>(id));
  out.Set("key", Napi::BigInt::New(env, fi_mr_key(m)));
  out.Set("base", static_cast<double>(reinterpret_cast<uintptr_t>(p)));
  return out;
}

Napi::Value DeregMr(const Napi::CallbackInfo& cb) {
  Ep* e;
  if (EpArg(cb, &e) < 0) return cb.Env().Undefined();
  const size_t id = cb[1].As<Napi::Number>().Uint32Value();
  if (id < e->mrs.size() && e->mrs[id] != nullptr) { fi_close(&e->mrs[id]->fid); e->mrs[id] = nullptr; }
  return cb.Env().Undefined();
}

/** remote(h, base, key) -> index: a peer's registration, named by index in RMA calls. */
Napi::Value AddRemote(const Napi::CallbackInfo& cb) {
  Ep* e;
  if (EpArg(cb, &e) < 0) return cb.Env().Undefined();
  bool lossless;
  const uint64_t base = static_cast<uint64_t>(cb[1].As<Napi::Number>().DoubleValue());
  const uint64_t key = cb[2].As<Napi::BigInt>().Uint64Value(&lossless);
  size_t i = e->remotes.size();
  for (size_t k = 0; k < e->remotes.size(); k++) if (!e->remotes[k].used) { i = k; break; }
  if (i == e->remotes.size()) e->remotes.push_back({base, key, true}); else e->remotes[i] = {base, key, true};
  return Napi::Number::New(cb.Env(), static_cast<double>(i));
}

Napi::Value DropRemote(const Napi::CallbackInfo& cb) {
  Ep* e;
  if (EpArg(cb, &e) < 0) return cb.Env().Undefined();
  const size_t i = cb[1].As<Napi::Number>().Uint32Value();
  if (i < e->remotes.size()) e->remotes[i].used = false;
  return cb.Env().Undefined();
}

/**
 * cmaCheck(pid, address) -> whether this process may read process pid's
 * memory at address (process_vm_readv of one byte): the kernel's test for
 * cross-memory attach, the same one libfabric's shm makes for its fast RMA.
 */
Napi::Value CmaCheck(const Napi::CallbackInfo& cb) {
  const pid_t pid = static_cast<pid_t>(cb[0].As<Napi::Number>().Int32Value());
  const uintptr_t addr = static_cast<uintptr_t>(cb[1].As<Napi::Number>().DoubleValue());
  char byte;
  iovec local = {&byte, 1};
  iovec remote = {reinterpret_cast<void*>(addr), 1};
  return Napi::Boolean::New(cb.Env(), pid > 0 && process_vm_readv(pid, &local, 1, &remote, 1, 0) == 1);
}

}  // namespace

void InitMr(Napi::Env env, Napi::Object exports) {
  exports.Set("regMr", Napi::Function::New(env, RegMr, "regMr"));
  exports.Set("deregMr", Napi::Function::New(env, DeregMr, "deregMr"));
  exports.Set("remote", Napi::Function::New(env, AddRemote, "remote"));
  exports.Set("dropRemote", Napi::Function::New(env, DropRemote, "dropRemote"));
  exports.Set("cmaCheck", Napi::Function::New(env, CmaCheck, "cmaCheck"));
}

}  // namespace ofi
