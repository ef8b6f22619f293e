// Opening and closing one libfabric RDM endpoint (fabric, domain, address
// vector, completion queue with a wait fd where the provider has one,
// endpoint), its receive slab and transmit pools; addresses, the atomics the
// domain validates, and close-on-exec for the descriptors libfabric opens
// without it. Memory registration and peers' keys are in ofi-mr.cc.
#include "ofi.h"
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace ofi {

namespace {

constexpr int kMaxEps = 256;
Ep* g_eps[kMaxEps];
// A handle is its slot plus kMaxEps times the slot's use count: a slot used
// again gives a new handle, so a closed endpoint's handle names nothing (a
// rail that kept it gets -FI_EBADF, never another rail's endpoint).
int g_opened = 0;
std::mutex g_lock;

/** Names of this process's open endpoints, and of those closed since (per process: all threads' rails). */
std::set<std::string> g_openNames;
std::set<std::string> g_closedNames;

/** Descriptors open without close-on-exec before libfabric ran: the process's own (inherited on purpose), left alone. */
std::set<int> g_keep;
bool g_snapshot = false;

void SnapshotFds() {
  if (g_snapshot) return;
  g_snapshot = true;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return;
  const int self = dirfd(d);
  while (dirent* e = readdir(d)) {
    const int fd = std::atoi(e->d_name);
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == self) continue;
    const int fl = fcntl(fd, F_GETFD);
    if (fl >= 0 && !(fl & FD_CLOEXEC)) g_keep.insert(fd);
  }
  closedir(d);
}

/** What names an endpoint of this process among open and closed ones: its address, and its context of a shared one. */
std::string PeerKey(const char* name, size_t len, int ctx) {
  std::string k(name, len);
  if (ctx >= 0) k += "#" + std::to_string(ctx);
  return k;
}

}  // namespace

void ReleaseSlab(Slab* s) {
  if (s->refs.fetch_sub(1) == 1) {
    std::free(s->mem);
    delete s;
  }
}

Ep* Lookup(int h) {
  if (h < 0) return nullptr;
  Ep* e = g_eps[h % kMaxEps];
  return e != nullptr && e->handle == h ? e : nullptr;
}

bool LocalPeerClosed(Ep* e, fi_addr_t dest) {
  if (dest >= e->localPeers.size() || e->localPeers[dest].empty()) return false;
  std::lock_guard<std::mutex> g(g_lock);
  return g_closedNames.count(e->localPeers[dest]) != 0;
}

void ThrowFi(napi_env env, const std::string& what, int err) {
  if (err < 0) err = -err;
  const std::string msg = what + ": " + fi_strerror(err) + " (" + std::to_string(err) + ")";
  napi_value code, m, e;
  napi_create_string_utf8(env, "ERR_OFI", NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, msg.c_str(), msg.size(), &m);
  napi_create_error(env, code, m, &e);
  napi_value n;
  napi_create_int32(env, err, &n);
  napi_set_named_property(env, e, "errno", n);
  napi_throw(env, e);
}

/** The endpoint named by a call's first argument; -1 (a TypeError thrown) if none. */
int EpArg(const Napi::CallbackInfo& cb, Ep** out) {
  const int h = cb[0].IsNumber() ? cb[0].As<Napi::Number>().Int32Value() : -1;
  *out = Lookup(h);
  if (*out == nullptr) {
    Napi::TypeError::New(cb.Env(), "ofi: no such endpoint (closed?)").ThrowAsJavaScriptException();
    return -1;
  }
  return h;
}

namespace {

/**
 * A counter of peers' one-sided operations served here (Ep::remoteCntr),
 * bound before the endpoint is enabled; none where the provider refuses it
 * (the timer then backs off as it would without).
 */
void BindRemoteCounter(Ep* e) {
  fi_cntr_attr ca{};
  ca.events = FI_CNTR_EVENTS_COMP;
  ca.wait_obj = FI_WAIT_NONE;
  if (fi_cntr_open(e->domain, &ca, &e->remoteCntr, nullptr) != 0) { e->remoteCntr = nullptr; return; }
  if (fi_ep_bind(e->ep, &e->remoteCntr->fid, FI_REMOTE_WRITE | FI_REMOTE_READ) != 0) {
    fi_close(&e->remoteCntr->fid);
    e->remoteCntr = nullptr;
  }
}

/** Release everything of e in the order libfabric needs: endpoint, queues, registrations, domain, fabric; memory last. */
void Destroy(Ep* e) {
  const bool watched = e->poll != nullptr;
  StopWatch(e);
  // Closed by JavaScript: the environment's hook is no longer needed. Closed by the
  // hook: it is finished once the libuv handle has closed (OnClosed), or now without one.
  if (e->hook != nullptr && (!e->envGone || !watched)) napi_remove_async_cleanup_hook(e->hook);
  e->hook = nullptr;
  if (!e->name.empty()) {
    std::lock_guard<std::mutex> g(g_lock);
    g_openNames.erase(e->name);
    g_closedNames.insert(e->name);
  }
  if (e->abandon && e->sep == nullptr) {
    // Left open (AbandonAtClose): the provider's objects, the receive slab and
    // transmit entries they still reference, and e itself (its receive
    // contexts), all kept until the process exits. Only what is railcomm's goes.
    if (e->eventsRef) napi_delete_reference(e->env, e->eventsRef);
    if (e->holdRef) napi_delete_reference(e->env, e->holdRef);
    if (e->headRef) napi_delete_reference(e->env, e->headRef);
    e->eventsRef = e->holdRef = e->headRef = nullptr;
    e->events = nullptr;
    e->hold = nullptr;
    e->head = nullptr;
    return;
  }
  if (e->sep) {
    // A context of a shared scalable endpoint: parked (its contexts, queue, slab and
    // transmit entries stay until the endpoint's last context closes, since the
    // domain's progress thread goes on); address vector, domain and fabric go with it.
    const bool park = e->rx && e->cq && e->slab;
    if (park) {
      ParkContext(e);
    } else {  // (an open that failed half way)
      if (e->ep) fi_close(&e->ep->fid);
      if (e->rx) fi_close(&e->rx->fid);
      if (e->cq) fi_close(&e->cq->fid);
    }
    for (fid_mr* m : e->mrs) if (m) fi_close(&m->fid);
    CloseContext(e, park);
  } else {
    if (e->ep) fi_close(&e->ep->fid);
    if (e->remoteCntr) fi_close(&e->remoteCntr->fid);
    if (e->cq) fi_close(&e->cq->fid);
    if (e->av) fi_close(&e->av->fid);
    for (fid_mr* m : e->mrs) if (m) fi_close(&m->fid);
    if (e->domain) fi_close(&e->domain->fid);
  }
  // The sockets provider's progress thread belongs to the domain and is joined
  // by its close: memory it may touch is freed only after this point.
  if (e->fabric) fi_close(&e->fabric->fid);
  if (e->info) fi_freeinfo(e->info);
  if (e->slab) ReleaseSlab(e->slab);
  for (Pool& p : e->pools) std::free(p.mem);
  if (e->eventsRef) napi_delete_reference(e->env, e->eventsRef);
  if (e->holdRef) napi_delete_reference(e->env, e->holdRef);
  if (e->headRef) napi_delete_reference(e->env, e->headRef);
  // The receive slab goes when its ArrayBuffer and its receive context have both let go (Slab).
  delete e;
}

void FreeSlab(Napi::Env, void*, Slab* s) { ReleaseSlab(s); }

/** The rank's environment is going away with its endpoint still open (a terminated worker thread). */
void EnvGone(napi_async_cleanup_hook_handle hook, void* arg) {
  Ep* e = static_cast<Ep*>(arg);
  {
    std::lock_guard<std::mutex> g(g_lock);
    if (e->handle >= 0 && g_eps[e->handle % kMaxEps] == e) g_eps[e->handle % kMaxEps] = nullptr;
  }
  e->envGone = true;
  e->hook = hook;
  Destroy(e);
}

/**
 * open({ provider, domain, addrFormat, rxSlot, rxCount, smallCount, largeBytes, largeCount, inject?, waitFd?, node?, contexts? })
 * -> { handle, name, rx, waitFd, inject, virtAddr, provKey, ..., atomics }
 */
Napi::Value Open(const Napi::CallbackInfo& cb) {
  Napi::Env env = cb.Env();
  Napi::Object o = cb[0].As<Napi::Object>();
  const std::string prov = o.Get("provider").As<Napi::String>();
  const std::string dom = o.Get("domain").As<Napi::String>();
  const uint32_t addrFormat = o.Get("addrFormat").As<Napi::Number>().Uint32Value();
  const size_t rxSlot = o.Get("rxSlot").As<Napi::Number>().Uint32Value();
  const uint32_t rxCount = o.Get("rxCount").As<Napi::Number>().Uint32Value();
  const uint32_t smallCount = o.Get("smallCount").As<Napi::Number>().Uint32Value();
  const size_t largeBytes = o.Get("largeBytes").As<Napi::Number>().Uint32Value();
  const uint32_t largeCount = o.Get("largeCount").As<Napi::Number>().Uint32Value();
  const bool inject = !o.Has("inject") || o.Get("inject").ToBoolean().Value();
  const bool remoteWakes = o.Has("remoteWakes") && o.Get("remoteWakes").ToBoolean().Value();
  // false: the completion queue without a wait object, polled only (RAILCOMM_OFI_WAIT_FD=0).
  const bool waitFd = !o.Has("waitFd") || o.Get("waitFd").ToBoolean().Value();
  // More than one: a context of a scalable endpoint this process's thread ranks share (ofi-sep.cc).
  const int contexts = o.Has("contexts") && o.Get("contexts").IsNumber() ? o.Get("contexts").As<Napi::Number>().Int32Value() : 0;
  // A source name for providers that name their endpoints (shm: its /dev/shm file is named after it).
  const std::string node = o.Has("node") && o.Get("node").IsString() ? o.Get("node").As<Napi::String>().Utf8Value() : std::string();
  SnapshotFds();

  Ep* e = new Ep();
  e->env = env;
  auto fail = [&](const std::string& what, int err) -> Napi::Value {
    Destroy(e);
    ThrowFi(env, what + " (" + prov + " on " + dom + ")", err);
    return env.Undefined();
  };
  int r;
  if (contexts > 1) {
    std::string what;
    if ((r = OpenContext(e, prov, dom, addrFormat, contexts, &what)) != 0) return fail(what, r);
  } else {
    fi_info* hints = Hints(true);
    hints->fabric_attr->prov_name = strdup(prov.c_str());
    hints->domain_attr->name = strdup(dom.c_str());
    fi_info* list = nullptr;
    r = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), node.empty() ? nullptr : node.c_str(), nullptr, node.empty() ? 0 : FI_SOURCE, hints, &list);
    fi_freeinfo(hints);
    if (r != 0) return fail("fi_getinfo", r);
    fi_info* pick = nullptr;
    for (fi_info* i = list; i != nullptr && pick == nullptr; i = i->next) if (addrFormat == 0 || i->addr_format == addrFormat) pick = i;
    if (pick == nullptr) pick = list;
    e->info = fi_dupinfo(pick);
    fi_freeinfo(list);
    if ((r = fi_fabric(e->info->fabric_attr, &e->fabric, nullptr)) != 0) return fail("fi_fabric", r);
    if ((r = fi_domain(e->fabric, e->info, &e->domain, nullptr)) != 0) return fail("fi_domain", r);
    fi_av_attr aa{};
    aa.type = FI_AV_TABLE;
    aa.count = 256;
    if ((r = fi_av_open(e->domain, &aa, &e->av, nullptr)) != 0) return fail("fi_av_open", r);
  }
  fi_info* info = e->info;
  fi_cq_attr ca{};
  ca.format = FI_CQ_FORMAT_DATA;
  ca.size = info->tx_attr->size + info->rx_attr->size;
  ca.wait_obj = waitFd ? FI_WAIT_FD : FI_WAIT_NONE;
  if (!waitFd || fi_cq_open(e->domain, &ca, &e->cq, nullptr) != 0) {
    // No fd to sleep on (shm, udp;ofi_rxd here, or none asked for): the rail polls it on a timer when idle.
    ca.wait_obj = FI_WAIT_NONE;
    if ((r = fi_cq_open(e->domain, &ca, &e->cq, nullptr)) != 0) return fail("fi_cq_open", r);
  } else {
    int fd = -1;
    if (fi_control(&e->cq->fid, FI_GETWAIT, &fd) == 0 && fd >= 0) e->waitFd = fd;
  }
  if (e->sep != nullptr) {
    std::string what;
    if ((r = BindContexts(e, &what)) != 0) return fail(what, r);
  } else {
    if ((r = fi_endpoint(e->domain, info, &e->ep, nullptr)) != 0) return fail("fi_endpoint", r);
    e->rx = e->ep;
    if ((r = fi_ep_bind(e->ep, &e->av->fid, 0)) != 0) return fail("fi_ep_bind(av)", r);
    if ((r = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV)) != 0) return fail("fi_ep_bind(cq)", r);
    if (e->waitFd < 0 && (info->caps & FI_RMA_EVENT) != 0) BindRemoteCounter(e);
    e->remoteWakes = remoteWakes && e->remoteCntr != nullptr;
    if ((r = fi_enable(e->ep)) != 0) return fail("fi_enable", r);
  }

  const int mr = info->domain_attr->mr_mode;
  e->virtAddr = (mr & FI_MR_VIRT_ADDR) != 0 || mr == FI_MR_BASIC;
  e->provKey = (mr & FI_MR_PROV_KEY) != 0 || mr == FI_MR_BASIC;
  e->inject = inject ? info->tx_attr->inject_size : 0;
  e->txLimit = info->tx_attr->size > 0 && info->tx_attr->size < 0xffffffffu ? static_cast<uint32_t>(info->tx_attr->size) : 0xffffffffu;

  // Receive slab, posted whole.
  e->rxSlot = (rxSlot + 63) & ~static_cast<size_t>(63);
  e->rxCount = rxCount;
  e->rxMem = static_cast<uint8_t*>(std::aligned_alloc(4096, (e->rxSlot * rxCount + 4095) & ~static_cast<size_t>(4095)));
  if (e->rxMem == nullptr) return fail("receive slab", FI_ENOMEM);
  e->rxCtx.resize(rxCount);
  e->slab = new Slab();
  e->slab->mem = e->rxMem;
  Napi::ArrayBuffer rx = Napi::ArrayBuffer::New(env, e->rxMem, e->rxSlot * rxCount, FreeSlab, e->slab);
  // Transmit pools: small entries (headers, frames up to 1 KiB, RMA), large (copied frames).
  const size_t sizes[2] = {kHead + 1024, kHead + ((largeBytes + 63) & ~static_cast<size_t>(63))};
  const uint32_t counts[2] = {smallCount, largeCount};
  for (int p = 0; p < 2; p++) {
    Pool& pl = e->pools[p];
    pl.stride = sizes[p];
    pl.count = counts[p];
    pl.mem = static_cast<uint8_t*>(std::aligned_alloc(64, (pl.stride * pl.count + 63) & ~static_cast<size_t>(63)));
    if (pl.mem == nullptr) return fail("transmit pool", FI_ENOMEM);
    pl.free.reserve(pl.count);
    for (uint32_t i = pl.count; i > 0; i--) pl.free.push_back(i - 1);
    for (uint32_t i = 0; i < pl.count; i++) { Entry* x = pl.at(i); std::memset(x, 0, sizeof(Entry)); x->pool = p; x->index = i; }
  }
  e->pending.reserve(static_cast<size_t>(smallCount) + largeCount);
  for (uint32_t i = 0; i < rxCount; i++) if (!PostRecv(e, i)) e->rxUnposted.push_back(i);

  char name[512];
  size_t nlen = sizeof name;
  if ((r = e->sep != nullptr ? SepName(e, name, &nlen) : fi_getname(&e->ep->fid, name, &nlen)) != 0) return fail("fi_getname", r);

  {
    std::lock_guard<std::mutex> g(g_lock);
    for (int h = 0; h < kMaxEps; h++) {
      if (g_eps[h] != nullptr) continue;
      g_eps[h] = e;
      e->handle = h + kMaxEps * (g_opened++ % (INT_MAX / kMaxEps));
      break;
    }
    if (e->handle >= 0) {
      e->name = PeerKey(name, nlen, e->ctx);
      g_openNames.insert(e->name);
      g_closedNames.erase(e->name);
    }
  }
  if (e->handle < 0) return fail("too many open ofi endpoints in this process", FI_ENOSPC);
  napi_add_async_cleanup_hook(env, EnvGone, e, &e->hook);

  // The atomics this domain validates: count per (datatype, op) for plain,
  // fetching and comparing operations (0: not offered).
  Napi::Int32Array at = Napi::Int32Array::New(env, 10 * 13 * 3);
  for (int dt = 0; dt < 10; dt++) {
    for (int op = 0; op <= FI_CSWAP; op++) {
      fi_atomic_attr a{};
      int32_t* cell = at.Data() + (dt * 13 + op) * 3;
      if (op != FI_CSWAP && fi_query_atomic(e->domain, static_cast<fi_datatype>(dt), static_cast<fi_op>(op), &a, 0) == 0) cell[0] = static_cast<int32_t>(a.count > 0x7fffffff ? 0x7fffffff : a.count);
      a = {};
      if (op != FI_CSWAP && fi_query_atomic(e->domain, static_cast<fi_datatype>(dt), static_cast<fi_op>(op), &a, FI_FETCH_ATOMIC) == 0) cell[1] = static_cast<int32_t>(a.count > 0x7fffffff ? 0x7fffffff : a.count);
      a = {};
      if (op == FI_CSWAP && fi_query_atomic(e->domain, static_cast<fi_datatype>(dt), static_cast<fi_op>(op), &a, FI_COMPARE_ATOMIC) == 0) cell[2] = static_cast<int32_t>(a.count > 0x7fffffff ? 0x7fffffff : a.count);
    }
  }

  Napi::Object out = Napi::Object::New(env);
  out.Set("handle", e->handle);
  out.Set("name", Napi::Buffer<char>::Copy(env, name, nlen));
  out.Set("rx", rx);
  out.Set("rxSlot", static_cast<double>(e->rxSlot));
  out.Set("waitFd", e->waitFd);
  out.Set("inject", static_cast<double>(e->inject));
  out.Set("virtAddr", e->virtAddr);
  out.Set("provKey", e->provKey);
  out.Set("mrMode", static_cast<double>(mr));
  out.Set("fabric", info->fabric_attr->name ? info->fabric_attr->name : "");
  out.Set("addrFormat", static_cast<double>(info->addr_format));
  out.Set("dataProgress", info->domain_attr->data_progress == FI_PROGRESS_AUTO ? "auto" : "manual");
  out.Set("txSize", static_cast<double>(info->tx_attr->size));
  out.Set("iovLimit", static_cast<double>(info->tx_attr->iov_limit));
  out.Set("maxMsgSize", static_cast<double>(info->ep_attr->max_msg_size));
  out.Set("atomics", at);
  out.Set("context", e->ctx);
  out.Set("contexts", e->sep != nullptr ? contexts : 0);
  return out;
}

Napi::Value Close(const Napi::CallbackInfo& cb) {
  Ep* e;
  const int h = EpArg(cb, &e);
  if (h < 0) return cb.Env().Undefined();
  {
    std::lock_guard<std::mutex> g(g_lock);
    g_eps[h % kMaxEps] = nullptr;
  }
  Destroy(e);
  return cb.Env().Undefined();
}

/**
 * avInsert(h, name, ctx) -> the peer's handle (a small number the other calls
 * take). ctx: the peer's receive context of its scalable endpoint, or -1
 * where it has a plain endpoint. Throws where it cannot be inserted, or names
 * a context other than 0 and this endpoint's address vector cannot address contexts.
 */
Napi::Value AvInsert(const Napi::CallbackInfo& cb) {
  Ep* e;
  if (EpArg(cb, &e) < 0) return cb.Env().Undefined();
  Napi::Buffer<uint8_t> b = cb[1].As<Napi::Buffer<uint8_t>>();
  const int ctx = cb.Length() > 2 && cb[2].IsNumber() ? cb[2].As<Napi::Number>().Int32Value() : -1;
  if (ctx > 0 && (e->rxBits == 0 || ctx >= (1 << e->rxBits))) {
    ThrowFi(cb.Env(), "the peer is context " + std::to_string(ctx) + " of a scalable endpoint, which this endpoint cannot address", FI_EINVAL);
    return cb.Env().Undefined();
  }
  const std::string peer = PeerKey(reinterpret_cast<const char*>(b.Data()), b.Length(), ctx);
  bool open, closed;
  {
    std::lock_guard<std::mutex> g(g_lock);
    open = g_openNames.count(peer) != 0;
    closed = !open && g_closedNames.count(peer) != 0;
  }
  // An endpoint of this process that has closed is not inserted (the shm provider would map
  // its region, gone): its handle names nothing, and sends to it are refused (LocalPeerClosed).
  fi_addr_t a = FI_ADDR_NOTAVAIL;
  if (!closed) {
    const int r = e->sep != nullptr ? SepInsert(e, b.Data(), b.Length(), &a) : fi_av_insert(e->av, b.Data(), 1, &a, 0, nullptr);
    if (r != 1) { ThrowFi(cb.Env(), "fi_av_insert", r < 0 ? r : FI_EINVAL); return cb.Env().Undefined(); }
  }
  const bool local = open || closed;
  const size_t handle = e->dests.size();
  e->dests.push_back(e->rxBits > 0 && a != FI_ADDR_NOTAVAIL ? fi_rx_addr(a, ctx < 0 ? 0 : ctx, e->rxBits) : a);
  e->localPeers.resize(handle + 1);
  e->localPeers[handle] = local ? peer : std::string();
  return Napi::Number::New(cb.Env(), static_cast<double>(handle));
}

/** setEvents(h, events, hold): where poll writes its events, and the per-slot hold flags JavaScript sets (both kept referenced). */
Napi::Value SetEvents(const Napi::CallbackInfo& cb) {
  Ep* e;
  if (EpArg(cb, &e) < 0) return cb.Env().Undefined();
  Napi::Int32Array a = cb[1].As<Napi::Int32Array>();
  if (e->eventsRef) napi_delete_reference(e->env, e->eventsRef);
  napi_create_reference(cb.Env(), a, 1, &e->eventsRef);
  e->events = a.Data();
  e->eventCap = static_cast<uint32_t>(a.ElementLength() / kEventWords) - 1;
  Napi::Int32Array hold = cb[2].As<Napi::Int32Array>();
  if (hold.ElementLength() < e->rxCount) { Napi::TypeError::New(cb.Env(), "setEvents: one hold flag per receive slot").ThrowAsJavaScriptException(); return cb.Env().Undefined(); }
  if (e->holdRef) napi_delete_reference(e->env, e->holdRef);
  napi_create_reference(cb.Env(), hold, 1, &e->holdRef);
  e->hold = hold.Data();
  return cb.Env().Undefined();
}

/**
 * cloexec(): set FD_CLOEXEC on every descriptor of this process that lacks it
 * and was not open before libfabric first ran (its sockets, epoll and event
 * fds: a child process must not inherit them). Returns how many it set.
 */
Napi::Value Cloexec(const Napi::CallbackInfo& cb) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d != nullptr) {
    const int self = dirfd(d);
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const int fd = std::atoi(e->d_name);
      if (fd == self || fd <= 2 || g_keep.count(fd) != 0) continue;
      const int fl = fcntl(fd, F_GETFD);
      if (fl >= 0 && !(fl & FD_CLOEXEC) && fcntl(fd, F_SETFD, fl | FD_CLOEXEC) == 0) n++;
    }
    closedir(d);
  }
  return Napi::Number::New(cb.Env(), n);
}

/**
 * abandonAtClose(h): from now on, closing this endpoint (close, the process's
 * exit, its thread's environment going away) leaves the provider's objects
 * open instead of closing them. For a connection that may hold an operation
 * half done: libfabric 1.17's tcp provider, flushing a connection at close
 * while the response to a read (fi_read, and ofi_rxm's rendezvous reads) is
 * half received, completes that read's receive twice (it is both the current
 * receive and still queued; fixed in 1.18.0, commit a74ea0fcd), and ofi_rxm
 * reads the second, zeroed completion's NULL context: a crash inside fi_close
 * (src/rail/ofi/close-hazard.ts says where the rail asks for this).
 * A context of a scalable endpoint is parked as before (ParkContext).
 */
Napi::Value AbandonAtClose(const Napi::CallbackInfo& cb) {
  Ep* e;
  if (EpArg(cb, &e) < 0) return cb.Env().Undefined();
  e->abandon = true;
  return cb.Env().Undefined();
}

Napi::Value InFlight(const Napi::CallbackInfo& cb) {
  Ep* e;
  if (EpArg(cb, &e) < 0) return cb.Env().Undefined();
  return Napi::Number::New(cb.Env(), e->inFlight + static_cast<double>(e->pending.size() - e->pendingHead));
}

}  // namespace

void InitEp(Napi::Env env, Napi::Object exports) {
  exports.Set("open", Napi::Function::New(env, Open, "open"));
  exports.Set("close", Napi::Function::New(env, Close, "close"));
  exports.Set("avInsert", Napi::Function::New(env, AvInsert, "avInsert"));
  exports.Set("setEvents", Napi::Function::New(env, SetEvents, "setEvents"));
  exports.Set("cloexec", Napi::Function::New(env, Cloexec, "cloexec"));
  exports.Set("inFlight", Napi::Function::New(env, InFlight, "inFlight"));
  exports.Set("abandonAtClose", Napi::Function::New(env, AbandonAtClose, "abandonAtClose"));
}

}  // namespace ofi
